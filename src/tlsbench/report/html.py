"""HTML: one self-contained page with every table, every plot and the environment.

Nothing is fetched: CSS and a small script are inline, plots are inline SVG, and a
Content-Security-Policy forbids any other source, so the page reads the same offline, in a
mail attachment or years later. After load, the script checks that every plot rendered with
a non-zero size and appends " [plots ok: N]" to the title (what the headless browser test
reads back).
"""

from __future__ import annotations

from html import escape

from tlsbench.reportkit.contents import plots, views
from tlsbench.reportkit.model import RunModel
from tlsbench.reportkit.plots import Plot, inline_svg, svg_text
from tlsbench.reportkit.views import View

CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1200px;
       padding: 0 1em; color: #1b1b1b; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
blockquote { margin: 0.5em 0; padding-left: 1em; border-left: 3px solid #aac; color: #333; }
/* A wide table scrolls inside its own box, not the page; a tall one within the window's
   height, its header staying in view. */
div.table { overflow: auto; max-height: 85vh; max-width: 100%; margin: 0.6em 0;
            border: 1px solid #e4e4e4; }
table { border-collapse: separate; border-spacing: 0; font-variant-numeric: tabular-nums; }
th, td { border: solid #d0d0d0; border-width: 0 1px 1px 0; padding: 0.2em 0.6em;
         vertical-align: top; }
thead th { position: sticky; top: 0; z-index: 1; }
th { background: #f2f2f2; text-align: left; }
details.long > summary { cursor: pointer; color: #124; margin: 0.4em 0; }
pre, blockquote, p { overflow-wrap: anywhere; }
td.num, th.num { text-align: right; }
td.num { white-space: nowrap; }  /* a figure never breaks; its header may */
td:first-child { white-space: nowrap; }  /* variant specs break badly at their hyphens */
tbody tr:nth-child(even) { background: #fafafa; }
figure.plot { margin: 1em 0; }
figure.plot svg { max-width: 100%; height: auto; }
figure.plot.broken { outline: 3px solid #c00; }
figcaption { color: #555; font-size: 0.9em; }
td.result-ok { background: #d9f2d9; text-align: center; }
td.result-failed { background: #f8d0d0; text-align: center; }
td.result-finding { background: #f8e6c8; text-align: center; }
td.result-unsupported { background: #ececec; color: #666; text-align: center; }
pre { background: #f6f6f6; padding: 0.6em; overflow-x: auto; font-size: 0.85em;
      white-space: pre-wrap; }  /* long lines wrap: stderr tails and case lists read whole */
"""

# Counts the plots that really rendered: an <svg> whose drawing has an extent, or an <img>
# that decoded; the count ends the title so that a headless browser can report it.
SCRIPT = """
window.addEventListener("load", function () {
  var ok = 0;
  document.querySelectorAll("figure.plot").forEach(function (figure) {
    var el = figure.querySelector("svg, img");
    var rendered = false;
    if (el && el.tagName.toLowerCase() === "img") {
      rendered = el.complete && el.naturalWidth > 0 && el.getBoundingClientRect().width > 0;
    } else if (el) {
      var box = el.getBoundingClientRect();
      var drawing = el.getBBox();
      rendered = box.width > 0 && box.height > 0 && drawing.width > 0 && drawing.height > 0;
    }
    if (rendered) { ok += 1; } else { figure.classList.add("broken"); }
  });
  document.title = document.title + " [plots ok: " + ok + "]";
});
"""


LONG_TABLE_ROWS = 25  # a table of more rows is folded (<details>) until opened

# Interop grid cells by result (the detail is the cell's hover text).
RESULT_CLASSES = {"✓": "result-ok", "✗ unexplained": "result-failed",
                  "✗ finding": "result-finding", "unsupported": "result-unsupported"}  # fmt: skip


def _table(view: View) -> str:
    def cls(i: int) -> str:
        return ' class="num"' if view.numeric[i] else ""

    def cell(r: int, i: int, text: str) -> str:
        attrs = cls(i)
        if text in RESULT_CLASSES:  # interop grid: coloured by result
            attrs = f' class="{RESULT_CLASSES[text]}"'
        title = view.titles[r][i] if r < len(view.titles) and i < len(view.titles[r]) else ""
        if title:
            attrs += f' title="{escape(title)}"'
        return f"<td{attrs}>{escape(text)}</td>"

    head = "".join(f"<th{cls(i)}>{escape(h)}</th>" for i, h in enumerate(view.headers))
    body = "\n".join(
        "<tr>" + "".join(cell(r, i, c) for i, c in enumerate(row)) + "</tr>"
        for r, row in enumerate(view.rows)
    )
    table = (
        f'<div class="table"><table id="table-{escape(view.name)}" '
        f'data-table="{escape(view.name)}">\n'
        f"<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n</table></div>"
    )
    if len(view.rows) <= LONG_TABLE_ROWS:
        return table
    # A long table is folded: the page's outline stays readable, the rows one click away.
    return (f'<details class="long"><summary>{len(view.rows)} rows: show the table'
            f"</summary>\n{table}\n</details>")  # fmt: skip


def _figure(plot: Plot, index: int) -> str:
    svg = inline_svg(svg_text(plot.figure), f"plot{index}-")
    return (
        f'<figure class="plot" data-plot="{escape(plot.name)}">\n{svg}\n'
        f"<figcaption>{escape(plot.title)}</figcaption>\n</figure>"
    )


class HtmlExporter:
    name = "html"
    suffix = ".html"

    def render(self, model: RunModel) -> str:
        run = model.run
        runs = ", ".join(str(r.id) for r in model.runs) if len(model.runs) > 1 else None
        title = f"tlsbench report: {f'runs {runs}' if runs else f'run {run.id}'}, {run.experiment}"
        by_section: dict[str, list[Plot]] = {}
        for plot in plots(model):
            by_section.setdefault(plot.section, []).append(plot)
        body = [f"<h1>{escape(title)}</h1>"]
        if run.question:
            body.append(f"<blockquote>{escape(run.question)}</blockquote>")
        index = 0
        for view in views(model):
            body.append(f'<h2 id="{escape(view.name)}">{escape(view.title)}</h2>')
            if view.intro:
                # The intros use markdown `code` spans; plain text reads fine here.
                body.append(f"<p>{escape(view.intro.replace('`', ''))}</p>")
            body.append(_table(view))
            for heading, text in view.details:
                body.append(f"<p>{escape(heading)}:</p>\n<pre>{escape(text)}</pre>")
            for plot in by_section.pop(view.name, []):
                index += 1
                body.append(_figure(plot, index))
        leftover = [plot for section in by_section.values() for plot in section]
        if leftover:  # a plot whose table is not shown still belongs in the page
            body.append('<h2 id="plots">Plots</h2>')
            for plot in leftover:
                index += 1
                body.append(_figure(plot, index))
        return (
            "<!DOCTYPE html>\n"
            '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{escape(title)}</title>\n<style>{STYLE}</style>\n"
            f"<script>{SCRIPT}</script>\n</head>\n<body>\n"
            + "\n".join(body)
            + "\n</body>\n</html>\n"
        )
