"""`tlsbench report`: a run of the results store as markdown, CSV, JSON, HTML and plots.

    from tlsbench.report import load_run, export, write_report
    model = load_run(Store(path), "latest")        # or a run id
    text = export(model, "markdown")                # "markdown" | "csv" | "json" | "html"
    text = export(model, "bmf")                     # "bmf" | "gab": figures for a dashboard
    export(model, "html", Path("report.html"))      # also writes the file
    write_report(model, Path("out"))                # report.{md,csv,json,html} + plots/

`model` (tlsbench.reportkit.model) computes every figure once; `views` formats them for
reading; one module per format implements `base.Exporter`; `plots` draws with matplotlib.
"""

from __future__ import annotations

import functools
import importlib
from pathlib import Path
from typing import Any

from tlsbench.core.errors import UserError
from tlsbench.core.store import Store
from tlsbench.report.base import Exporter
from tlsbench.reportkit import model as kit
from tlsbench.reportkit.model import RunModel
from tlsbench.scenarios import sections

# Each format's exporter: its module and class, imported on first use (HTML draws plots with
# matplotlib, which a process that writes Markdown, or runs experiments, never needs).
_EXPORTER_CLASSES = {
    "markdown": ("markdown", "MarkdownExporter"),
    "csv": ("csv", "CsvExporter"),
    "csv-wide": ("csv", "WideCsvExporter"),
    "json": ("json", "JsonExporter"),
    "html": ("html", "HtmlExporter"),
    "bmf": ("bmf", "BmfExporter"),
    "gab": ("gab", "GabExporter"),
}
NAMES = tuple(_EXPORTER_CLASSES)


@functools.cache
def exporter(fmt: str) -> Exporter | None:
    """The exporter of a format, None for an unknown one."""
    if fmt not in _EXPORTER_CLASSES:
        return None
    module, cls = _EXPORTER_CLASSES[fmt]
    made: Exporter = getattr(importlib.import_module(f"tlsbench.report.{module}"), cls)()
    return made


def __getattr__(name: str) -> Any:
    if name == "EXPORTERS":  # every exporter, by name
        return {fmt: exporter(fmt) for fmt in NAMES}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# The report's own formats (write_report writes these); bmf and gab are figures for a
# dashboard, written on request.
FORMATS = ("markdown", "csv", "json", "html")

__all__ = ["EXPORTERS", "FORMATS", "NAMES", "Exporter", "RunModel", "export", "exporter",
           "load_run", "load_runs", "write_report"]  # fmt: skip


def load_run(store: Store, run_id: int | str = "latest") -> RunModel:
    """Run `run_id` (a number or "latest") of `store`, with every family's sections: the
    report's assembly is where the kit (src/tlsbench/reportkit/) meets the families."""
    return kit.load_run(store, run_id, sections())


def load_runs(store: Store, run_ids: list[int | str]) -> RunModel:
    """Several runs side by side, each figure row labelled `variant @ machine`."""
    return kit.load_runs(store, run_ids, sections())


def export(model: RunModel, fmt: str, out_path: Path | None = None) -> str:
    """The report in format `fmt`; also written to `out_path` when one is given."""
    made = exporter(fmt)
    if made is None:
        raise UserError(f"unknown report format {fmt!r}; choose one of: {', '.join(FORMATS)}")
    text = made.render(model)
    if out_path is not None:
        if out_path.is_dir():
            example = out_path / f"report.{'md' if fmt == 'markdown' else fmt}"
            raise UserError(f"--out {out_path} is a directory; give a file name, e.g. {example}")
        try:
            out_path.parent.mkdir(parents=True, exist_ok=True)
            out_path.write_text(text, encoding="utf-8")
        except OSError as exc:  # a read-only or missing place: choose another --out
            raise UserError(
                f"--out {out_path}: cannot write the report there ({exc.strerror or exc}); "
                "choose another --out"
            ) from exc
    return text


def write_report(model: RunModel, out_dir: Path, formats: tuple[str, ...] = FORMATS) -> list[Path]:
    """report.<suffix> per format and plots/NAME.{png,svg} in out_dir; the files written."""
    from tlsbench.reportkit.contents import write_plots  # matplotlib only when plots are wanted

    written = []
    for fmt in formats:
        made = exporter(fmt)
        assert made is not None
        path = out_dir / f"report{made.suffix}"
        export(model, fmt, path)
        written.append(path)
    return written + write_plots(model, out_dir / "plots")
