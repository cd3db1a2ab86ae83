"""The HTML report as a person sees it: rendered by headless Chromium at 1400 and 800 px wide,
no element may stick out of the window unless it sits in a box that scrolls (a wide table
scrolls inside its own box, never the page), table headers stay in view (sticky), the
summary comes first and long tables are folded.

The page is the golden report's (test_report.build_store), with a script added that measures
the laid-out page after load and writes what it found into the DOM, which `--dump-dom` prints.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from test_report import build_store

from tlsbench.report import export, load_run

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = pytest.mark.skipif(
    not Path(CHROMIUM).exists(), reason="chromium missing: apt-get install chromium"
)

# Opens every folded table, then lists each element whose box reaches past the window's right
# edge while no ancestor scrolls sideways, each table box (and whether its header is sticky),
# and the page's own scroll width.
MEASURE = """
<script>
window.addEventListener("load", function () {
  document.querySelectorAll("details").forEach(function (d) { d.open = true; });
  var limit = document.documentElement.clientWidth;
  var found = {inner: window.innerWidth, limit: limit, overflows: [], tables: [],
               first: (document.querySelector("h2") || {}).id || ""};
  function scrolls(el) {
    for (var p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      var o = getComputedStyle(p).overflowX;
      if (o === "auto" || o === "scroll") { return true; }
    }
    return false;
  }
  document.querySelectorAll("body *").forEach(function (el) {
    var box = el.getBoundingClientRect();
    if (box.width > 0 && box.right > limit + 1 && !scrolls(el)) {
      found.overflows.push(el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") +
                           " reaches " + Math.round(box.right) + " px");
    }
  });
  document.querySelectorAll("div.table").forEach(function (div) {
    var table = div.querySelector("table"), th = div.querySelector("thead th");
    found.tables.push({name: table.dataset.table,
                       box: Math.round(div.getBoundingClientRect().right),
                       wide: table.scrollWidth > div.clientWidth,
                       sticky: th ? getComputedStyle(th).position === "sticky" : false,
                       folded: !!div.closest("details")});
  });
  found.page = document.documentElement.scrollWidth;
  var pre = document.createElement("pre");
  pre.id = "layout-check";
  pre.textContent = JSON.stringify(found);
  document.body.appendChild(pre);
});
</script>
"""


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("layout")
    store, run_id = build_store(tmp / "golden.db")
    html = export(load_run(store, run_id), "html")
    store.close()
    path = tmp / "report.html"
    path.write_text(html.replace("</head>", MEASURE + "</head>", 1), encoding="utf-8")
    return path


def measure(page: Path, width: int, tmp_path: Path) -> dict[str, Any]:
    proc = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", f"--user-data-dir={tmp_path / 'chromium-profile'}",
         "--hide-scrollbars", f"--window-size={width},1000", "--virtual-time-budget=5000",
         "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    found = re.search(r'<pre id="layout-check">(.*?)</pre>', proc.stdout, re.DOTALL)
    assert found is not None, "the measuring script did not run:\n" + proc.stdout[-2000:]
    result: dict[str, Any] = json.loads(found.group(1).replace("&quot;", '"'))
    return result


@pytest.mark.parametrize("width", [1400, 800])
def test_nothing_overflows_the_window(page: Path, width: int, tmp_path: Path) -> None:
    found = measure(page, width, tmp_path)
    assert found["inner"] == width  # the window really was this wide
    assert found["overflows"] == [], "\n".join(found["overflows"])
    assert found["page"] <= found["limit"], "the page scrolls sideways"
    tables = {t["name"]: t for t in found["tables"]}
    assert found["first"] == "summary"  # the answer first
    assert all(t["box"] <= found["limit"] for t in tables.values())
    assert all(t["sticky"] for t in tables.values()), "a table header does not stay in view"
    if width == 800:  # the heap table is wider than 800 px: it scrolls inside its box
        assert tables["memory"]["wide"]
    assert not tables["summary"]["folded"]
