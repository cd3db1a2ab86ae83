"""What a TLS client and server link: the `code-size` scenario (codesize.py measures it).

A point builds the minimal client and server programs of drivers/embedded against the
variant's archives and reads text / data / bss with `size`; no driver runs, no key applies,
and the figures are the same in every mode and repetition. Only the libraries with such
programs (codesize.SOURCES) take the scenario.
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tlsbench.builds import codesize
from tlsbench.core.errors import UserError
from tlsbench.core.points import RunPoint
from tlsbench.driver.declaration import Declared
from tlsbench.driver.process import Outcome
from tlsbench.reportkit.metrics import Metric
from tlsbench.reportkit.reader import RunReader
from tlsbench.reportkit.section import Section, SummaryCell, TableSpec, first_per_variant
from tlsbench.reportkit.views import View, fmt_bytes, variant_cell
from tlsbench.scenarios.base import Family, PointChecker, RunContext

if TYPE_CHECKING:
    from tlsbench.builds.variants import Variant
    from tlsbench.reportkit.model import RunModel
    from tlsbench.reportkit.plots import Plot
    from tlsbench.reportkit.views import View


class CodeSize(Family):
    def driver_scenario(self, scenario: str) -> str | None:
        return None  # the runner measures it itself

    def accepts(self, scenario: str, declared: Declared) -> tuple[str, ...]:
        return ()

    def runs_on(self, variant: Variant) -> bool:
        return codesize.supported(variant.library)

    def check(self, checker: PointChecker, scenario: str, values: dict[str, Any],
              variant: Variant) -> None:  # fmt: skip
        if not self.runs_on(variant):
            allowed = (
                'with scenario = "code-size", a variant of mbedtls or wolfssl (the '
                "libraries with a minimal client and server program)"
            )
            raise checker.value_error("variant", variant.name, allowed)
        super().check(checker, scenario, values, variant)

    def run(self, point: RunPoint, ctx: RunContext) -> Outcome:
        """Text / data / bss of the minimal client and server programs linked against the
        variant's archives. Deterministic, so every repetition must agree; the runner
        measures it itself (no driver process), the same in every mode."""
        build = ctx.builds[point.variant]
        started = time.monotonic()
        try:
            rows = codesize.as_rows(build, codesize.measure(build))
        except (UserError, OSError, subprocess.CalledProcessError) as exc:
            message = str(exc)
            error = {"error": {"stage": "code size", "message": message}}
            return Outcome("failed", 1, None, time.monotonic() - started, error, message)
        output = {"schema": 1, "variant": build.variant.name, "library": build.variant.library,
                  "scenario": point.scenario, "params": {}, "code_size": rows,
                  "exit": 0}  # fmt: skip
        return Outcome("ok", 0, None, time.monotonic() - started, output, "")


# -- the report ------------------------------------------------------------------------------


@dataclass(frozen=True)
class CodeSizeRow:
    """Bytes of what one role's minimal program links (text / data / bss, as `size` says)."""

    variant: str
    library: str
    point: str
    target: str  # x86-64, i686, armhf, cortex-m7
    role: str  # client or server
    text: int
    data: int
    bss: int
    total: int
    identical: bool  # every repetition measured the same
    failed: str = ""  # "2 of 5 repetitions failed" where the figures rest on fewer
    machine: str = ""  # where the run spans several machines: the one(s) this row ran on


def load_code_size(reader: RunReader) -> dict[str, list[Any]]:
    rows = []
    for p in reader.points_of(FAMILY.scenarios, ok=False):
        outputs = [r.output for r in reader.ok(p) if r.output]
        if not outputs:
            continue
        measured = [o.get("code_size") or [] for o in outputs]
        for row in measured[0]:
            rows.append(
                CodeSizeRow(
                    variant=p.variant,
                    library=p.library,
                    point=p.name,
                    target=str(row.get("target", "")),
                    role=str(row["role"]),
                    text=int(row["text"]),
                    data=int(row["data"]),
                    bss=int(row["bss"]),
                    total=int(row["total"]),
                    identical=all(m == measured[0] for m in measured),
                )
            )
    return {"code_size": rows}


def code_size_plot(model: RunModel) -> Plot | None:
    """Stacked text / data / bss per variant and target, client and server side by side."""
    from tlsbench.reportkit.plots import Plot, figure, legend, wrap

    rows = model.code_size
    if not rows:
        return None
    fig = figure(11.0, 5.0)
    ax = fig.subplots()
    labels = list(dict.fromkeys(f"{r.variant} ({r.target})" for r in rows))
    width = 0.38
    parts = (("text", "tab:blue"), ("data", "tab:orange"), ("bss", "tab:green"))
    for i, role in enumerate(("client", "server")):
        by_label = {f"{r.variant} ({r.target})": r for r in rows if r.role == role}
        xs = [x for x, label in enumerate(labels) if label in by_label]
        bottom = [0.0] * len(xs)
        for part, colour in parts:
            heights = [float(getattr(by_label[labels[x]], part)) / 1024 for x in xs]
            ax.bar([x + (i - 0.5) * width for x in xs], heights, width * 0.95, bottom=bottom,
                   color=colour, alpha=1.0 if role == "client" else 0.55,
                   label=f"{part} ({role})")  # fmt: skip
            bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    ax.set_xticks(range(len(labels)), [wrap(label) for label in labels], fontsize="small")
    ax.set_ylabel("KiB")
    ax.grid(axis="y", alpha=0.3)
    legend(fig)
    ax.set_title("Code size of a minimal client (left) and server (right, lighter)")
    return Plot("code_size", "Code size", "code_size", fig)


def code_size_view(model: RunModel) -> list[View]:
    if not model.code_size:
        return []
    return [
        View(
            "code_size",
            "Code size (bytes)",
            "What a minimal TLS client and server program (context, certificate, handshake, "
            "one record each way) links from the variant's archives, built with -Os, "
            "-ffunction-sections -fdata-sections and --gc-sections so that only reachable "
            "code counts; `text` (code and constants), `data`, `bss`, as `size` reports "
            "them. `same` = every repetition measured the same bytes.",
            ["variant", "target", "role", "text", "data", "bss", "total", "same"],
            [False, False, False, True, True, True, True, False],
            [
                [variant_cell(r), r.target, r.role, fmt_bytes(r.text), fmt_bytes(r.data),
                 fmt_bytes(r.bss), fmt_bytes(r.total), "yes" if r.identical else "no"]
                for r in model.code_size
            ],
        )
    ]  # fmt: skip


def code_size_metrics(model: RunModel) -> list[Any]:
    return [Metric(c.variant, c.point, "code-size", "bytes", c.total, side=c.role,
                   detail=c.target) for c in model.code_size]  # fmt: skip


def code_size_summary(model: RunModel) -> list[SummaryCell]:
    """Per variant: its first client program's total bytes."""
    clients = [r for r in model.code_size if r.role == "client"]
    return [SummaryCell(r.variant, "client code bytes", float(r.total), fmt_bytes(r.total),
                        r.target) for r in first_per_variant(clients)]  # fmt: skip


FAMILY = CodeSize(
    "code-size",
    ("code-size",),
    sections=(
        Section("code_size", 30,
                (TableSpec("code_size", "code_size", "Code size (bytes)", CodeSizeRow),),
                load_code_size, views=code_size_view,
                plots=lambda model: [p] if (p := code_size_plot(model)) else [],
                metrics=code_size_metrics, summary=code_size_summary),
    ),
)  # fmt: skip
