"""Statistics for benchmark samples with the repetition (one driver process) as the unit.

Iterations inside one process share its heap layout, caches, clock frequency and neighbours,
so they are not independent samples. Every figure is therefore computed in two stages:

1. each repetition is summarised on its own (its median; its p99 only where the repetition
   has at least TAIL_MIN_SAMPLES samples, since the nearest-rank p99 of 20 samples is the max);
2. the figure is the median of those per-repetition figures, and its 95 % CI is a percentile
   bootstrap that resamples *repetitions* (a cluster bootstrap), never pooled iterations.

`compare_repetitions` tests two sets of per-repetition figures (Mann-Whitney U, exact where
there are no ties) and only calls a change when it is significant *and* larger than a
practical threshold; with too few repetitions for the test to ever reach significance it says
so. numpy and scipy.stats do the numerical work.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np

CONFIDENCE = 0.95
RESAMPLES = 2000
MAD_SCALE = 0.6745  # Iglewicz & Hoaglin modified z-score, as in hyperfine
# A repetition's p99 is shown only with at least this many samples: 10 samples lie above it,
# so it is neither the maximum nor decided by one stray sample.
TAIL_MIN_SAMPLES = 1000
# Default practical threshold of `compare`: smaller changes are "no difference" even when
# significant (this machine's run-to-run drift is larger than that; see the README).
DEFAULT_THRESHOLD = 0.05

# Verdicts of a comparison.
FASTER = "faster"
SLOWER = "slower"
NO_DIFFERENCE = "no difference"
TOO_FEW = "too few repetitions"
MACHINE_DRIFT = "machine drift"


@dataclass(frozen=True)
class Summary:
    """A series summarised over repetitions. `n` counts samples, `repetitions` processes;
    `p99` is None where the repetitions are too short for a tail ("n too small")."""

    n: int
    repetitions: int
    min: float
    median: float  # median over repetitions of each repetition's median
    mean: float  # mean of all samples (allocations per record and the like)
    p99: float | None  # median over repetitions of each repetition's nearest-rank p99
    max: float
    cv: float  # coefficient of variation of the per-repetition medians
    ci_low: float  # cluster-bootstrap 95 % CI of `median` (equal to it with one repetition)
    ci_high: float
    outliers: int  # repetitions whose median is an outlier among the repetitions


class WarningKind(StrEnum):
    """A str (and Enum): compares equal to its value and serialises to JSON as-is."""

    HIGH_CV = "high_cv"
    FEW_REPETITIONS = "few_repetitions"
    OUTLIERS = "outliers"
    TSC_NOT_INVARIANT = "tsc_not_invariant"
    FREQUENCY_SCALING = "frequency_scaling"
    VIRTUAL_MACHINE = "virtual_machine"


@dataclass(frozen=True)
class StatWarning:
    kind: WarningKind
    message: str


@dataclass(frozen=True)
class Comparison:
    ratio: float  # median B / median A of the per-repetition figures
    ci_low: float  # 95 % CI of the ratio, resampling repetitions on each side
    ci_high: float
    p_value: float | None  # None where no test could be made (too few repetitions)
    threshold: float  # the practical threshold applied (0.05 = 5 %)
    verdict: str


def _groups(groups: Sequence[Sequence[float]]) -> list[np.ndarray]:
    arrays = [np.asarray(g, dtype=float) for g in groups]
    arrays = [a for a in arrays if a.size]
    if not arrays:
        raise ValueError("no samples")
    return arrays


def percentile_nearest_rank(values: Sequence[float] | np.ndarray, q: float) -> float:
    """The ceil(q*n)-th smallest value (same formula as drivers/core/measure.c)."""
    return float(np.percentile(np.asarray(values, dtype=float), q * 100, method="inverted_cdf"))


def mad_outliers(samples: Sequence[float], threshold: float = 3.5) -> list[bool]:
    """Flag x when |0.6745 * (x - median) / MAD| > threshold; no flags when MAD == 0."""
    xs = np.asarray(samples, dtype=float)
    if not xs.size:
        return []
    from scipy import stats as sps  # scipy when a figure is computed, not on import

    mad = float(sps.median_abs_deviation(xs))
    if mad == 0:
        return [False] * int(xs.size)
    return [bool(v) for v in np.abs(MAD_SCALE * (xs - np.median(xs)) / mad) > threshold]


def _percentile_ci(data: tuple[np.ndarray, ...], statistic: Any, seed: int) -> tuple[float, float]:
    """Percentile bootstrap CI resampling each array of `data` (repetitions) independently."""
    if all(np.all(d == d[0]) for d in data):
        value = float(statistic(*data, axis=-1))
        return value, value
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns that 2 or 3 repetitions are few: we do too
        from scipy import stats as sps

        res = sps.bootstrap(
            data,
            statistic,
            n_resamples=RESAMPLES,
            confidence_level=CONFIDENCE,
            method="percentile",
            vectorized=True,
            rng=np.random.default_rng(seed),
        )
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def _median(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.median(x, axis=axis)


def repetition_figures(groups: Sequence[Sequence[float]]) -> list[float]:
    """Each repetition's median: the per-process figures every statistic starts from."""
    return [float(np.median(g)) for g in _groups(groups)]


def summarize(groups: Sequence[Sequence[float]], *, seed: int = 0) -> Summary:
    """Summary of a series given as one sequence of samples per repetition."""
    arrays = _groups(groups)
    medians = np.array([np.median(a) for a in arrays])
    pooled = np.concatenate(arrays)
    tails = [percentile_nearest_rank(a, 0.99) for a in arrays if a.size >= TAIL_MIN_SAMPLES]
    centre = float(np.median(medians))
    spread = float(np.std(medians, ddof=1)) if medians.size >= 2 else 0.0
    if medians.size >= 2:
        ci_low, ci_high = _percentile_ci((medians,), _median, seed)
    else:
        ci_low = ci_high = centre
    return Summary(
        n=int(pooled.size),
        repetitions=int(medians.size),
        min=float(pooled.min()),
        median=centre,
        mean=float(pooled.mean()),
        # Every repetition must support a tail, or a short one would hide behind the others.
        p99=float(np.median(tails)) if len(tails) == len(arrays) else None,
        max=float(pooled.max()),
        cv=spread / abs(float(medians.mean())) if medians.mean() != 0 else 0.0,
        ci_low=ci_low,
        ci_high=ci_high,
        outliers=sum(mad_outliers(medians.tolist())),
    )


def sample_warnings(
    summary: Summary, *, cv_limit: float = 0.10, min_repetitions: int = 3
) -> list[StatWarning]:
    warnings_ = []
    if summary.cv > cv_limit:
        warnings_.append(
            StatWarning(
                WarningKind.HIGH_CV,
                f"repetition medians vary by {summary.cv:.1%} (coefficient of variation, "
                f"limit {cv_limit:.1%})",
            )
        )
    if summary.repetitions < min_repetitions:
        warnings_.append(
            StatWarning(
                WarningKind.FEW_REPETITIONS,
                f"only {summary.repetitions} repetition(s): the CI rests on too few processes "
                f"(at least {min_repetitions} recommended)",
            )
        )
    if summary.outliers > 0:
        warnings_.append(
            StatWarning(
                WarningKind.OUTLIERS,
                f"{summary.outliers} of {summary.repetitions} repetitions have an outlying "
                "median (modified z-score > 3.5)",
            )
        )
    return warnings_


def environment_warnings(cpu: dict[str, Any]) -> list[StatWarning]:
    """Warnings from `tlsbench.core.machine.cpu_facts()`; missing keys count as unknown, not bad."""
    warnings_ = []
    if cpu.get("invariant_tsc", True) is False:
        warnings_.append(
            StatWarning(
                WarningKind.TSC_NOT_INVARIANT,
                "TSC not invariant: cycle figures drift with frequency",
            )
        )
    reasons = []
    governor = cpu.get("governor")
    if governor is not None and governor != "performance":
        reasons.append(f"frequency governor is {governor!r}, not 'performance'")
    if cpu.get("turbo") is True:
        reasons.append("turbo boost is on")
    if reasons:
        warnings_.append(StatWarning(WarningKind.FREQUENCY_SCALING, "; ".join(reasons)))
    virt = cpu.get("virtualization")
    if virt:
        warnings_.append(
            StatWarning(
                WarningKind.VIRTUAL_MACHINE,
                f"virtual machine ({virt}): steal time and shared caches add noise",
            )
        )
    return warnings_


def min_p_value(n_a: int, n_b: int) -> float:
    """The smallest two-sided p-value an exact Mann-Whitney test of n_a against n_b can give."""
    return min(1.0, 2.0 / math.comb(n_a + n_b, n_a))


def _ratio_of_medians(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.median(b, axis=axis) / np.median(a, axis=axis)


def compare_repetitions(
    a: Sequence[float],
    b: Sequence[float],
    *,
    lower_is_better: bool = True,
    threshold: float = DEFAULT_THRESHOLD,
    alpha: float = 0.05,
    seed: int = 0,
) -> Comparison:
    """Compare B against A, each given as one figure per repetition (e.g. its median).

    ratio = median(B) / median(A). The verdict is "faster"/"slower" only when the two-sided
    Mann-Whitney p-value is below `alpha`, the ratio's CI excludes 1, and the ratio is beyond
    1 +- `threshold`; "too few repetitions" when even complete separation could not reach
    `alpha`; "no difference" otherwise.
    """
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if not xa.size or not xb.size:
        raise ValueError("a comparison needs at least one repetition on each side")
    med_a = float(np.median(xa))
    if med_a == 0:
        raise ValueError("median of a is 0: the ratio is undefined")
    ratio = float(np.median(xb)) / med_a
    if xa.size >= 2 and xb.size >= 2:
        ci_low, ci_high = _percentile_ci((xa, xb), _ratio_of_medians, seed)
    else:
        ci_low = ci_high = ratio
    if min_p_value(xa.size, xb.size) >= alpha:
        return Comparison(ratio, ci_low, ci_high, None, threshold, TOO_FEW)
    if np.all(xa == xa[0]) and np.array_equal(np.unique(xa), np.unique(xb)):
        p_value = 1.0  # identical constant figures (e.g. instruction counts): nothing to test
    else:
        from scipy import stats as sps

        p_value = float(sps.mannwhitneyu(xa, xb, alternative="two-sided").pvalue)
    significant = p_value < alpha and not ci_low <= 1.0 <= ci_high
    if not significant or abs(ratio - 1.0) <= threshold:
        verdict = NO_DIFFERENCE
    elif (ratio > 1.0) == lower_is_better:
        verdict = SLOWER
    else:
        verdict = FASTER
    return Comparison(ratio, ci_low, ci_high, p_value, threshold, verdict)
