"""The palette: a colour per library line and a marker / line style / hatch per variant of it,
the same in every plot, and no two series of one plot alike, for the variant sets of the
shipped `quick`, `libraries` and `capacity` experiments (synthetic figures: only the looks
are under test)."""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any

import pytest
from matplotlib.colors import to_hex
from matplotlib.container import BarContainer
from matplotlib.figure import Figure

from tlsbench.reportkit.contents import plots
from tlsbench.reportkit.model import RunInfo, RunModel
from tlsbench.reportkit.palette import COLOURS, LINE_COLOURS, line_colour, series_styles, style
from tlsbench.run import experiments
from tlsbench.scenarios import sections
from tlsbench.scenarios.aead import AeadRow
from tlsbench.scenarios.code_size import CodeSizeRow
from tlsbench.scenarios.connections import ConnectionRow
from tlsbench.scenarios.firmware import FirmwareRow
from tlsbench.scenarios.interop import InteropRow
from tlsbench.scenarios.load import LoadRow
from tlsbench.scenarios.tls_handshakes import HandshakeRow, MemoryRow
from tlsbench.scenarios.tls_records import LatencySamples, ThroughputRow

RUN = RunInfo(1, "palette", "?", "time", 3, "complete", "2025-11-22T06:50:00+00:00", None, "abc")


def make(row_type: type, **given: Any) -> Any:
    """A row with every field not given set to a plain value of its type."""
    hints = typing.get_type_hints(row_type)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(row_type):
        if f.name in given or f.default is not dataclasses.MISSING:
            continue
        hint = hints[f.name]
        kinds = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
        kind = next(k for k in kinds if k is not type(None))
        values[f.name] = {str: "x", int: 1, float: 1.0, bool: False}.get(kind, [1.0, 2.0])
    return row_type(**{**values, **given})


def experiment_variants(name: str) -> list[str]:
    """The variants an experiment's points run (and its interop peers)."""
    points = experiments.load(name).points
    found = [p.variant for p in points] + [str(p.options["peer"]) for p in points
                                           if p.options.get("peer")]  # fmt: skip
    return list(dict.fromkeys(found))


def synthetic(variants: list[str], load_points: list[Any]) -> RunModel:
    """A model with, per variant, a handshake, heap at two record sizes, record samples, an
    AEAD row, bulk throughput, memory per connection at two N, code size, a firmware image and
    handshakes over an emulated network (two key shares at two RTTs: two lines of one
    variant), and a load row per load point at two connection counts."""
    figures: dict[str, list[Any]] = {
        "handshakes": [make(HandshakeRow, variant=v, scenario="handshake", case="c", ms=1.0 + i)
                       for i, v in enumerate(variants)],
        "memory": [make(MemoryRow, variant=v, line=v, case="c", side=side, record_size=size)
                   for v in variants for side in ("client", "server") for size in (4096, 16384)],
        "latency_samples": [make(LatencySamples, variant=v, payload=256) for v in variants],
        "aead": [make(AeadRow, variant=v, aead="AES-128-GCM", payload=size)
                 for v in variants for size in (16, 16384)],
        "load": [make(LoadRow, variant=p.variant, point=p.name, result="ok", case="default",
                      server="nginx" if p.options.get("server") == "nginx" else p.variant,
                      client=str(p.options.get("client", p.variant)),
                      pattern=str(p.options.get("pattern", "new")), connections=c, tps=100.0,
                      p99_us=1000.0)
                 for p in load_points for c in (1, 16)],
        "throughput": [make(ThroughputRow, variant=v, case="c", sender_mbps=100.0 + i,
                            receiver_mbps=90.0 + i) for i, v in enumerate(variants)],
        "connections": [make(ConnectionRow, variant=v, case="c", connections=n,
                             release_buffers=False, client_heap=1000.0 * n, server_heap=900.0,
                             rss=2000.0)
                        for v in variants for n in (1, 100)],
        "code_size": [make(CodeSizeRow, variant=v, target="x86-64", role=role, text=100_000,
                           data=1000, bss=100)
                      for v in variants for role in ("client", "server")],
        "firmware": [make(FirmwareRow, variant=v, core="cortex-m4", job="TLS 1.3",
                          side="client", ms_low=10.0 + i, ms_high=20.0 + i)
                     for i, v in enumerate(variants)],
        "interop": [make(InteropRow, variant=v, client=v, server=v, result="ok",
                         case=f"{group} RTT {rtt:g} ms", line=group, rtt_ms=rtt, loss=0.0,
                         client_wall_ms=3 * rtt + i, client_wall_p90_ms=4 * rtt + i)
                    for i, v in enumerate(variants) for group in ("x25519", "X25519MLKEM768")
                    for rtt in (5.0, 80.0)],
    }  # fmt: skip
    return RunModel(run=RUN, figures=figures, variants=variants, sections=sections())


def series_looks(fig: Figure) -> dict[str, list[tuple[Any, ...]]]:
    """Per axes: the look of each labelled line (colour, marker, line style) and bar series
    (colour, hatch)."""
    out: dict[str, list[tuple[Any, ...]]] = {}
    for i, ax in enumerate(fig.axes):
        looks = [
            (to_hex(line.get_color()), line.get_marker(), str(line.get_linestyle()))
            for line in ax.get_lines()
            if not line.get_label().startswith("_")
        ]
        for container in ax.containers:
            if isinstance(container, BarContainer) and container.patches:
                patch = container.patches[0]
                looks.append(
                    (to_hex(patch.get_facecolor(), keep_alpha=True), patch.get_hatch() or "")
                )
        out[f"axes {i} {ax.get_title()}"] = looks
    return out


@pytest.mark.parametrize("name", ["quick", "libraries", "capacity"])
def test_no_two_series_of_a_plot_look_alike(name: str) -> None:
    variants = experiment_variants(name)
    load_points = [p for p in experiments.load(name).points if p.scenario == "load"]
    model = synthetic(variants, load_points)
    drawn = plots(model)
    assert drawn, "no plot drawn"
    for plot in drawn:
        for axes, looks in series_looks(plot.figure).items():
            alike = {look for look in looks if looks.count(look) > 1}
            assert not alike, f"{name}: {plot.name} {axes}: series share a look {alike}"


@pytest.mark.parametrize("name", ["quick", "libraries", "capacity"])
def test_variants_of_an_experiment_each_have_their_own_look(name: str) -> None:
    looks = {v: (style(v).colour, style(v).marker) for v in experiment_variants(name)}
    assert len(set(looks.values())) == len(looks), looks


def test_a_variant_looks_the_same_whatever_the_run() -> None:
    """By its name, not its place in the run: alone, among others, in any order, on any
    machine."""
    alone = style("mbedtls-3.6.6")
    assert style("mbedtls-3.6.6 @ host-a") == alone
    assert style("mbedtls-3.6.6:records-4096").colour == alone.colour  # one line, one colour
    assert style("mbedtls-3.6.6:records-4096").marker != alone.marker
    lines = ["mbedtls-3.6.6", "wolfssl-5.7.2", "openssl-3.5.x", "gnutls-3.8.x", "boringssl-5.4.0",
             "aws-lc-5.12.0", "rustls-ffi-0.15.7", "openssl-1.1.1w"]  # fmt: skip
    a = synthetic(lines, [])
    b = synthetic([*reversed(lines), "mbedtls-2.28.x"], [])
    for model in (a, b):
        handshake = next(p for p in plots(model) if p.name == "handshake_time")
        bars = {c.get_label(): to_hex(c.patches[0].get_facecolor())
                for c in handshake.figure.axes[0].containers
                if isinstance(c, BarContainer)}  # fmt: skip
        assert bars["mbedtls-3.6.6"] == line_colour("mbedtls-3.6.6") == "#1f77b4"
        assert bars["boringssl-5.4.0"] != bars["mbedtls-3.6.6"]


def test_the_table_has_sixteen_distinct_colours_and_one_per_line() -> None:
    assert len(set(COLOURS)) == len(COLOURS) >= 16
    assert len(set(LINE_COLOURS.values())) == len(LINE_COLOURS)
    assert set(LINE_COLOURS.values()) <= set(COLOURS)
    assert line_colour("hacl-libcrux-0.0.2-alpha.3") != line_colour("hacl-0.1.0")
    assert line_colour("some-new-library-1.0") in COLOURS  # unknown lines: a spare colour


def test_a_plot_with_one_x_value_is_not_a_line() -> None:
    """Heap against record size at a single record size: no line of one point."""
    model = synthetic(["mbedtls-3.6.6", "wolfssl-5.7.2"], [])
    model.figures["memory"] = [r for r in model.memory if r.record_size == 4096]
    assert "heap_vs_record_size" not in [p.name for p in plots(model)]


def test_several_cases_of_one_variant_keep_its_colour_and_differ_by_marker() -> None:
    """Lines per (variant, case), as in handshake time against RTT: a variant's first case is
    drawn as the variant everywhere else, further cases take markers that no series of that
    colour has (a variant of the same line included)."""
    series = [(v, case) for v in ("mbedtls-3.6.6", "mbedtls-3.6.6:records-4096", "wolfssl-5.7.2")
              for case in ("x25519", "X25519MLKEM768", "secp256r1")]  # fmt: skip
    looks = series_styles(series)
    assert looks[("wolfssl-5.7.2", "x25519")] == style("wolfssl-5.7.2")
    assert looks[("mbedtls-3.6.6:records-4096", "x25519")] == style("mbedtls-3.6.6:records-4096")
    assert {looks[(v, c)].colour for v, c in series if v.startswith("mbedtls")} == {"#1f77b4"}
    pairs = [(look.colour, look.marker) for look in looks.values()]
    assert len(set(pairs)) == len(pairs), pairs
