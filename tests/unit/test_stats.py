"""Tests for tlsbench.core.stats: the repetition (process) is the statistical unit."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tlsbench.core.stats import (
    FASTER,
    NO_DIFFERENCE,
    SLOWER,
    TAIL_MIN_SAMPLES,
    TOO_FEW,
    StatWarning,
    Summary,
    WarningKind,
    compare_repetitions,
    environment_warnings,
    mad_outliers,
    min_p_value,
    percentile_nearest_rank,
    sample_warnings,
    summarize,
)

# --- two-stage summaries ---------------------------------------------------------------------


def test_summary_is_the_median_of_repetition_medians() -> None:
    # Three processes; the pooled median (4) would differ from the median of medians (2).
    s = summarize([[1.0, 2.0, 3.0], [1.0, 2.0, 9.0], [10.0, 11.0, 12.0]])
    assert (s.n, s.repetitions, s.min, s.max, s.median) == (9, 3, 1.0, 12.0, 2.0)
    assert s.mean == pytest.approx(51.0 / 9)
    assert s.ci_low <= s.median <= s.ci_high


def test_ci_resamples_repetitions_not_iterations() -> None:
    # Many tight iterations per repetition, repetitions far apart: a pooled bootstrap would
    # give a CI far narrower than the spread of the processes; the cluster bootstrap does not.
    rng = np.random.default_rng(1)
    groups = [list(rng.normal(centre, 0.1, 500)) for centre in (100, 104, 108, 112, 116)]
    s = summarize(groups)
    assert s.ci_low <= 104.5 and s.ci_high >= 111.5
    assert summarize(groups) == s  # seeded: deterministic


def test_one_repetition_has_no_interval() -> None:
    s = summarize([[3.0, 1.0, 2.0]])
    assert (s.repetitions, s.median, s.ci_low, s.ci_high, s.cv) == (1, 2.0, 2.0, 2.0, 0.0)
    assert WarningKind.FEW_REPETITIONS in {w.kind for w in sample_warnings(s)}


def test_p99_only_where_every_repetition_has_a_tail() -> None:
    short = [[float(i) for i in range(20)]] * 5
    assert summarize(short).p99 is None  # nearest-rank p99 of 20 samples would be the max
    long = [[float(i) for i in range(1, TAIL_MIN_SAMPLES + 1)]] * 3
    assert summarize(long).p99 == math.ceil(0.99 * TAIL_MIN_SAMPLES)
    assert summarize([*long, [1.0, 2.0]]).p99 is None


@pytest.mark.parametrize(("n", "expected"), [(1000, 990.0), (100, 99.0), (50, 50.0), (1, 1.0)])
def test_percentile_nearest_rank(n: int, expected: float) -> None:
    assert percentile_nearest_rank([float(i) for i in range(n, 0, -1)], 0.99) == expected


def test_empty_raises() -> None:
    with pytest.raises(ValueError):
        summarize([])
    with pytest.raises(ValueError):
        summarize([[], []])


def test_mad_outliers() -> None:
    assert mad_outliers([10, 11, 10, 12, 11, 100]) == [False] * 5 + [True]
    assert mad_outliers([5, 5, 5, 5]) == [False] * 4
    assert mad_outliers([]) == []


def test_outlying_repetition_and_high_cv_warned() -> None:
    groups = [[100.0 + i, 101.0 + i] for i in range(6)] + [[300.0, 301.0]]
    kinds = {w.kind for w in sample_warnings(summarize(groups))}
    assert {WarningKind.OUTLIERS, WarningKind.HIGH_CV} <= kinds
    clean = summarize([[100.0, 101.0], [100.5, 101.0], [100.2, 100.9]])
    assert sample_warnings(clean) == []
    assert isinstance(clean, Summary)


# --- comparing per-repetition figures --------------------------------------------------------


def _reps(centre: float, n: int, seed: int, spread: float = 0.01) -> list[float]:
    return list(np.random.default_rng(seed).normal(centre, centre * spread, n))


def test_min_p_value_of_exact_test() -> None:
    assert min_p_value(3, 3) == pytest.approx(0.1)
    assert min_p_value(5, 5) == pytest.approx(2 / 252)


def test_three_repetitions_each_are_too_few() -> None:
    c = compare_repetitions([100, 101, 102], [200, 201, 202])
    assert c.verdict == TOO_FEW and c.p_value is None
    assert c.ratio == pytest.approx(201 / 101)


def test_clear_change_detected_in_both_directions() -> None:
    a, b = _reps(100, 8, 1), _reps(120, 8, 2)
    slower = compare_repetitions(a, b)
    assert slower.verdict == SLOWER
    assert 1.0 < slower.ci_low <= slower.ratio <= slower.ci_high
    assert slower.p_value is not None and slower.p_value < 0.01
    assert compare_repetitions(a, b, lower_is_better=False).verdict == FASTER
    assert compare_repetitions(b, a).verdict == FASTER


def test_significant_but_below_threshold_is_no_difference() -> None:
    a, b = _reps(100, 10, 1, 0.001), _reps(102, 10, 2, 0.001)  # 2 %, clearly significant
    c = compare_repetitions(a, b, threshold=0.05)
    assert c.p_value is not None and c.p_value < 0.001
    assert c.verdict == NO_DIFFERENCE and c.threshold == 0.05
    assert compare_repetitions(a, b, threshold=0.01).verdict == SLOWER


def test_same_figures_are_no_difference() -> None:
    a = _reps(100, 6, 3)
    c = compare_repetitions(a, list(a))
    assert c.verdict == NO_DIFFERENCE and c.ratio == 1.0
    same = compare_repetitions([5.0] * 5, [5.0] * 5)
    assert (same.verdict, same.p_value) == (NO_DIFFERENCE, 1.0)


def test_compare_bad_input() -> None:
    with pytest.raises(ValueError):
        compare_repetitions([], [1.0])
    with pytest.raises(ValueError):
        compare_repetitions([0.0, 0.0], [1.0, 1.0])


# --- environment -----------------------------------------------------------------------------


def _kinds(warnings: list[StatWarning]) -> set[WarningKind]:
    return {w.kind for w in warnings}


def test_environment_warnings() -> None:
    bad = {"invariant_tsc": False, "governor": "powersave", "turbo": True, "virtualization": "kvm"}
    warnings = environment_warnings(bad)
    assert [w.kind for w in warnings] == [
        WarningKind.TSC_NOT_INVARIANT,
        WarningKind.FREQUENCY_SCALING,
        WarningKind.VIRTUAL_MACHINE,
    ]
    assert all(w.message for w in warnings)
    good = {
        "invariant_tsc": True,
        "governor": "performance",
        "turbo": False,
        "virtualization": None,
    }
    assert environment_warnings(good) == []
    unknown = {"invariant_tsc": True, "governor": None, "turbo": None, "virtualization": None}
    assert environment_warnings(unknown) == []
    turbo_only = {**good, "turbo": True}
    assert _kinds(environment_warnings(turbo_only)) == {WarningKind.FREQUENCY_SCALING}
    assert WarningKind.HIGH_CV == "high_cv"  # str enum: JSON friendly


def test_environment_warnings_accepts_doctor_cpu_facts() -> None:
    from tlsbench.core.machine import cpu_facts

    warnings = environment_warnings(cpu_facts())
    assert all(isinstance(w, StatWarning) and w.message for w in warnings)
