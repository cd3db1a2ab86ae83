"""Tables as people read them: the columns engineers publish, numbers formatted for reading.

Markdown and HTML render these views; CSV and JSON export the model's raw rows instead, so
that no precision is lost there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

SIGNIFICANT = 3  # digits kept for times and rates: more than a benchmark can resolve anyway


@dataclass(frozen=True)
class View:
    name: str  # the model table it shows
    title: str
    intro: str  # one sentence on what the figures are
    headers: list[str]
    numeric: list[bool]  # right-aligned columns
    rows: list[list[str]]
    # (heading, preformatted text) shown after the table, e.g. a failed point's stderr tail
    # ("stderr of VARIANT POINT") or a variant's config file
    details: list[tuple[str, str]] = field(default_factory=list)
    # Per cell, text shown on hover in HTML (same shape as rows; "" for none).
    titles: list[list[str]] = field(default_factory=list)


def fmt_bytes(value: float | None) -> str:
    """Whole bytes with thousands separators: 16536 -> 16,536."""
    return "-" if value is None else f"{value:,.0f}"


def p99_cell(value: float | None) -> str:
    return "n too small" if value is None else fmt_sig(value)


def fmt_sig(value: float | None, digits: int = SIGNIFICANT) -> str:
    """`digits` significant digits, never fewer than the integer part: 0.01234 -> 0.0123,
    1.234 -> 1.23, 123.4 -> 123, 12345.6 -> 12,346."""
    if value is None or not math.isfinite(value):
        return "-"
    if value == 0:
        return "0"
    if abs(value) >= 10 ** (digits - 1) - 0.5:
        return f"{value:,.0f}"
    # Round to significant digits first, so that a carry (9.996 -> 10.0) sets the decimals.
    rounded = float(f"{value:.{digits - 1}e}")
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(rounded))))
    return f"{rounded:,.{decimals}f}"


def fmt_count(value: float | None) -> str:
    """Counts (allocations): whole when whole, else two decimals."""
    if value is None:
        return "-"
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}"


def fmt_ci(low: float | None, high: float | None) -> str:
    return f"{fmt_sig(low)} - {fmt_sig(high)}"


def fmt_range(low: float | None, high: float | None) -> str:
    """A projection: 794-1,191 (a range), or one figure where both ends read the same (the
    cycle model's)."""
    if low is None or high is None:
        return "-"
    shown = fmt_sig(low), fmt_sig(high)
    return shown[0] if shown[0] == shown[1] else f"{shown[0]}-{shown[1]}"


def fmt_kib(value: float | None) -> str:
    return "-" if value is None else f"{value / 1024:,.1f}"


def fmt_size(value: int | None) -> str:
    return "default" if not value else f"{value:,}"


def variant_cell(row: Any) -> str:
    """The variant cell, marked where the row's figures rest on fewer repetitions, and with
    its machine where the run spans several."""
    failed = getattr(row, "failed", "")
    machine = getattr(row, "machine", "")
    variant = str(row.variant)
    if machine and not variant.endswith(f" @ {machine}"):  # a report of several runs has it
        variant += f" @ {machine}"
    return variant + (f" (partial: {failed})" if failed else "")
