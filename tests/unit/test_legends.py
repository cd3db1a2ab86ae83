"""No legend hides data: every plot of the reports of the shipped `quick`, `libraries` and
`capacity` variant sets (synthetic figures, test_palette.synthetic) and of the golden store
(test_report.build_store), drawn as in a report, with each legend's box (display
coordinates, after drawing) kept off every data point, bar and scatter marker, and inside
the figure."""

from __future__ import annotations

from pathlib import Path

import pytest
from legend_geometry import legend_problems
from matplotlib.figure import Figure
from test_palette import experiment_variants, synthetic
from test_report import build_store

from fit_outcomes import made_up
from tlsbench.builds import firmware
from tlsbench.embedded import fit
from tlsbench.report import load_run
from tlsbench.reportkit.contents import plots
from tlsbench.reportkit.plots import Plot, legend
from tlsbench.run import experiments


@pytest.mark.parametrize("name", ["quick", "libraries", "capacity"])
def test_no_legend_hides_data_in_an_experiments_plots(name: str) -> None:
    load_points = [p for p in experiments.load(name).points if p.scenario == "load"]
    drawn = plots(synthetic(experiment_variants(name), load_points))
    # Every kind of plot a report draws (capacity only where the set has load points).
    expected = {"overview", "heap_vs_record_size", "handshake_time", "record_latency_cdf",
                "bulk_throughput", "aead_cycles_per_byte", "memory_per_connection", "code_size",
                "projected_handshake", "network_latency"}  # fmt: skip
    assert {p.name for p in drawn} == expected | ({"capacity"} if load_points else set())
    problems = [f"{p.name}: {problem}" for p in drawn for problem in legend_problems(p.figure)]
    assert not problems, "\n".join(problems)


def test_no_legend_hides_data_in_the_golden_reports_plots(tmp_path: Path) -> None:
    store, run_id = build_store(tmp_path / "golden.db")
    try:
        drawn: list[Plot] = plots(load_run(store, run_id))
    finally:
        store.close()
    assert drawn
    problems = [f"{p.name}: {problem}" for p in drawn for problem in legend_problems(p.figure)]
    assert not problems, "\n".join(problems)


def test_the_check_sees_a_legend_over_data() -> None:
    """The geometry check itself: a legend inside the axes, over the line, is caught; the
    same legend placed by plots.legend is not; a legend pushed off the figure is caught."""
    fig = Figure(figsize=(4, 3), layout="constrained")
    ax = fig.subplots()
    for i in range(6):
        ax.plot([0, 1], [1.0 - i * 0.01, 1.0 - i * 0.01], label=f"series {i}")
    ax.legend(loc="upper left")
    assert any("hides" in p for p in legend_problems(fig))

    fig = Figure(figsize=(4, 3), layout="constrained")
    ax = fig.subplots()
    ax.bar([0, 1], [5.0, 5.0], label="bars")
    ax.legend(loc="center")
    assert any("1 bars" in p or "2 bars" in p for p in legend_problems(fig))

    fig = Figure(figsize=(4, 3), layout="constrained")
    ax = fig.subplots()
    for i in range(6):
        ax.plot([0, 1], [1.0 - i * 0.01, 1.0 - i * 0.01], label=f"series {i}")
    legend(fig)
    assert legend_problems(fig) == []

    fig = Figure(figsize=(4, 3), layout="constrained")
    ax = fig.subplots()
    ax.plot([0, 1], [0, 1], label="line")
    ax.legend(loc="upper left", bbox_to_anchor=(1.5, 1.0))
    assert any("past the figure" in p for p in legend_problems(fig))


def test_no_legend_hides_data_in_the_fit_chart() -> None:
    """`tlsbench fit`'s RAM-against-flash chart, from candidates with figures chosen here
    (no build, no run: tests/fit_outcomes.py)."""

    outcomes = [made_up(line, record, heap=8_000 + record + i * 3_000, text=90_000 + i * 40_000)
                for i, line in enumerate(("mbedtls-3.6.6", "wolfssl-5.7.2", "mbedtls-2.28.10"))
                for record in (512, 2048, 16384)]  # fmt: skip
    budget = fit.Budget(firmware.core_of("cortex-m4"), ram=30_000, flash=200_000, mhz=84.0)
    assert legend_problems(fit.chart(outcomes, budget, "client")) == []
