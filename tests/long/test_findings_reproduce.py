"""Every finding of the interop matrix (findings/findings.toml) still holds: its reproduction
with the libraries' own programs still prints what it expects, and its interop point still
fails as it says, with the report naming the finding."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tlsbench.core import paths
from tlsbench.core.store import Store
from tlsbench.peers import findings
from tlsbench.report import load_run

REGISTRY = findings.load()


@pytest.mark.parametrize("finding", REGISTRY, ids=lambda f: f.id)
def test_a_finding_still_reproduces_with_the_libraries_own_programs(
    finding: findings.Finding,
) -> None:
    result = findings.reproduce(finding)
    assert result.reproduced, (
        f"finding {finding.id} no longer reproduces: `{finding.reproduce}` did not print "
        f"{result.missing} (exit {result.exit_code}); fix the entry or remove it.\n"
        f"{result.output[-3000:]}"
    )


@pytest.mark.parametrize("finding", REGISTRY, ids=lambda f: f.id)
def test_a_finding_still_fails_its_interop_point_and_the_report_says_which(
    finding: findings.Finding, tmp_path: Path
) -> None:
    variant, options = finding.point()
    lines = "".join(f"{key} = [{json.dumps(value)}]\n" for key, value in options.items())
    experiment = tmp_path / "finding.toml"
    experiment.write_text(
        'question = "Does the finding still show?"\nrepetitions = 1\ntimeout = 60\n'
        '[defaults]\nscenario = "interop"\niterations = 2\nwarmup = 1\n'
        f'[[matrix]]\nvariant = ["{variant}"]\n{lines}'
    )
    db = tmp_path / "r.db"
    proc = subprocess.run([str(paths.REPO / "tlsbench"), "run", str(experiment), "--db", str(db)],
                          capture_output=True, text=True, check=False, timeout=1200)  # fmt: skip
    assert proc.returncode == 1, proc.stderr  # a failed point
    model = load_run(Store(db))
    [row] = model.interop
    assert row.result == "failed" and row.finding == finding.id, (row.detail, row.verdict)
    report = subprocess.run([str(paths.REPO / "tlsbench"), "report", "--db", str(db),
                             "--format", "md"], capture_output=True, text=True,
                            check=False).stdout  # fmt: skip
    assert "✗ finding" in report and finding.reproduce in report


# ------------------------------------------------------------------------- matching
