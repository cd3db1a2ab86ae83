"""The documented commands that build firmware, run as a user types them, narrowed to one
candidate (tests/documented_commands.py): `fit` as the README's question table and
docs/embedded.md write it. What they print is what docs/embedded.md shows: the budget, the
job and the candidate's row, figure for figure. (`ab` on a clone the test makes is in
test_own_code.py; the commands that build nothing are in tests/unit.)"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from documented_commands import Documented, documented, how_to_run, shown_output
from tlsbench.builds import arches, firmware
from tlsbench.builds.sources import Sources
from tlsbench.core import paths
from tlsbench.embedded import cycles, samecode

pytestmark = pytest.mark.skipif(
    bool(arches.missing_tools("cortex-m4")),
    reason=f"missing {arches.missing_tools('cortex-m4')} (make deps installs them)",
)

LONG = [doc for doc in documented() if how_to_run(doc.written)[0] == "long"]
FIT = [doc for doc in LONG if doc.written.startswith("fit ")]


def test_every_long_command_is_run_somewhere() -> None:
    """fit, cortex-m, calibrate and model-check here, ab and bisect in test_own_code.py, drive
    in tests/libraries/test_threads.py, explain in tests/libraries/test_explain.py: nothing
    else needs a build."""
    verbs = {how_to_run(doc.written)[1][0] for doc in LONG}
    assert verbs == {"fit", "ab", "bisect", "cortex-m", "drive", "calibrate", "model-check",
                     "explain"}  # fmt: skip
    assert any(doc.page == "README.md" for doc in FIT)


@pytest.mark.parametrize("doc", FIT, ids=lambda doc: doc.id)
def test_fit_runs_as_written_and_prints_what_the_page_shows(
    doc: Documented, tmp_path: Path
) -> None:
    _, argv = how_to_run(doc.written)
    done = subprocess.run([str(paths.REPO / "tlsbench"), *argv], cwd=tmp_path,
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert done.returncode == 0, f"tlsbench {' '.join(argv)}: exit {done.returncode}\n{done.stderr}"
    printed = done.stdout.splitlines()
    assert (tmp_path / "results").is_dir()  # the plot, where the page says
    if not doc.shown_with_output:
        return
    shown = shown_output(doc)
    for heading in ("Budget:", "Job:"):
        ours = [line for line in printed if line.startswith(heading)]
        theirs = [line for line in shown if line.startswith(heading)]
        assert ours == theirs or not theirs, f"{heading}\n{ours}\n{theirs}"
    rows = [line for line in printed if line.startswith("wolfssl-5.7.2 ")]
    assert rows, done.stdout
    for row in rows:
        assert row in shown, f"{doc.page} does not show the row fit prints:\n{row}"


CORTEX_M = [doc for doc in LONG if doc.written.startswith("cortex-m ")]


@pytest.mark.parametrize("doc", CORTEX_M, ids=lambda doc: doc.id)
def test_cortex_m_runs_as_written_and_prints_what_the_page_shows(
    doc: Documented, tmp_path: Path
) -> None:
    """The config file a page's command names is the pinned mbedTLS archive's own
    (configs/), or the repository's (a path under docs/, such as docs/examples/esp-idf),
    copied where the command says; the page's folder is written /src."""
    _, argv = how_to_run(doc.written)
    for name in re.findall(r"config=([\w.-]+\.h)", doc.written):
        shutil.copy(Sources().source_dir("mbedtls-3.6.6") / "configs" / name, tmp_path / name)
    for name in re.findall(r"config=(docs/[\w./-]+)", doc.written):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(paths.REPO / name, tmp_path / name)
    done = subprocess.run([str(paths.REPO / "tlsbench"), *argv], cwd=tmp_path,
                          capture_output=True, text=True, check=False)  # fmt: skip
    shown = [line.rstrip() for line in shown_output(doc)]  # a table's padding: not shown
    printed = (done.stdout + done.stderr).replace(str(tmp_path), "/src").splitlines()
    printed = [line.rstrip() for line in printed if "the platform's macro replaces" not in line]
    assert printed == shown, "\n".join(printed)
    assert done.returncode == (2 if shown[0].startswith("tlsbench: error:") else 0)


CALIBRATE = [doc for doc in LONG if doc.written.startswith("calibrate")]


@pytest.mark.parametrize("doc", CALIBRATE, ids=lambda doc: doc.id)
def test_calibrate_runs_as_written_and_agrees_with_the_saved_calibration(
    doc: Documented, tmp_path: Path
) -> None:
    """What the page shows is what `calibrate` prints (its counts are exact), and the saved
    calibration.json is what the same run derives: nothing projects with a stale range."""
    _, argv = how_to_run(doc.written)
    done = subprocess.run([str(paths.REPO / "tlsbench"), *argv], cwd=tmp_path,
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    shown = shown_output(doc)
    printed = done.stdout.splitlines()
    summary = printed[printed.index(shown[0]) :]
    assert summary == shown, "\n".join(summary)
    as_json = subprocess.run([str(paths.REPO / "tlsbench"), "calibrate", "--json", "--quiet"],
                             cwd=tmp_path, capture_output=True, text=True, check=True)  # fmt: skip
    assert json.loads(as_json.stdout) == json.loads(firmware.CALIBRATION_FILE.read_text())


MODEL_CHECK = [doc for doc in LONG if doc.written.startswith("model-check")]


@pytest.mark.parametrize("doc", MODEL_CHECK, ids=lambda doc: doc.id)
def test_model_check_runs_as_written_and_agrees_with_the_saved_check(
    doc: Documented, tmp_path: Path
) -> None:
    """What the page shows is what `model-check` prints (the model's counts are exact), and the
    saved model_check.json, which every projected figure quotes, is what the same run finds."""
    _, argv = how_to_run(doc.written)
    done = subprocess.run([str(paths.REPO / "tlsbench"), *argv], cwd=tmp_path,
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == shown_output(doc), done.stdout
    saved = json.loads(cycles.MODEL_CHECK_FILE.read_text())
    fresh = tmp_path / "model_check.json"
    as_json = subprocess.run([str(paths.REPO / "tlsbench"), "model-check", "--json"],
                             cwd=tmp_path, capture_output=True, text=True, check=True)  # fmt: skip
    samecode.write(json.loads(as_json.stdout)["points"], fresh)
    assert json.loads(fresh.read_text()) == saved
