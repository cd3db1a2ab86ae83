"""The command line as users meet it: help written for them, errors that say what to do."""

from __future__ import annotations

from pathlib import Path

import pytest

from drivers import tlsbench
from tlsbench.cli import parser

VERBS = sorted(parser()._subparsers._group_actions[0].choices)  # type: ignore[union-attr]


@pytest.mark.parametrize("verb", VERBS)
def test_every_verb_explains_itself_and_its_defaults(verb: str) -> None:
    proc = tlsbench(verb, "--help")
    assert proc.returncode == 0
    usage, _, rest = proc.stdout.partition("\n\n")
    description = rest.split("\n\n")[0]
    assert len(description.split()) >= 5, (verb, description)  # a sentence, not a fragment
    if "--db" in usage:
        assert "default results/tlsbench.db" in " ".join(proc.stdout.split())


@pytest.mark.parametrize(
    "args, message",
    [
        (["run", "--repetitions", "0"], "--repetitions: 0 is outside 1..1000"),
        (["run", "--repetitions", "x"], "--repetitions: 'x' is not a whole number"),
        (["run", "--timeout", "-1"], "--timeout: -1 is outside 0..86400 seconds"),
    ],
)
def test_numeric_options_are_named_in_their_errors(args: list[str], message: str) -> None:
    proc = tlsbench(*args)
    assert proc.returncode == 2
    assert message in proc.stderr


def test_a_report_out_that_is_a_directory_or_unwritable_is_bad_input(tmp_path: Path) -> None:
    from tlsbench.core.store import Store

    store = Store(tmp_path / "r.db")
    store.finish_run(store.new_run("e", "q", "time", 1, {}, "", "c"), "complete")
    store.close()
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    for out, message in ((tmp_path, "is a directory; give a file name"),
                         (blocked / "report.md", "cannot write the report there")):  # fmt: skip
        proc = tlsbench("report", "--db", str(tmp_path / "r.db"), "--out", str(out))
        assert proc.returncode == 2, proc.stderr
        assert message in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr and "Errno" not in proc.stderr


def test_doctor_never_prints_none() -> None:
    proc = tlsbench("doctor")
    assert proc.returncode in (0, 1), proc.stderr  # 1: something is missing, said so
    assert "None" not in proc.stdout and "Traceback" not in proc.stderr
    assert "governor" in proc.stdout and "turbo" in proc.stdout
