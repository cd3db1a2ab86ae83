"""Every command the README's tables name and every command a docs page shows with its
output runs here as a user types it (tests/documented_commands.py says how each is bounded);
those that build firmware or a library tree run in tests/long/test_fit_as_written.py.
Builds are the fake ones of the unit tier: nothing here builds a library."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from documented_commands import Documented, documented, how_to_run, shown_output
from tlsbench.cli import main, parser

UNIT = [doc for doc in documented() if how_to_run(doc.written)[0] == "unit"]
# A small experiment of the user's own (`./tlsbench run my.toml`), run twice to give
# `report`, `compare A B`, `runs` and `run --resume RUN` a store to read.
MY_TOML = """\
question = "A first look at record latency"
repetitions = 1

[defaults]
scenario = "records"
iterations = 20
warmup = 2

[[matrix]]
variant = ["mbedtls-3.6.6"]
"""
# The file own-code.md's refused build names: a record size the feature says otherwise.
MY_CONFIG = "#define MBEDTLS_SSL_IN_CONTENT_LEN 2048\n"


def test_every_documented_command_has_a_way_to_run() -> None:
    """how_to_run() raises for a command it does not know; the README's own commands are
    all found (the tables were read)."""
    every = documented()
    for doc in every:
        how_to_run(doc.written)
    written = {doc.written for doc in every}
    assert {"run quick", "fit --ram 64K --flash 256K --core m4", "report",
            "compare A B", "runs"} <= written  # fmt: skip
    assert any(doc.shown_with_output for doc in every)


@pytest.mark.parametrize("doc", UNIT, ids=lambda doc: doc.id)
def test_the_command_runs_as_written(
    doc: Documented,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TLSBENCH_DB", raising=False)
    (tmp_path / "my.toml").write_text(MY_TOML)
    (tmp_path / "boards").mkdir()
    (tmp_path / "boards" / "my_config.h").write_text(MY_CONFIG)
    _, argv = how_to_run(doc.written)
    if argv[0] in ("report", "compare", "runs", "migrate") or "--resume" in argv:
        for _ in range(2):
            assert main(["run", "my.toml"]) == 0
        capsys.readouterr()
    if argv[0] == "VERB":
        action = next(a for a in parser()._actions
                      if isinstance(a, argparse._SubParsersAction))  # fmt: skip
        verbs = sorted(action.choices)
        assert len(verbs) > 10
        for verb in verbs:
            with pytest.raises(SystemExit) as done:
                main([verb, *argv[1:]])
            assert done.value.code == 0, verb
        return
    status = main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    if not doc.shown_with_output or argv[0] == "run":
        assert status == 0, f"tlsbench {' '.join(argv)}: exit {status}\n{err}"
        return
    # The page's output, as it shows it (its folder written /src).
    shown = shown_output(doc)
    printed = (out + err).replace(str(tmp_path), "/src").splitlines()
    assert printed == shown, f"tlsbench {' '.join(argv)} printed:\n" + "\n".join(printed)
    assert status == (2 if shown[0].startswith("tlsbench: error:") else 0)
