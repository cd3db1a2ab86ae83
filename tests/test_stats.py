"""Tests for tlsbench.stats (standard library only; scipy reference values are hard-coded)."""

from __future__ import annotations

import random
import statistics
import time
from collections import Counter

import pytest

from tlsbench import stats
from tlsbench.stats import (
    Comparison,
    StatWarning,
    Summary,
    WarningKind,
    compare,
    environment_warnings,
    mad_outliers,
    mann_whitney,
    sample_warnings,
    summarize,
)

# --- summary statistics ----------------------------------------------------------------------


def test_summary_small_set_hand_computed() -> None:
    data = [1.0, 2.0, 3.0, 4.0, 100.0]
    s = summarize(data)
    assert (s.n, s.min, s.median, s.max) == (5, 1.0, 3.0, 100.0)
    assert s.mean == pytest.approx(22.0)
    assert s.p99 == 100.0  # ceil(0.99 * 5) = 5th smallest
    assert s.stdev == pytest.approx(statistics.stdev(data))
    assert s.cv == pytest.approx(statistics.stdev(data) / 22.0)
    assert s.outliers == 1


def test_summary_is_frozen() -> None:
    s = summarize([1.0, 2.0])
    with pytest.raises(AttributeError):
        s.n = 3  # type: ignore[misc, unused-ignore]


def test_even_length_median() -> None:
    assert summarize([4.0, 1.0, 3.0, 2.0]).median == 2.5
    assert summarize([10.0, 20.0]).median == 15.0


@pytest.mark.parametrize(
    ("n", "expected"),
    [(1000, 990.0), (100, 99.0), (50, 50.0), (1, 1.0), (200, 198.0), (101, 100.0)],
)
def test_p99_nearest_rank_on_1_to_n(n: int, expected: float) -> None:
    data = [float(i) for i in range(n, 0, -1)]  # unsorted input
    assert summarize(data, resamples=10).p99 == expected


def test_stdev_matches_statistics_module() -> None:
    rng = random.Random(7)
    data = [rng.gauss(50, 3) for _ in range(137)]
    s = summarize(data)
    assert s.stdev == pytest.approx(statistics.stdev(data), rel=1e-12)
    assert s.mean == pytest.approx(statistics.fmean(data), rel=1e-12)
    assert s.median == statistics.median(data)


def test_single_sample_and_zero_mean() -> None:
    s = summarize([42.0])
    assert (s.stdev, s.cv, s.ci_low, s.ci_high, s.p99, s.outliers) == (0.0, 0.0, 42.0, 42.0, 42, 0)
    assert summarize([-1.0, 1.0]).cv == 0.0


def test_empty_raises() -> None:
    with pytest.raises(ValueError):
        summarize([])
    with pytest.raises(ValueError):
        summarize([1.0], resamples=0)


# --- MAD outliers ----------------------------------------------------------------------------


def test_mad_outliers_flags_the_100() -> None:
    # median 3, |x - 3| = [2, 1, 0, 1, 97], MAD = 1: z(100) = 0.6745 * 97 = 65.4, z(1) = 1.349
    assert mad_outliers([1, 2, 3, 4, 100]) == [False, False, False, False, True]
    assert mad_outliers([-100, 1, 2, 3, 4]) == [True, False, False, False, False]


def test_mad_outliers_threshold_and_degenerate_cases() -> None:
    # z(1) = 0.6745 * 2 / 1 = 1.349: flagged with threshold 1.3, not with 1.4
    assert mad_outliers([1, 2, 3, 4, 5], threshold=1.3) == [True, False, False, False, True]
    assert mad_outliers([1, 2, 3, 4, 5], threshold=1.4) == [False] * 5
    assert mad_outliers([5, 5, 5, 5, 9]) == [False] * 5  # MAD == 0
    assert mad_outliers([]) == []


# --- bootstrap -------------------------------------------------------------------------------


def test_bootstrap_ci_deterministic_and_contains_median() -> None:
    rng = random.Random(3)
    data = [rng.lognormvariate(3, 0.4) for _ in range(200)]
    a = summarize(data, seed=11)
    b = summarize(data, seed=11)
    assert (a.ci_low, a.ci_high) == (b.ci_low, b.ci_high)
    assert a.ci_low <= a.median <= a.ci_high
    assert a.ci_low < a.ci_high
    assert min(data) <= a.ci_low and a.ci_high <= max(data)
    c = summarize(data, seed=12)
    assert c.ci_low <= c.median <= c.ci_high


@pytest.mark.parametrize("n", [7, 8])
def test_bootstrap_median_distribution_matches_naive_resampling(n: int) -> None:
    """The O(1) order-statistic sampler has the distribution of median(choices(xs, k=n))."""
    xs = sorted(float(i * i) for i in range(1, n + 1))
    draws = 40_000
    fast = Counter(stats._bootstrap_medians(xs, random.Random(1), draws))
    rng = random.Random(2)
    naive = Counter(statistics.median(rng.choices(xs, k=n)) for _ in range(draws))
    for value in set(fast) | set(naive):
        assert fast[value] / draws == pytest.approx(naive[value] / draws, abs=0.01)


def test_summarize_is_fast_on_10000_samples() -> None:
    rng = random.Random(0)
    data = [rng.gauss(100, 5) for _ in range(10_000)]
    start = time.perf_counter()
    s = summarize(data, resamples=2000)
    assert time.perf_counter() - start < 1.0
    assert s.ci_low <= s.median <= s.ci_high


# --- Mann-Whitney U --------------------------------------------------------------------------

# Reference values: scipy 1.17.1,
# scipy.stats.mannwhitneyu(a, b, method="asymptotic", use_continuity=True, alternative="two-sided")
MW_REFERENCE = [
    ([1, 2, 3, 4, 5], [6, 7, 8, 9, 10], 0.0, 0.012185780355344813),
    ([1, 2, 2, 3, 3, 3], [2, 3, 3, 4, 5, 5, 6], 7.0, 0.04567124293968339),  # ties
    ([1.1, 2.3, 0.7, 4.4, 3.2, 2.2], [3.3, 4.1, 5.0, 2.9, 6.2], 4.0, 0.05523425371806383),
    ([1, 2, 3], [1, 2, 3], 4.5, 1.0),
    ([5, 5, 5], [5, 5, 5], 4.5, 1.0),  # all tied
]


@pytest.mark.parametrize(("a", "b", "u", "p"), MW_REFERENCE)
def test_mann_whitney_against_scipy(a: list[float], b: list[float], u: float, p: float) -> None:
    result = mann_whitney(a, b)
    assert result.u == u
    assert result.p_value == pytest.approx(p, rel=1e-12)


def test_mann_whitney_symmetry_and_all_tied() -> None:
    a, b = [1, 2, 2, 3, 3, 3], [2, 3, 3, 4, 5, 5, 6]
    ab, ba = mann_whitney(a, b), mann_whitney(b, a)
    assert ab.u + ba.u == len(a) * len(b)
    assert ab.p_value == pytest.approx(ba.p_value)
    assert mann_whitney([7, 7, 7, 7], [7, 7]).p_value == 1.0
    with pytest.raises(ValueError):
        mann_whitney([], [1.0])


# --- comparison ------------------------------------------------------------------------------


def _noisy(center: float, n: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [rng.gauss(center, center * 0.02) for _ in range(n)]


def test_compare_identical_samples_no_difference() -> None:
    a = _noisy(100, 30, 1)
    c = compare(a, list(a))
    assert c.ratio == 1.0
    assert c.p_value == 1.0
    assert c.ci_low <= 1.0 <= c.ci_high
    assert c.verdict == "no difference"


def test_compare_shifted_samples_both_directions() -> None:
    a, b = _noisy(100, 40, 1), _noisy(120, 40, 2)
    slower = compare(a, b)
    assert slower.ratio == pytest.approx(1.2, rel=0.03)
    assert 1.0 < slower.ci_low <= slower.ratio <= slower.ci_high
    assert slower.p_value < 1e-6
    assert slower.verdict == "slower"  # B takes longer
    assert compare(a, b, lower_is_better=False).verdict == "faster"  # B has higher throughput
    assert compare(b, a).verdict == "faster"
    assert compare(b, a, lower_is_better=False).verdict == "slower"


def test_compare_deterministic_and_alpha() -> None:
    a, b = _noisy(100, 20, 3), _noisy(101, 20, 4)
    assert compare(a, b, seed=5) == compare(a, b, seed=5)
    c = compare(a, b, alpha=1e-300)
    assert isinstance(c, Comparison)
    assert c.verdict == "no difference"


def test_compare_zero_median_raises() -> None:
    with pytest.raises(ValueError):
        compare([0.0, 0.0, 0.0], [1.0, 2.0, 3.0])


# --- warnings --------------------------------------------------------------------------------


def _kinds(warnings: list[StatWarning]) -> set[WarningKind]:
    return {w.kind for w in warnings}


def test_high_cv_warning() -> None:
    s = summarize([1.0, 10.0, 1.0, 10.0, 1.0, 10.0])
    assert s.cv > 0.10
    assert _kinds(sample_warnings(s)) == {WarningKind.HIGH_CV}


def test_few_samples_warning() -> None:
    s = summarize([100.0, 100.5, 99.5])
    assert _kinds(sample_warnings(s)) == {WarningKind.FEW_SAMPLES}
    assert sample_warnings(s, min_samples=3) == []


def test_outlier_warning_and_clean_set() -> None:
    assert WarningKind.OUTLIERS in _kinds(sample_warnings(summarize([1, 2, 3, 4, 100])))
    clean = summarize([100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8])
    assert sample_warnings(clean) == []
    assert isinstance(clean, Summary)


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
    from tlsbench.doctor import cpu_facts

    warnings = environment_warnings(cpu_facts())
    assert all(isinstance(w, StatWarning) and w.message for w in warnings)
