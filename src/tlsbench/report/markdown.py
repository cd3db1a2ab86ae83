"""Markdown report: the tables engineers paste into issues and design notes."""

from __future__ import annotations

from tlsbench.reportkit.contents import views
from tlsbench.reportkit.model import RunModel
from tlsbench.reportkit.views import View


def _cell(text: str) -> str:
    # A pipe would end the cell and a newline the row.
    return text.replace("|", "\\|").replace("\n", " ")


def table(view: View) -> str:
    lines = [
        "| " + " | ".join(_cell(h) for h in view.headers) + " |",
        "| " + " | ".join("---:" if n else "---" for n in view.numeric) + " |",
    ]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in view.rows]
    return "\n".join(lines)


class MarkdownExporter:
    name = "markdown"
    suffix = ".md"

    def render(self, model: RunModel) -> str:
        run = model.run
        runs = ", ".join(str(r.id) for r in model.runs) if len(model.runs) > 1 else None
        parts = [f"# tlsbench report: {f'runs {runs}' if runs else f'run {run.id}'}, "
                 f"experiment `{run.experiment}`"]  # fmt: skip
        if run.question:
            parts.append(f"> {run.question}")
        for view in views(model):
            parts.append(f"## {view.title}")
            if view.intro:
                parts.append(view.intro)
            parts.append(table(view))
            for heading, text in view.details:
                parts.append(f"{_cell(heading)}:\n\n```text\n{text.rstrip()}\n```")
        return "\n\n".join(parts) + "\n"
