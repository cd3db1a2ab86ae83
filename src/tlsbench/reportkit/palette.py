"""One look per library line and variant, the same in every plot of every report.

A variant's colour comes from its library line (the part of its spec before `:`, e.g.
`mbedtls-3.6.6`), looked up in a fixed table by name, never from the run's order: mbedTLS
is blue in the quick run, in `libraries` and in a run of mbedTLS alone. Variants of one line
(`mbedtls-3.6.6`, `mbedtls-3.6.6:records-4096`) share the colour and differ by marker, line
style and bar hatch: the bare line takes the first style, a variant with options one of the
others, chosen by a hash of its options (deterministic, so equally stable).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, replace

# Twenty colours that stay apart from each other (matplotlib's tab10, then darker and
# lighter shades of other hues).
COLOURS = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
    "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173",
    "#000000", "#ffbb78", "#98df8a", "#c5b0d5", "#9edae5",
)  # fmt: skip

# Library lines by name prefix (the longest prefix that matches wins), each its own colour.
LINE_COLOURS = {
    "mbedtls-3.": "#1f77b4",
    "mbedtls-2.": "#17becf",
    "wolfssl": "#ff7f0e",
    "openssl-3.": "#d62728",
    "openssl-1.": "#843c39",
    "openssl-system": "#e377c2",
    "gnutls-3.": "#2ca02c",
    "gnutls-system": "#637939",
    "aws-lc": "#9467bd",
    "boringssl": "#8c564b",
    "rustls": "#bcbd22",
    "hacl-libcrux": "#7b4173",
    "hacl": "#8c6d31",
    "bearssl": "#393b79",
    "s2n-tls": "#ffbb78",
    "nss": "#c5b0d5",
    "botan": "#98df8a",
    "null": "#7f7f7f",
    "nginx": "#000000",  # a server program under load, beside the libraries' own servers
}
# Lines the table does not name (a local tree, a new pin) hash into the colours it leaves.
SPARE_COLOURS = tuple(c for c in COLOURS if c not in LINE_COLOURS.values())

# (marker, line style, hatch) per variant of a line; the first is the bare line's.
STYLES = (
    ("o", "-", ""),
    ("s", "--", "//"),
    ("^", ":", ".."),
    ("D", "-.", "xx"),
    ("v", (0, (5, 1)), "\\\\"),
    ("P", (0, (1, 3)), "++"),
    ("X", (0, (3, 1, 1, 1, 1, 1)), "--"),
    ("*", (0, (8, 2, 2, 2)), "oo"),
)
# Markers for further series of one variant in one plot (several cases of it), after STYLES'.
MORE_MARKERS = ("<", ">", "h", "p", "d", "8", "H")


@dataclass(frozen=True)
class Style:
    colour: str
    marker: str
    linestyle: str | tuple[int, tuple[int, ...]]
    hatch: str

    def line(self) -> dict[str, object]:
        """Keyword arguments of Axes.plot."""
        return {"color": self.colour, "marker": self.marker, "linestyle": self.linestyle}

    def bar(self) -> dict[str, object]:
        """Keyword arguments of Axes.bar / barh (the hatch drawn in white over the colour)."""
        return {"color": self.colour, "hatch": self.hatch, "edgecolor": "white"}


def _digest(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def split(variant: str) -> tuple[str, str]:
    """(line, options) of a variant as reports write it ("spec @ machine" in a report of
    several machines): `mbedtls-3.6.6:records-4096 @ a` -> (`mbedtls-3.6.6`, `records-4096`)."""
    spec = variant.split(" @ ")[0].strip()
    line, _, options = spec.partition(":")
    return line, options


def line_colour(line: str) -> str:
    """The colour of a library line: the table's, else a spare colour by the line's hash."""
    prefixes = [p for p in LINE_COLOURS if line.startswith(p)]
    if prefixes:
        return LINE_COLOURS[max(prefixes, key=len)]
    return SPARE_COLOURS[_digest(line) % len(SPARE_COLOURS)]


def style(variant: str) -> Style:
    """The look of a variant in every plot."""
    line, options = split(variant)
    index = 0 if not options else 1 + _digest(options) % (len(STYLES) - 1)
    marker, linestyle, hatch = STYLES[index]
    return Style(line_colour(line), marker, linestyle, hatch)


def server_style(server: str) -> Style:
    """A server under load: its variant's look, or nginx's (a program, not a library)."""
    return style("nginx" if server == "nginx" else server)


def series_styles(series: Iterable[tuple[str, str]]) -> dict[tuple[str, str], Style]:
    """Looks for the series of one plot, each a (variant, case) pair: a variant's first case
    takes its own look; each further case its colour with the first marker that no series of
    that colour in the plot has taken yet (a variant of the same line included), so that
    several cases of one library stay apart and keep their library's colour."""
    markers = [m for m, _, _ in STYLES] + list(MORE_MARKERS)
    looks: dict[tuple[str, str], Style] = {}
    taken: dict[str, set[str]] = {}
    keys = list(dict.fromkeys(series))
    for variant, case in keys:  # first the variants' own looks, whatever the order
        if not any(v == variant for v, _ in looks):
            looks[(variant, case)] = style(variant)
            taken.setdefault(looks[(variant, case)].colour, set()).add(style(variant).marker)
    for key in keys:
        if key in looks:
            continue
        own = style(key[0])
        used = taken.setdefault(own.colour, set())
        free = [m for m in markers if m not in used] or markers
        looks[key] = replace(own, marker=free[0])
        used.add(free[0])
    return {key: looks[key] for key in keys}
