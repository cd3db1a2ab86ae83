"""`tlsbench ab` verdicts, `compare` across variants, and the BMF / github-action-benchmark
exports, on stores written through the store's own API with the shape the runner stores
(no driver involved; test_own_code.py runs real builds)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from drivers import tlsbench
from tlsbench.core.errors import UserError
from tlsbench.core.store import Store
from tlsbench.report import export, load_run
from tlsbench.reportkit import ab
from tlsbench.reportkit.compare import compare_runs

ENV = {"cpu": {"model": "Test CPU"}, "cpu_flags": "aes"}
BASE, CANDIDATE = "mbedtls@/src/mbedtls#main", "mbedtls@/src/mbedtls#HEAD"


def _output(rng: np.random.Generator, *, peak: int, instructions: float, time_ns: float,
            stack: int = 4000, wire: int = 1449) -> dict[str, Any]:  # fmt: skip
    """One repetition of a handshake point as the runner stores it (heap run merged)."""
    side = {"start": 0, "peak": peak, "retained": peak - 10000, "peak_minus_start": peak,
            "retained_minus_start": peak - 10000, "conn_peak": peak - 5000,
            "conn_retained": peak - 12000, "stack": stack, "handshake_allocs": 6620}  # fmt: skip
    return {
        "summary": {
            "client_cpu_ns": {"unit": "ns"},
            "server_cpu_ns": {"unit": "ns"},
            "client_instructions": {"unit": "instructions"},
        },
        "samples": {
            "client_cpu_ns": [float(x) for x in rng.normal(time_ns, 5, 20)],
            "server_cpu_ns": [float(x) for x in rng.normal(2000, 5, 20)],
            "client_instructions": [instructions],
        },
        "heap": {"client": side, "server": dict(side)},
        "wire": {
            "full": {
                "client": {"bytes_sent": 251},
                "server": {"bytes_sent": wire},
                "round_trips": 1,
            }
        },
    }


def _ab_run(store: Store, candidate: dict[str, Any], *, reps: int = 4,
            base: dict[str, Any] | None = None, noisy: float = 0.0,
            candidate_status: str = "ok") -> int:  # fmt: skip
    """One run holding both variants' handshake point (and a code-size point)."""
    rng = np.random.default_rng(7)
    run = store.new_run("ab", "?", "time", reps, ENV, "# ab\n", "c0")
    store.add_points(run, [
        {"name": name, "variant": variant, "library": "mbedtls", "scenario": scenario,
         "params": {}, "build": {"cache_key": variant, "source": {"kind": "local-commit",
                                 "path": "/src/mbedtls", "rev": variant[-4:], "commit": "ab" * 20,
                                 "tree": "cd" * 20, "dirty": False}}}
        for variant in (BASE, CANDIDATE)
        for name, scenario in (("handshake_1.3", "handshake"), ("code-size", "code-size"))
    ])  # fmt: skip
    points = {(p.variant, p.name): p for p in store.points(run)}
    settings = {BASE: base or {}, CANDIDATE: candidate}
    for rep in range(reps):
        for variant, own in settings.items():
            figures = {"peak": 62846, "instructions": 18_000_000.0, "time_ns": 1000.0, **own}
            figures["instructions"] *= 1 + noisy * rng.uniform(-1, 1)
            code = figures.pop("code", 0)
            status = candidate_status if variant == CANDIDATE else "ok"
            point = points[(variant, "handshake_1.3")]
            if status == "ok":
                store.add_result(point.id, rep, "ok", 0, None, 0.1, "t",
                                 _output(rng, **figures), "")  # fmt: skip
            else:
                message = {"error": {"message": "no such group"}}
                store.add_result(point.id, rep, status, 3 if status == "unsupported" else 5,
                                 None, 0.1, "t", message, "")  # fmt: skip
            total = 780577 + code
            rows = [{"role": "client", "target": "x86-64", "text": total, "data": 0, "bss": 0,
                     "total": total}]  # fmt: skip
            store.add_result(points[(variant, "code-size")].id, rep, "ok", 0, None, 0.1, "t",
                             {"code_size": rows}, "")  # fmt: skip
    store.finish_run(run, "complete")
    return run


def _verdicts(outcome: ab.Outcome) -> dict[str, str]:
    return {f"{v.point} {v.figure}": v.verdict for v in outcome.verdicts}


def test_deterministic_figures_are_equal_or_changed_by_how_much() -> None:
    assert ab.deterministic_verdict([100] * 4, [100] * 4, 0.0) == (
        ab.NO_CHANGE, "equal (identical in every repetition)")  # fmt: skip
    assert ab.deterministic_verdict([100] * 4, [101] * 4, 0.0)[0] == ab.REGRESSION
    assert ab.deterministic_verdict([100] * 4, [99] * 4, 0.0)[0] == ab.IMPROVEMENT
    verdict, how = ab.deterministic_verdict([100] * 4, [101] * 4, 0.02)
    assert (verdict, how) == (ab.NO_CHANGE, "changed by +1 (+1.00%), within the threshold")
    assert ab.deterministic_verdict([100] * 4, [99] * 4, 0.0, higher_is_better=True)[0] \
        == ab.REGRESSION  # fmt: skip
    # A figure from 0 (no allocation before): any allocation is a change.
    assert ab.deterministic_verdict([0] * 4, [1] * 4, 0.5)[0] == ab.REGRESSION


def test_a_change_within_the_known_jitter_of_a_kind_is_no_change() -> None:
    # mbedTLS's allocations per handshake move by one between runs of one code.
    verdict, how = ab.deterministic_verdict([6620] * 4, [6621] * 4, 0.0, jitter=1.0,
                                            jitter_when_constant=True)  # fmt: skip
    assert (verdict, how) == (ab.NO_CHANGE, "changed by +1 (+0.02%), within the run-to-run "
                              "jitter of 1")  # fmt: skip
    assert ab.deterministic_verdict([6620] * 4, [6622] * 4, 0.0, jitter=1.0,
                                    jitter_when_constant=True)[0] == ab.REGRESSION  # fmt: skip
    # A stack depth constant on each side that changed moved for real.
    assert ab.deterministic_verdict([3720] * 4, [3768] * 4, 0.0, jitter=64.0)[0] == ab.REGRESSION
    # mbedTLS's client stack: 32 bytes apart between two names of one commit, every time.
    noisy = ab.deterministic_verdict([4184, 4200, 4200, 4200], [4216, 4232, 4232, 4232], 0.0,
                                     jitter=64.0)  # fmt: skip
    assert noisy[0] == ab.NO_CHANGE and noisy[1].endswith("within the run-to-run jitter of 64")


def test_figures_that_vary_need_a_test_and_more_than_their_own_spread() -> None:
    base = [1000.0, 1004.0, 998.0, 1002.0]
    # Within the base's own spread: noise, whatever the threshold says.
    assert ab.deterministic_verdict(base, [1003.0, 1005.0, 1004.0, 1006.0], 0.0)[0] == ab.NO_CHANGE
    verdict, how = ab.deterministic_verdict(base, [1100.0, 1102.0, 1098.0, 1101.0], 0.0)
    assert verdict == ab.REGRESSION and "Mann-Whitney p=0.0286" in how
    # Two samples of one code that happen not to overlap are not a change.
    assert ab.deterministic_verdict(base, [1006.0, 1008.0, 1005.0, 1009.0], 0.0)[0] \
        == ab.NO_CHANGE  # fmt: skip
    # Three repetitions cannot reach significance: no verdict either way.
    assert ab.deterministic_verdict(base[:3], [1100.0, 1102.0, 1098.0], 0.0)[0] == ab.INCONCLUSIVE


def test_a_regression_is_named_and_fails_only_the_kinds_asked(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    run = _ab_run(store, {"peak": 62846 + 4096, "instructions": 19_000_000.0, "code": 64})
    outcome = ab.compare_variants(store, run, BASE, CANDIDATE, dict(ab.DEFAULT_THRESHOLDS),
                                  ab.KINDS)  # fmt: skip
    verdicts = _verdicts(outcome)
    assert verdicts["handshake_1.3 client heap peak"] == ab.REGRESSION
    assert verdicts["handshake_1.3 client instructions"] == ab.REGRESSION
    assert verdicts["code-size client program (x86-64) text+data+bss"] == ab.REGRESSION
    assert verdicts["handshake_1.3 full handshake server bytes"] == ab.NO_CHANGE
    assert verdicts["handshake_1.3 client_cpu_ns"] == ab.NO_CHANGE
    assert outcome.exit_status == 1
    peak = next(v for v in outcome.verdicts if v.figure == "client heap peak")
    assert (peak.base, peak.candidate, peak.change) == (62846, 62846 + 4096, 4096)
    # Failing on time only: the regressions are shown, not failed on.
    only_time = ab.compare_variants(store, run, BASE, CANDIDATE, dict(ab.DEFAULT_THRESHOLDS),
                                    ("time",))  # fmt: skip
    assert only_time.exit_status == 0
    summary = ab.markdown(only_time)
    assert summary.startswith("## tlsbench ab: no failing regression (code-size, heap, "
                              "instructions not in --fail-on)")  # fmt: skip
    assert "(not failing: heap is not in --fail-on)" in summary


def test_the_summary_lists_regressions_then_improvements_then_counts(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    run = _ab_run(store, {"peak": 62846 + 4096, "stack": 3900, "time_ns": 1200.0})
    outcome = ab.compare_variants(store, run, BASE, CANDIDATE, dict(ab.DEFAULT_THRESHOLDS),
                                  ab.KINDS)  # fmt: skip
    text = ab.markdown(outcome, "ab.db")
    assert text.startswith("## tlsbench ab: regression\n\n**")
    regressions, improvements = text.index("### Regressions ("), text.index("### Improvements (")
    unchanged = text.index("### No change (")
    assert regressions < improvements < unchanged
    assert "| handshake_1.3 | client heap peak | heap | 62,846 bytes | 66,942 bytes | " \
        "+4,096 (+6.52%) | 0.0% | identical in every repetition |" in text  # fmt: skip
    assert "| handshake_1.3 | client stack | stack | 4,000 bytes | 3,900 bytes |" in text
    assert "client_cpu_ns | time |" in text[regressions:improvements]
    assert f"| base | `{BASE}` | git /src/mbedtls#main: commit abababababab" in text
    document = json.loads(ab.to_json(outcome))
    assert document["exit_status"] == 1
    assert document["counts"]["regression"] == sum(
        1 for v in document["verdicts"] if v["verdict"] == "regression")  # fmt: skip


def test_noisy_instruction_counts_of_identical_code_are_no_change(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    # Today's mbedTLS client counts move ~0.5 % run to run; identical code on both sides.
    run = _ab_run(store, {}, noisy=0.005, reps=5)
    outcome = ab.compare_variants(store, run, BASE, CANDIDATE, dict(ab.DEFAULT_THRESHOLDS),
                                  ab.KINDS)  # fmt: skip
    assert outcome.exit_status == 0, ab.markdown(outcome)
    assert _verdicts(outcome)["handshake_1.3 client instructions"] == ab.NO_CHANGE


@pytest.mark.parametrize(
    ("status", "figure", "verdict"),
    [("failed", "candidate failed", ab.FAILED), ("unsupported", "supported", ab.REGRESSION)],
)
def test_a_point_the_candidate_fails_or_no_longer_supports_fails_the_comparison(
    tmp_path: Path, status: str, figure: str, verdict: str
) -> None:
    store = Store(tmp_path / "s.db")
    run = _ab_run(store, {}, candidate_status=status)
    outcome = ab.compare_variants(store, run, BASE, CANDIDATE, dict(ab.DEFAULT_THRESHOLDS), ())
    found = [v for v in outcome.verdicts if v.figure == figure]
    assert [v.verdict for v in found] == [verdict] and "no such group" in found[0].how
    assert outcome.exit_status == 1  # whatever --fail-on says


def test_options_are_checked() -> None:
    assert ab.parse_kinds("heap, code-size") == ("heap", "code-size")
    assert ab.parse_kinds("all") == ab.KINDS and ab.parse_kinds("none") == ()
    assert ab.parse_thresholds(["time=0.02,heap=0.001"])["time"] == 0.02
    for bad in ("heap,speed", ""):
        with pytest.raises(UserError, match="give figure kinds"):
            ab.parse_kinds(bad)
    for bad in ("time", "time=1.5", "speed=0.1", "heap=x", "heap=nan"):
        with pytest.raises(UserError, match="write KIND=FRACTION"):
            ab.parse_thresholds([bad])


def test_cli_judges_a_stored_run_and_exits_by_verdict(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    store = Store(db)
    _ab_run(store, {"peak": 62846 + 4096})
    store.close()
    summary = tmp_path / "summary.md"
    summary.write_text("earlier steps\n")
    proc = tlsbench("ab", BASE, CANDIDATE, "--run", "latest", "--db", str(db), "--summary",
                str(summary))  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.startswith("## tlsbench ab: regression")
    assert summary.read_text() == "earlier steps\n" + proc.stdout  # appended, as CI wants
    passed = tlsbench("ab", BASE, CANDIDATE, "--run", "latest", "--db", str(db), "--json",
                  "--fail-on", "time,code-size")  # fmt: skip
    assert passed.returncode == 0, passed.stderr
    assert json.loads(passed.stdout)["exit_status"] == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["mbedtls-3.6.6", "mbedtls-3.6.6"], "BASE and CANDIDATE are the same variant"),
        (["mbedtls-3.6.6", "nosuch-1.0"], "unknown variant 'nosuch-1.0'"),
        (["mbedtls-3.6.6", "mbedtls-2.28.x", "no-such-experiment"], "unknown experiment"),
        (["mbedtls-3.6.6", "mbedtls-2.28.x", "--fail-on", "speed"], "give figure kinds"),
        (["mbedtls-3.6.6", "mbedtls-2.28.x", "--threshold", "heap=2"], "write KIND=FRACTION"),
        (["mbedtls-3.6.6", "mbedtls-2.28.x", "--only", "scenario=nothing"], "leaves no point"),
    ],
)
def test_cli_usage_errors_exit_2_before_anything_runs(
    tmp_path: Path, args: list[str], message: str
) -> None:
    db = tmp_path / "results" / "s.db"
    proc = tlsbench("ab", *args, "--db", str(db))
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert not db.exists()


def test_compare_pairs_points_across_variants(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    run = _ab_run(store, {"time_ns": 1200.0})
    rows = compare_runs(store, run, run, variants=(BASE, CANDIDATE))
    times = [r for r in rows if r.series == "client_cpu_ns"]
    assert [(r.variant, r.verdict) for r in times] == [(f"{BASE} -> {CANDIDATE}", "slower")]
    with pytest.raises(UserError, match=r"has no point of mbedtls-2\.28\.x"):
        compare_runs(store, run, run, variants=(BASE, "mbedtls-2.28.x"))
    # Two runs of one variant each (a commit, then its parent) pair by point name.
    proc = tlsbench("compare", str(run), str(run), "--db", str(tmp_path / "s.db"), "--variants",
                BASE, CANDIDATE)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert f"| {BASE} -> {CANDIDATE} | handshake_1.3 | client_cpu_ns |" in proc.stdout


def test_report_exports_bmf_and_github_action_benchmark(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    _ab_run(store, {"peak": 70000})
    model = load_run(store, "latest")
    bmf = json.loads(export(model, "bmf"))
    heap = bmf[f"{CANDIDATE} handshake_1.3 client"]
    assert heap["heap-peak"] == {"value": 70000.0}
    assert heap["stack"] == {"value": 4000.0}
    latency = bmf[f"{BASE} handshake_1.3"]["latency"]
    assert latency["lower_value"] <= latency["value"] <= latency["upper_value"]
    assert bmf[f"{BASE} code-size x86-64 client"]["code-size"] == {"value": 780577.0}
    gab = json.loads(export(model, "gab"))
    names = {entry["name"]: entry for entry in gab}
    peak = names[f"{CANDIDATE} handshake_1.3 client heap-peak"]
    assert (peak["unit"], peak["value"]) == ("bytes", 70000.0)
    assert names[f"{BASE} handshake_1.3 latency"]["range"].startswith("± ")
    assert not any(e["name"].endswith("throughput") for e in gab)  # smaller is better only
    proc = tlsbench("report", "latest", "--db", str(tmp_path / "s.db"), "--format", "gab")
    assert proc.returncode == 0 and json.loads(proc.stdout) == gab


def test_an_experiment_runs_its_points_for_base_and_candidate(catalog) -> None:
    from tlsbench.run import experiments

    mbedtls = experiments.load("ab", catalog, ["mbedtls-3.6.6", "mbedtls-2.28.x"])
    names = sorted((p.name, p.variant) for p in mbedtls.points)
    assert ("code-size", "mbedtls-2.28.x") in names and len(names) == 2 * 4
    # A library without code-size programs keeps the other points.
    openssl = experiments.load("ab", catalog, ["openssl-3.5.x", "openssl-3.5.x:no-asm"])
    assert {p.scenario for p in openssl.points} == {"handshake", "records"}
    assert len(openssl.points) == 2 * 3


def _costs(side: str, hot: int, atomics: int) -> dict[str, Any]:
    """One side's stored cost by function (instruction mode) over 10 handshakes."""
    from tlsbench.core.costs import FunctionCost, side_costs

    functions = [FunctionCost("ssl_step", "ssl_tls.c", "tlsbench-driver", "tls", hot, 0, 40),
                 FunctionCost("mpi_mul", "bignum.c", "tlsbench-driver", "public_key", 90000, 0,
                              900),
                 FunctionCost("refcount_up", "refs.c", "tlsbench-driver", "locks", 300, atomics,
                              atomics)]  # fmt: skip
    return side_costs(side, 10, functions).to_json()


def test_a_changed_figure_is_explained_by_the_function_that_changed(tmp_path: Path) -> None:
    """In instruction mode each point stores its sides' cost by function: a figure whose
    verdict is not "no change" names the functions and groups that moved, both directions,
    in the Markdown and the JSON; an unchanged one names none."""
    store = Store(tmp_path / "ab.db")
    run = store.new_run("ab", "?", "instructions", 1, ENV, "# ab\n", "c0")
    store.add_points(
        run,
        [
            {
                "name": "handshake_1.3",
                "variant": variant,
                "library": "mbedtls",
                "scenario": "handshake",
                "params": {},
                "build": {"cache_key": variant},
            }
            for variant in (BASE, CANDIDATE)
        ],
    )
    for point in store.points(run):
        hot, atomics = (5000, 20) if point.variant == BASE else (25000, 10)
        costs = {"client": _costs("client", hot, atomics), "server": _costs("server", 5000, 20)}
        units = {f"{s}_{k}": {"unit": k} for s in ("client", "server")
                 for k in ("instructions", "atomics")}  # fmt: skip
        samples = {f"{s}_{k}": [costs[s][k] / 10] for s in ("client", "server")
                   for k in ("instructions", "atomics")}  # fmt: skip
        store.add_result(point.id, 0, "ok", 0, None, 0.1, "t",
                         {"summary": units, "samples": samples, "costs": costs}, "")  # fmt: skip
    store.finish_run(run, "complete")
    outcome = ab.compare_variants(store, run, BASE, CANDIDATE, dict(ab.DEFAULT_THRESHOLDS),
                                  ab.KINDS)  # fmt: skip
    verdicts = {v.figure: v for v in outcome.verdicts}
    instructions = verdicts["client instructions"]
    assert instructions.verdict == ab.REGRESSION and instructions.explained is not None
    first = instructions.explained.functions[0]
    assert (first.name, first.label, first.before["instructions"], first.after["instructions"]) \
        == ("ssl_step", "tls", 500, 2500)  # fmt: skip
    assert [c.name for c in instructions.explained.groups] == ["tls"]
    # Fewer atomics: an improvement, explained by the atomics that went.
    atomics = verdicts["client atomics"]
    assert atomics.verdict == ab.IMPROVEMENT and atomics.explained is not None
    assert atomics.explained.measure == "atomics"
    assert [(c.name, c.change("atomics")) for c in atomics.explained.functions] == \
        [("refcount_up", -1.0)]  # fmt: skip
    assert verdicts["server instructions"].verdict == ab.NO_CHANGE
    assert verdicts["server instructions"].explained is None
    summary = ab.markdown(outcome)
    block = summary.split("### What changed, by function", 1)[1]
    assert "**handshake_1.3, client**: client instructions (regression); by instructions, " \
        "9,530 -> 11,530" in block  # fmt: skip
    assert "| `ssl_step` | tls | tlsbench-driver | 500 | 2,500 | +2,000 (+400.0%) | 4 -> 4 |" \
        in block  # fmt: skip
    assert "| TLS state machine | 500 | 2,500 | +2,000 (+400.0%) |" in block
    assert "**handshake_1.3, client**: client atomics (improvement); by atomics, 2 -> 1" in block
    document = json.loads(ab.to_json(outcome))
    by_figure = {v["figure"]: v for v in document["verdicts"]}
    changed = by_figure["client instructions"]["changed"]
    assert changed["functions"][0]["name"] == "ssl_step"
    assert changed["functions"][0]["change"]["instructions"] == 2000
    assert by_figure["server instructions"]["changed"] is None
