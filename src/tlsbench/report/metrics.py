"""A run's figures as flat metrics, for the dashboards CI jobs feed (bmf.py, gab.py).

One metric per figure of the report's tables, named by variant, point and (where a figure
is per side or per operation) side: the same figures as the report, computed once by the
model, with their 95 % CI where the model has one. Rates (handshakes/s, MB/s) are marked
higher-is-better; everything else is lower-is-better.
"""

from __future__ import annotations

from dataclasses import dataclass

from tlsbench.report.model import RunModel


@dataclass(frozen=True)
class Metric:
    benchmark: str  # "VARIANT POINT[ SIDE]"
    measure: str  # a slug: "latency", "instructions", "heap-peak", ...
    unit: str
    value: float
    lower: float | None = None  # 95 % CI, where the report has one
    upper: float | None = None
    higher_is_better: bool = False


def metrics(model: RunModel) -> list[Metric]:
    out: list[Metric] = []
    for m in model.memory:
        name = f"{m.variant} {m.point} {m.side}"
        out += [Metric(name, "heap-peak", "bytes", m.peak_minus_start),
                Metric(name, "heap-retained", "bytes", m.retained_minus_start),
                Metric(name, "allocations", "allocations", m.handshake_allocs)]  # fmt: skip
        if m.stack is not None:
            out.append(Metric(name, "stack", "bytes", m.stack))
    for h in model.handshakes:
        name = f"{h.variant} {h.point}"
        out.append(Metric(name, "latency", "ns", h.ms * 1e6, h.ms_ci_low * 1e6,
                          h.ms_ci_high * 1e6))  # fmt: skip
        if h.handshakes_per_s is not None:
            out.append(Metric(name, "throughput", "handshakes/s", h.handshakes_per_s,
                              h.hps_ci_low, h.hps_ci_high, higher_is_better=True))  # fmt: skip
    for w in model.wire:
        name = f"{w.variant} {w.point} {w.handshake}"
        for side, value in (("client", w.client_bytes), ("server", w.server_bytes)):
            if value is not None:
                out.append(Metric(f"{name} {side}", "wire-bytes", "bytes", value))
        if w.round_trips is not None:
            out.append(Metric(name, "round-trips", "round trips", w.round_trips))
    for c in model.code_size:
        out.append(Metric(f"{c.variant} {c.point} {c.role} {c.target}", "code-size", "bytes",
                          c.total))  # fmt: skip
    for r in model.latency:
        name = f"{r.variant} {r.point} {r.op}"
        out.append(Metric(name, "latency", "ns", r.p50_ns, r.p50_ci_low_ns, r.p50_ci_high_ns))
        if r.allocs_per_record is not None:
            out.append(Metric(name, "allocations", "allocations", r.allocs_per_record))
    for t in model.throughput:
        name = f"{t.variant} {t.point}"
        out += [Metric(f"{name} sender", "throughput-mbps", "MB/s", t.sender_mbps,
                       t.sender_ci_low, t.sender_ci_high, higher_is_better=True),
                Metric(f"{name} receiver", "throughput-mbps", "MB/s", t.receiver_mbps,
                       t.receiver_ci_low, t.receiver_ci_high, higher_is_better=True)]  # fmt: skip
    for a in model.aead:
        out.append(Metric(f"{a.variant} {a.point} {a.aead} {a.payload}B", "cycles-per-byte",
                          "TSC cycles/byte", a.tsc_cycles_per_byte))  # fmt: skip
    for i in model.instructions:
        out.append(Metric(f"{i.variant} {i.point} {i.side}", "instructions", "instructions",
                          i.instructions))  # fmt: skip
    return out
