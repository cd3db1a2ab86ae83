"""`tlsbench bisect` around its search (run/bisect.py, cli/bisect.py) on a small git tree that
looks like mbedTLS, with fake builds (tests/unit/conftest.py) and an injected measurement that
reads each commit's figures from a file of its tree and makes its cost by function: the steps
it prints, the culprit's function diff against its parent from the stored costs, atomics as
the figure, skipped commits, the stored steps of an interrupted bisect, and every bad input
refused with exit 2 and nothing stored lost. tests/long/test_own_code.py bisects a real
mbedTLS history."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tlsbench import cli
from tlsbench.builds import localsource
from tlsbench.builds.build import Build, Builder
from tlsbench.builds.variants import Catalog
from tlsbench.core import costs
from tlsbench.core.errors import BuildError, UserError
from tlsbench.core.points import RunPoint
from tlsbench.run import bisect

GIT_ENV = {"GIT_AUTHOR_NAME": "Dev", "GIT_AUTHOR_EMAIL": "dev@example.org",
           "GIT_COMMITTER_NAME": "Dev", "GIT_COMMITTER_EMAIL": "dev@example.org",
           "GIT_AUTHOR_DATE": "2025-01-01T00:00:00Z",
           "GIT_COMMITTER_DATE": "2025-01-01T00:00:00Z"}  # fmt: skip
FIGURE = "handshake_1.3_rsa2048_server"
# The certificate set's digest the sessions see (a test changes it).
CREDENTIALS = ["credentials-1"]


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          env={**os.environ, **GIT_ENV}, check=True)  # fmt: skip
    return done.stdout.strip()


def commit(repo: Path, subject: str, cost: tuple[int, int] | None = None,
           broken: bool = False) -> str:  # fmt: skip
    if cost is not None:
        # The client's count beyond 1,000 is spent in one function of its own.
        (repo / "cost").write_text(f"{cost[0]} {cost[1]}\n")
    if broken:
        (repo / "BROKEN").write_text("does not compile\n")
    elif (repo / "BROKEN").exists():
        (repo / "BROKEN").unlink()
    (repo / "log").write_text((repo / "log").read_text() + subject + "\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", subject)
    return git(repo, "rev-parse", "HEAD")


def make_tree(root: Path, costs: list[tuple[int, int]], broken: frozenset[int] = frozenset()
              ) -> tuple[Path, list[str]]:  # fmt: skip
    """An mbedTLS-looking repository of len(costs) commits, commit i with figures costs[i]
    (client, server); the commits in `broken` do not build. Returns it and its commits."""
    repo = root / "mbedtls"
    (repo / "include" / "mbedtls").mkdir(parents=True)
    (repo / "include" / "mbedtls" / "ssl.h").write_text("/* ssl */\n")
    (repo / "include" / "mbedtls" / "build_info.h").write_text(
        '#define MBEDTLS_VERSION_STRING "3.6.6"\n'
    )
    (repo / "log").write_text("")
    git(repo, "init", "-q", "-b", "main")
    shas = [commit(repo, f"change {i}" if i else "release", cost, i in broken)
            for i, cost in enumerate(costs)]  # fmt: skip
    return repo, shas


def tree_file(build: Build, name: str) -> str | None:
    if build.variant.line.local is None:  # the null variant (the driver's declaration)
        return None
    snapshot = build.variant.line.local.snapshot()
    found = subprocess.run(["git", "-C", snapshot.path, "show", f"{snapshot.commit}:{name}"],
                           capture_output=True, text=True, check=False)  # fmt: skip
    return found.stdout if found.returncode == 0 else None


def side_costs(side: str, count: int) -> costs.SideCosts:
    """A side's cost by function: 1,000 instructions in the handshake step (with 2 atomic
    operations, 3 from 1,100 instructions on), the rest in the record layer, one handshake."""

    def function(name: str, source: str, instructions: int, atomics: int) -> costs.FunctionCost:
        group = costs.group_of(name, source)
        return costs.FunctionCost(name, source, "tlsbench-driver", group, instructions, atomics, 1)

    return costs.side_costs(side, 1, [
        function("mbedtls_ssl_handshake_step", "ssl_tls.c", min(count, 1000),
                 3 if count >= 1100 else 2),
        function("mbedtls_ssl_write_record", "ssl_msg.c", count - min(count, 1000), 0),
    ])  # fmt: skip


# What a measurement gives: counts per measure and side, each side's costs, why not.
Measured = tuple[dict[str, dict[str, float]], dict[str, costs.SideCosts], str]


class Measurer:
    """The injected measurement: a commit's figures from its `cost` file, with each side's
    cost by function to match; counts every commit it measures."""

    def __init__(self, interrupt_after: int | None = None) -> None:
        self.measured: list[str] = []
        self.interrupt_after = interrupt_after

    def __call__(self, point: RunPoint, build: Build, timeout: float) -> Measured:
        if self.interrupt_after is not None and len(self.measured) >= self.interrupt_after:
            raise KeyboardInterrupt
        self.measured.append(build.variant.line.local.snapshot().commit or "")  # type: ignore[union-attr]
        assert point.variant == build.variant.name and point.name == FIGURE
        client, server = (int(v) for v in (tree_file(build, "cost") or "").split())
        by_side = {"client": side_costs("client", client), "server": side_costs("server", server)}
        counts = {m: {side: float(getattr(c, m)) for side, c in by_side.items()}
                  for m in bisect.MEASURES}  # fmt: skip
        return counts, by_side, ""


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The state under a cache of the test's own; commits with a BROKEN file do not build."""
    monkeypatch.setenv("TLSBENCH_CACHE", str(tmp_path / "cache"))
    fake = Builder.build

    def build(self: Builder, variant):  # type: ignore[no-untyped-def]
        made = fake(self, variant)
        if tree_file(made, "BROKEN") is not None:
            raise BuildError("mbedtls: make failed: ssl_tls.c:12: error: expected ';'\nmore")
        return made

    # Set and put back by hand, not by monkeypatch: its undo runs after the fake builds'
    # own teardown, and would leave the fake in place for every later test of the process.
    Builder.build = build  # type: ignore[method-assign]
    monkeypatch.setattr(bisect, "credentials_of", lambda point: CREDENTIALS[0])
    localsource.forget_snapshots()
    yield tmp_path / "cache"
    Builder.build = fake  # type: ignore[method-assign]


def session(repo: Path, good: str, bad: str, measurer: Measurer, figure: str | None = None,
            threshold: str | None = None) -> tuple[bisect.Session, list[str]]:  # fmt: skip
    catalog = Catalog()
    request = bisect.check_request(f"mbedtls@{repo}#{good}", f"mbedtls@{repo}#{bad}",
                                   figure, threshold, catalog)  # fmt: skip
    lines: list[str] = []
    return bisect.Session(request, catalog, Builder(quiet=True), 60, lines.append,
                          run=measurer), lines  # fmt: skip


# Ten commits: the client's figure moves at commit 6 (+10 %); commit 3 changes it by 0.5 %.
COSTS = [(1000, 2000)] * 3 + [(1005, 2000)] * 3 + [(1100, 2000)] * 4


def test_bisect_names_the_first_commit_past_the_threshold(tmp_path: Path) -> None:
    repo, shas = make_tree(tmp_path, COSTS)
    measurer = Measurer()
    run, lines = session(repo, "main~9", "main", measurer)
    result = run.run(bisect.function_diff)
    assert result.exit_status == 0
    assert result.culprit is not None and result.culprit.sha == shas[6]
    assert result.culprit.subject == "change 6"
    assert result.parent is not None and result.parent.sha == shas[5]
    # The function diff of the parent's stored costs and the culprit's: the one function
    # that moved, named with its counts before and after and its group, the groups after.
    assert result.changes == [
        "client: 1,005 -> 1,100 instructions per operation",
        "  +95  mbedtls_ssl_write_record (TLS state machine): 5 -> 100",
        "  groups: TLS state machine +95",
        "server: 2,000 -> 2,000 instructions per operation",
    ], result.changes
    # Every step printed: commit, subject, figures, verdict; GOOD first, as the reference.
    assert lines[0].startswith(
        f"GOOD {shas[0][:12]} release: client 1,000, server 2,000: reference"
    )
    assert any(line.startswith("[1] ") and "change " in line for line in lines)
    culprit_line = next(line for line in lines if line.split()[1] == shas[6][:12])
    assert "client 1,100 (+100, +10.00%), server 2,000 (+0, +0.00%): bad" in culprit_line
    # The bound: N = 10 commits with GOOD, at most ceil(log2 10) + 1 = 5 builds.
    assert len(measurer.measured) == result.builds <= 5
    assert measurer.measured[0] == shas[0]  # GOOD first
    text = "\n".join(bisect.summary(result))
    past = "first commit past the threshold (1.00% of GOOD's figure, either way)"
    assert f"{past}: {shas[6][:12]} change 6" in text
    assert "client instructions 1,005 -> 1,100 (+95, +9.45%)" in text
    assert "ceil(log2 10) + 1 = 5" in text


def test_a_smaller_threshold_finds_the_smaller_move(tmp_path: Path) -> None:
    repo, shas = make_tree(tmp_path, COSTS)
    run, _ = session(repo, "main~9", "main", Measurer(), threshold="0.2%")
    result = run.run(None)
    assert result.culprit is not None and result.culprit.sha == shas[3]
    assert result.changes == [] and result.changes_missing == "no function diff asked for"


def test_one_side_as_the_figure(tmp_path: Path) -> None:
    """The server's figure never moves: no commit crosses, exit 1."""
    repo, _ = make_tree(tmp_path, COSTS)
    run, lines = session(repo, "main~9", "main", Measurer(), figure=f"{FIGURE}:server")
    result = run.run(None)
    assert result.exit_status == 1 and result.culprit is None
    assert "client" not in "\n".join(lines)
    assert "no commit moved past the threshold" in "\n".join(bisect.summary(result))


def test_atomics_as_the_figure(tmp_path: Path) -> None:
    """The client's atomics go from 2 to 3 at commit 6; the 0.5 % move of its instructions at
    commit 3 is none of theirs. The diff ranks the functions by atomics."""
    repo, shas = make_tree(tmp_path, COSTS)
    run, lines = session(repo, "main~9", "main", Measurer(), figure=f"{FIGURE}:client:atomics",
                         threshold="0.2%")  # fmt: skip
    result = run.run(bisect.function_diff)
    assert result.culprit is not None and result.culprit.sha == shas[6]
    assert lines[0].endswith("release: client 2: reference")
    assert result.changes[:2] == [
        "client: 2 -> 3 atomics per operation",
        "  +1  mbedtls_ssl_handshake_step (TLS state machine): 2 -> 3",
    ]
    assert "client atomics 2 -> 3 (+1, +50.00%)" in "\n".join(bisect.summary(result))


def test_an_absolute_threshold(tmp_path: Path) -> None:
    repo, shas = make_tree(tmp_path, COSTS)
    run, _ = session(repo, "main~9", "main", Measurer(), figure=f"{FIGURE}:client",
                     threshold="1,050")  # fmt: skip
    result = run.run(None)
    assert result.culprit is not None and result.culprit.sha == shas[6]


def test_a_commit_that_does_not_build_is_skipped_with_the_reason(tmp_path: Path) -> None:
    # Commit 8 (the second question) does not build: its neighbour is asked instead.
    repo, shas = make_tree(tmp_path, COSTS, broken=frozenset({8}))
    measurer = Measurer()
    run, lines = session(repo, "main~9", "main", measurer)
    result = run.run(None)
    assert result.culprit is not None and result.culprit.sha == shas[6]
    skipped = next(line for line in lines if line.split()[1] == shas[8][:12])
    assert skipped.startswith("[2] ") and skipped.endswith(
        "skipped: does not build: mbedtls: make failed: ssl_tls.c:12: error: expected ';': skip"
    )
    assert shas[8] not in measurer.measured  # its build failed: nothing ran
    assert result.builds == 5  # GOOD and four questions, the skipped one among them


def test_skips_that_hide_the_culprit_are_said(tmp_path: Path) -> None:
    """The move is at commit 5, and 4, the only commit before it, does not build: it is 4
    or 5, and both are named (as git bisect says), exit 1."""
    repo, shas = make_tree(tmp_path, [(1000, 2000)] * 5 + [(1100, 2000)] * 5,
                           broken=frozenset({4}))  # fmt: skip
    run, _ = session(repo, "main~9", "main", Measurer())
    result = run.run(None)
    assert result.culprit is None and result.exit_status == 1
    assert [s.sha for s in result.candidates] == [shas[4], shas[5]]
    text = "\n".join(bisect.summary(result))
    assert "skipped commits hide which commit moved first; it is one of:" in text
    assert f"{shas[4][:12]} change 4 (skipped: does not build: mbedtls: make failed" in text


def test_an_interrupted_bisect_resumes_from_its_stored_steps(tmp_path: Path) -> None:
    repo, shas = make_tree(tmp_path, COSTS)
    first = Measurer(interrupt_after=3)
    run, _ = session(repo, "main~9", "main", first)
    with pytest.raises(KeyboardInterrupt):
        run.run(None)
    assert len(first.measured) == 3
    stored = json.loads(run.state.path.read_text())
    assert sorted(stored["steps"]) == sorted(first.measured)
    again = Measurer()
    run2, lines = session(repo, "main~9", "main", again)
    result = run2.run(None)
    assert result.culprit is not None and result.culprit.sha == shas[6]
    assert not set(again.measured) & set(first.measured), "a stored step was measured again"
    assert result.builds == len(again.measured)
    assert lines[0].endswith("reference (stored)")
    assert sum(line.endswith("(stored)") for line in lines) == 3
    # An overlapping range reuses them too: nothing new to measure.
    third = Measurer()
    run3, _ = session(repo, "main~9", "main", third)
    assert run3.run(None).culprit.sha == shas[6]  # type: ignore[union-attr]
    assert third.measured == []


def test_a_step_measured_with_other_credentials_is_measured_again(tmp_path: Path) -> None:
    repo, _ = make_tree(tmp_path, COSTS)
    first = Measurer()
    session(repo, "main~9", "main", first)[0].run(None)
    CREDENTIALS[0] = "credentials-2"
    try:
        again = Measurer()
        result = session(repo, "main~9", "main", again)[0].run(None)
    finally:
        CREDENTIALS[0] = "credentials-1"
    assert again.measured == first.measured and result.builds == len(first.measured)


def test_the_state_is_never_half_written(tmp_path: Path) -> None:
    repo, _ = make_tree(tmp_path, COSTS)
    run, _ = session(repo, "main~9", "main", Measurer())
    run.run(None)
    folder = run.state.path.parent
    assert not [p for p in folder.iterdir() if ".tmp" in p.name]
    for name in json.loads(run.state.path.read_text())["steps"].values():
        for packed in name["costs"].values():
            assert (run.state.files / packed).exists()


def test_good_past_an_absolute_threshold_is_refused(tmp_path: Path) -> None:
    repo, _ = make_tree(tmp_path, COSTS)
    run, _ = session(repo, "main~9", "main", Measurer(), figure=f"{FIGURE}:client",
                     threshold="900")  # fmt: skip
    with pytest.raises(UserError, match=r"GOOD is already past the threshold: client 1,000 "
                       r"instructions, above 900") as caught:  # fmt: skip
        run.run(None)
    assert caught.value.exit_code == 2


# -- the command line ------------------------------------------------------------------------


def tlsbench(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(["bisect", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def measured(monkeypatch: pytest.MonkeyPatch) -> Measurer:
    measurer = Measurer()
    monkeypatch.setattr(bisect, "measure", measurer)
    return measurer


def test_the_command_prints_the_steps_and_exits_0(tmp_path: Path, capsys, measured) -> None:
    repo, shas = make_tree(tmp_path, COSTS)
    (repo / "log").write_text("an edit not committed\n")
    code, out, err = tlsbench(capsys, f"mbedtls@{repo}#main~9", f"mbedtls@{repo}#main", "--quiet")
    assert code == 0, err
    assert out.startswith(f"note: {repo} has uncommitted changes; bisect builds the commits "
                          "as committed, not the work tree\n")  # fmt: skip
    assert f"bisect {FIGURE} (client, server instructions per operation) of mbedtls@{repo}, " \
        f"10 commits from GOOD {shas[0][:12]} to BAD {shas[9][:12]}" in out  # fmt: skip
    past = "first commit past the threshold (1.00% of GOOD's figure, either way)"
    assert f"{past}: {shas[6][:12]} change 6" in out
    code, out, err = tlsbench(capsys, f"mbedtls@{repo}#main~9", f"mbedtls@{repo}#main",
                              "--json", "--quiet")  # fmt: skip
    assert code == 0
    found = json.loads(out)
    assert found["culprit"]["sha"] == shas[6] and found["parent"]["sha"] == shas[5]
    assert found["commits"] == 10 and found["figure"] == FIGURE


def test_no_commit_past_the_threshold_exits_1(tmp_path: Path, capsys, measured) -> None:
    repo, _ = make_tree(tmp_path, [(1000, 2000)] * 6)
    code, out, _ = tlsbench(capsys, f"mbedtls@{repo}#main~5", f"mbedtls@{repo}#main")
    assert code == 1
    assert "no commit moved past the threshold (1.00% of GOOD's figure, either way)" in out


@pytest.mark.parametrize(
    ("good", "bad", "extra", "message"),
    [
        (
            "mbedtls@{repo}#main",
            "mbedtls@{repo}#main~3",
            [],
            r"GOOD \(main, \w{12}\) is not an ancestor of BAD \(main~3, \w{12}\) \(BAD is an "
            r"ancestor of GOOD: swap them\)",
        ),
        ("mbedtls@{repo}#main", "mbedtls@{repo}#main", [], "are the same commit"),
        (
            "wolfssl@{repo}#main~3",
            "wolfssl@{repo}#main",
            [],
            "looks like a mbedtls tree, not wolfssl",
        ),
        ("mbedtls@{repo}", "mbedtls@{repo}#main", [], "names the tree as it is, not a commit"),
        ("mbedtls-3.6.6", "mbedtls@{repo}#main", [], "name a commit of your git tree"),
        (
            "mbedtls@{repo}#main~3",
            "mbedtls@{repo}#main:records-4096",
            [],
            "GOOD and BAD have other build options",
        ),
        ("mbedtls@{repo}#nosuch", "mbedtls@{repo}#main", [], "has no commit 'nosuch'"),
        (
            "mbedtls@{repo}#main~3",
            "mbedtls@{repo}#main",
            ["--figure", "handshake"],
            r"unknown figure 'handshake'; .*: handshake_1.3_rsa2048_server, "
            r"handshake_1.3_rsa2048_server:client, .*records_1.3_rsa2048_server_1024B:server",
        ),
        (
            "mbedtls@{repo}#main~3",
            "mbedtls@{repo}#main",
            ["--threshold", "1.5"],
            r"--threshold '1.5': write a fraction .*; 1.5 is neither "
            r"\(150% is a fraction above 1\)",
        ),
        ("mbedtls@{repo}#main~3", "mbedtls@{repo}#main", ["--threshold=-1%"], "above 0"),
        (
            "mbedtls@{repo}#main~3",
            "mbedtls@{repo}#main",
            ["--threshold", "lots"],
            "write a fraction",
        ),
        (
            "mbedtls@{repo}#main~3:armhf",
            "mbedtls@{repo}#main:armhf",
            [],
            "bisect measures instructions, and instruction mode runs valgrind on this machine's "
            "code; .* runs under qemu-user",
        ),
        (
            "mbedtls@{repo}#main~3:cortex-m4",
            "mbedtls@{repo}#main:cortex-m4",
            [],
            r"bisect measures instructions, and .*:cortex-m4 is a firmware image: its "
            r"instructions are counted by QEMU",
        ),
    ],
)
def test_bad_input_exits_2_and_loses_nothing(
    tmp_path: Path, capsys, measured, good: str, bad: str, extra: list[str], message: str
) -> None:
    repo, _ = make_tree(tmp_path, COSTS)
    # A bisect that went well, whose stored steps must survive the bad requests.
    code, _, _ = tlsbench(capsys, f"mbedtls@{repo}#main~9", f"mbedtls@{repo}#main")
    assert code == 0
    (state,) = (tmp_path / "cache" / "bisect").glob("*.json")
    before = state.read_bytes()
    code, out, err = tlsbench(capsys, good.format(repo=repo), bad.format(repo=repo), *extra)
    assert code == 2, out + err
    assert err.startswith("tlsbench: error: ") and "Traceback" not in err
    assert __import__("re").search(message, err), err
    assert state.read_bytes() == before


def test_a_tree_outside_git(tmp_path: Path, capsys, measured) -> None:
    plain = tmp_path / "plain"
    (plain / "include" / "mbedtls").mkdir(parents=True)
    (plain / "include" / "mbedtls" / "ssl.h").write_text("")
    code, _, err = tlsbench(capsys, f"mbedtls@{plain}#a", f"mbedtls@{plain}#b")
    assert code == 2 and "is not in a git repository" in err


def test_the_library_must_be_there_at_both_ends(tmp_path: Path, capsys, measured) -> None:
    """A range whose BAD no longer holds the library named."""
    repo, _ = make_tree(tmp_path, COSTS[:3])
    git(repo, "rm", "-qr", "include")
    git(repo, "commit", "-qm", "move everything")
    code, _, err = tlsbench(capsys, f"mbedtls@{repo}#main~3", f"mbedtls@{repo}#main")
    assert code == 2
    assert "BAD (main): " in err and "holds no library tlsbench knows at " in err
    assert err.rstrip().endswith("not mbedtls")


def test_a_commit_in_the_middle_without_the_library_is_skipped(tmp_path: Path) -> None:
    repo, shas = make_tree(tmp_path, COSTS)
    # Rewrite commit 8 (the second question) so that it holds no mbedTLS tree.
    git(repo, "checkout", "-q", shas[7])
    git(repo, "rm", "-q", "include/mbedtls/ssl.h")
    git(repo, "commit", "-qm", "change 8 (ssl.h lost)")
    git(repo, "checkout", "-q", shas[8], "--", "cost")
    git(repo, "add", "-A")
    git(repo, "checkout", "-q", shas[9], "--", ".")
    git(repo, "commit", "-qam", "change 9 (ssl.h back)")
    git(repo, "branch", "-qf", "main", "HEAD")
    run, lines = session(repo, "main~9", "main", Measurer())
    result = run.run(None)
    assert result.culprit is not None and result.culprit.sha == shas[6]
    assert any(
        "skipped: not a mbedtls tree here: no tree of a library tlsbench knows: skip" in line
        for line in lines
    ), lines
