"""Statistics for benchmark samples: summaries, outliers, warnings and A/B comparison.

Standard library only. Bootstrap confidence intervals are percentile bootstraps of the median
(95 %, linear interpolation between order statistics of the bootstrap distribution).

Drawing a bootstrap resample of size n and taking its median costs O(n) per resample in Python,
far too slow for 10 000 samples x 2 000 resamples. The median of a resample is, however, fully
determined by the order statistics of the n resampled *indices* into the sorted data, and the
k-th smallest of n uniform indices ``floor(n * U)`` is ``floor(n * U_(k))`` with
``U_(k) ~ Beta(k, n + 1 - k)``; for an even n, ``U_(k+1) = U_(k) + (1 - U_(k)) * Beta(1, n - k)``
(the minimum of the remaining n - k uniforms above ``U_(k)``). Sampling those directly gives the
exact bootstrap distribution of the median in O(1) per resample.
"""

from __future__ import annotations

import math
import random
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

CONFIDENCE = 0.95
MAD_SCALE = 0.6745  # Iglewicz & Hoaglin modified z-score, as in hyperfine


@dataclass(frozen=True)
class Summary:
    n: int
    min: float
    median: float
    mean: float
    p99: float
    max: float
    stdev: float
    cv: float
    ci_low: float
    ci_high: float
    outliers: int


class WarningKind(StrEnum):
    """A str (and Enum): compares equal to its value and serialises to JSON as-is."""

    HIGH_CV = "high_cv"
    FEW_SAMPLES = "few_samples"
    OUTLIERS = "outliers"
    TSC_NOT_INVARIANT = "tsc_not_invariant"
    FREQUENCY_SCALING = "frequency_scaling"
    VIRTUAL_MACHINE = "virtual_machine"


@dataclass(frozen=True)
class StatWarning:
    kind: WarningKind
    message: str


@dataclass(frozen=True)
class MannWhitney:
    u: float
    p_value: float


@dataclass(frozen=True)
class Comparison:
    ratio: float
    ci_low: float
    ci_high: float
    p_value: float
    verdict: str


def _require(samples: Sequence[float], name: str = "samples") -> list[float]:
    values = [float(x) for x in samples]
    if not values:
        raise ValueError(f"{name} is empty")
    return values


def _median_sorted(xs: Sequence[float]) -> float:
    n = len(xs)
    mid = n // 2
    return xs[mid] if n % 2 else (xs[mid - 1] + xs[mid]) / 2.0


def percentile_nearest_rank(sorted_xs: Sequence[float], q: float) -> float:
    """The ceil(q*n)-th smallest value (same formula as drivers/core/measure.c)."""
    rank = math.ceil(q * len(sorted_xs))
    return sorted_xs[max(rank, 1) - 1]


def _quantile_linear(sorted_xs: Sequence[float], q: float) -> float:
    """Quantile with linear interpolation between order statistics (numpy's default)."""
    pos = q * (len(sorted_xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_xs) - 1)
    return sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * (pos - lo)


def _bootstrap_medians(
    sorted_xs: Sequence[float], rng: random.Random, resamples: int
) -> list[float]:
    """Medians of `resamples` bootstrap resamples of `sorted_xs` (see the module docstring)."""
    n = len(sorted_xs)
    if n == 1:
        return [sorted_xs[0]] * resamples
    last = n - 1
    out = []
    if n % 2:
        k = (n + 1) // 2
        for _ in range(resamples):
            u = rng.betavariate(k, n + 1 - k)
            out.append(sorted_xs[min(int(n * u), last)])
    else:
        k = n // 2
        for _ in range(resamples):
            u1 = rng.betavariate(k, n + 1 - k)
            u2 = u1 + (1.0 - u1) * rng.betavariate(1, n - k)
            i, j = min(int(n * u1), last), min(int(n * u2), last)
            out.append((sorted_xs[i] + sorted_xs[j]) / 2.0)
    return out


def _ci(stats: list[float]) -> tuple[float, float]:
    stats.sort()
    tail = (1.0 - CONFIDENCE) / 2.0
    return _quantile_linear(stats, tail), _quantile_linear(stats, 1.0 - tail)


def _check_resamples(resamples: int) -> None:
    if resamples < 1:
        raise ValueError("resamples must be >= 1")


def mad_outliers(samples: Sequence[float], threshold: float = 3.5) -> list[bool]:
    """Flag x when |0.6745 * (x - median) / MAD| > threshold; no flags when MAD == 0."""
    values = [float(x) for x in samples]
    if not values:
        return []
    med = statistics.median(values)
    mad = statistics.median([abs(x - med) for x in values])
    if mad == 0:
        return [False] * len(values)
    return [abs(MAD_SCALE * (x - med) / mad) > threshold for x in values]


def summarize(samples: Sequence[float], *, seed: int = 0, resamples: int = 2000) -> Summary:
    values = _require(samples)
    _check_resamples(resamples)
    xs = sorted(values)
    n = len(xs)
    median = _median_sorted(xs)
    mean = statistics.fmean(xs)
    stdev = statistics.stdev(xs) if n >= 2 else 0.0
    cv = stdev / mean if mean != 0 else 0.0
    if n == 1:
        ci_low = ci_high = xs[0]
    else:
        ci_low, ci_high = _ci(_bootstrap_medians(xs, random.Random(seed), resamples))
    return Summary(
        n=n,
        min=xs[0],
        median=median,
        mean=mean,
        p99=percentile_nearest_rank(xs, 0.99),
        max=xs[-1],
        stdev=stdev,
        cv=cv,
        ci_low=ci_low,
        ci_high=ci_high,
        outliers=sum(mad_outliers(xs)),
    )


def sample_warnings(
    summary: Summary, *, cv_limit: float = 0.10, min_samples: int = 5
) -> list[StatWarning]:
    warnings = []
    if summary.cv > cv_limit:
        warnings.append(
            StatWarning(
                WarningKind.HIGH_CV,
                f"coefficient of variation {summary.cv:.1%} exceeds {cv_limit:.1%}",
            )
        )
    if summary.n < min_samples:
        warnings.append(
            StatWarning(
                WarningKind.FEW_SAMPLES,
                f"only {summary.n} samples (at least {min_samples} recommended)",
            )
        )
    if summary.outliers > 0:
        warnings.append(
            StatWarning(
                WarningKind.OUTLIERS,
                f"{summary.outliers} of {summary.n} samples are outliers (modified z-score > 3.5)",
            )
        )
    return warnings


def environment_warnings(cpu: dict[str, Any]) -> list[StatWarning]:
    """Warnings from `tlsbench.doctor.cpu_facts()`; missing keys count as unknown, not bad."""
    warnings = []
    if cpu.get("invariant_tsc", True) is False:
        warnings.append(
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
        warnings.append(StatWarning(WarningKind.FREQUENCY_SCALING, "; ".join(reasons)))
    virt = cpu.get("virtualization")
    if virt:
        warnings.append(
            StatWarning(
                WarningKind.VIRTUAL_MACHINE,
                f"virtual machine ({virt}): steal time and shared caches add noise",
            )
        )
    return warnings


def _ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties get the average rank."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        avg = (i + j) / 2.0 + 1.0
        for m in range(i, j + 1):
            ranks[order[m]] = avg
        i = j + 1
    return ranks


def mann_whitney(a: Sequence[float], b: Sequence[float]) -> MannWhitney:
    """Two-sided Mann-Whitney U test (U of `a`), normal approximation with tie and continuity
    correction, like scipy.stats.mannwhitneyu(method='asymptotic', use_continuity=True)."""
    xa, xb = _require(a, "a"), _require(b, "b")
    n1, n2 = len(xa), len(xb)
    n = n1 + n2
    ranks = _ranks(xa + xb)
    u1 = sum(ranks[:n1]) - n1 * (n1 + 1) / 2.0
    u2 = n1 * n2 - u1
    tie_term = sum(t**3 - t for t in Counter(xa + xb).values())
    var = n1 * n2 / 12.0 * ((n + 1) - tie_term / (n * (n - 1)))
    if var <= 0:
        return MannWhitney(u=u1, p_value=1.0)
    z = (max(u1, u2) - n1 * n2 / 2.0 - 0.5) / math.sqrt(var)
    p = min(1.0, math.erfc(z / math.sqrt(2.0)))  # 2 * sf(z)
    return MannWhitney(u=u1, p_value=p)


def _ratio(num: float, den: float) -> float:
    if den == 0:
        return 1.0 if num == 0 else math.copysign(math.inf, num)
    return num / den


def compare(
    a: Sequence[float],
    b: Sequence[float],
    *,
    lower_is_better: bool = True,
    alpha: float = 0.05,
    seed: int = 0,
    resamples: int = 2000,
) -> Comparison:
    """Compare B against A: ratio = median(B) / median(A) with a bootstrap CI and a verdict."""
    xa, xb = sorted(_require(a, "a")), sorted(_require(b, "b"))
    _check_resamples(resamples)
    med_a = _median_sorted(xa)
    if med_a == 0:
        raise ValueError("median of a is 0: the ratio is undefined")
    ratio = _median_sorted(xb) / med_a
    rng = random.Random(seed)
    boot_a = _bootstrap_medians(xa, rng, resamples)
    boot_b = _bootstrap_medians(xb, rng, resamples)
    ci_low, ci_high = _ci([_ratio(mb, ma) for ma, mb in zip(boot_a, boot_b, strict=True)])
    p_value = mann_whitney(xa, xb).p_value
    if p_value >= alpha or ci_low <= 1.0 <= ci_high:
        verdict = "no difference"
    elif (ratio > 1.0) == lower_is_better:
        verdict = "slower"
    else:
        verdict = "faster"
    return Comparison(ratio=ratio, ci_low=ci_low, ci_high=ci_high, p_value=p_value, verdict=verdict)
