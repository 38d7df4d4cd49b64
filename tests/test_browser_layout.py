"""Charts and tables of the repository's own records in a real headless Chromium (issue 28, items 2 and 4): chart
text at least 12 px as drawn at 390 and 1440 px, no table hiding a column at 1440 px, and the key column of every
table in view at 390 px with the table scrolled to its right end.

The repository's site (``docs/`` and ``archive/``) is built once per session into the session's temporary folder;
the pages read are the current version of the records whose charts and tables issue 28 names. Screenshots go to
``test-artifacts/charts/browser/``. The tour of every page, link and scheme is ``tests/test_browser.py``'s; this
file reuses its chart script (``CHARTS_JS``) so both measure chart text alike.
"""

from __future__ import annotations

import functools
import http.server
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, bench_module
from test_browser import CHARTS_JS, CHROMIUM, CHROMIUM_ARGS, MIN_TEXT_PX

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ARTIFACTS = REPO / "test-artifacts" / "charts" / "browser"
RECORDS = ("batch-sweep-h200", "step-anatomy-250m", "h200-ceilings", "masks-h200")
"""The records issue 28 names for its charts and tables."""

# Each table's scroll box: the nearest element from the table up that scrolls sideways (overflow auto or scroll,
# and content wider than it). mkdocs-material gives the table itself overflow: auto, but inside its
# .md-typeset__scrollwrap the table is as wide as its content and the wrapper is what scrolls; taking the first
# element with overflow: auto would measure the table against itself and never find a hidden column.
# At rest: which header cells end past the box (hidden columns). Scrolled to the right end: which first (key)
# cells have left the box (the sticky key column).
LAYOUT_JS = """
() => [...document.querySelectorAll('article table')].map(table => {
  const scroller = el => /(auto|scroll)/.test(getComputedStyle(el).overflowX) && el.scrollWidth > el.clientWidth + 1;
  let box = table;
  while (box && box.tagName !== 'ARTICLE' && !scroller(box)) box = box.parentElement;
  if (!box || box.tagName === 'ARTICLE') box = table;  // nothing scrolls: the table is measured against itself
  const outside = (cells, edge) => cells.filter(c => { const r = c.getBoundingClientRect();
    return r.left < edge.left - 1 || r.right > edge.right + 1; }).map(c => c.textContent.trim());
  box.scrollLeft = 0;
  // a row not drawn (a head row with no text, render/assets/tables.css) holds no column and no key
  const rows = [...table.rows].filter(r => r.getClientRects().length > 0);
  const head = [...(rows[0] ? rows[0].cells : [])];
  const clipped = outside(head, box.getBoundingClientRect());
  box.scrollLeft = box.scrollWidth;
  const hidden = outside(rows.map(r => r.cells[0]).filter(Boolean), box.getBoundingClientRect());
  box.scrollLeft = 0;
  return {head: head.map(c => c.textContent.trim()).join(' | '), clipped, hidden,
          scrolls: box.scrollWidth > box.clientWidth + 1};
})
"""


def current(site: Path, slug: str) -> str:
    """The page of a record's newest version, relative to the site."""
    versions = sorted(site.glob(f"records/{slug}/v*.html"), key=lambda p: int(re.sub(r"\D", "", p.stem) or 0))
    assert versions, f"the repository's site has no record {slug}"
    return str(versions[-1].relative_to(site))


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def seen(repository_site: Path) -> Iterator[dict[tuple[str, int], dict[str, Any]]]:
    """(record, width) -> what its current page showed: its charts and its tables (``LAYOUT_JS``)."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install -y chromium; .ci/run does it)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    handler = functools.partial(_Quiet, directory=str(repository_site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}/"
    found: dict[tuple[str, int], dict[str, Any]] = {}
    try:
        with sync_api.sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            try:
                for width in (1440, 390):
                    context = browser.new_context(viewport={"width": width, "height": 900})
                    tab = context.new_page()
                    for slug in RECORDS:
                        page = current(repository_site, slug)
                        tab.goto(base + page, wait_until="networkidle")
                        if tab.locator("article a[href$='.vl.json']").count():  # charts.js draws each chart
                            bench_module("screenshots").wait_for_charts(tab, 120)  # each brought near, then drawn
                        found[(slug, width)] = {
                            "charts": tab.evaluate(CHARTS_JS)["charts"],
                            "tables": tab.evaluate(LAYOUT_JS),
                        }
                        ARTIFACTS.mkdir(parents=True, exist_ok=True)
                        tab.screenshot(path=str(ARTIFACTS / f"{slug}-{width}.png"), full_page=True)
                    context.close()
            finally:
                browser.close()
        yield found
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


@pytest.mark.parametrize("width", [390, 1440])
def test_chart_text_is_at_least_12_px_on_the_records(seen: dict[tuple[str, int], dict[str, Any]], width: int) -> None:
    charts = [(slug, c) for (slug, w), v in seen.items() if w == width for c in v["charts"]]
    assert {slug for slug, _ in charts} >= {"batch-sweep-h200", "step-anatomy-250m"}
    for slug, c in charts:
        assert c["texts"] > 0, f"{slug} at {width} px: chart {c['src']} has no text"
        assert c["minText"] >= MIN_TEXT_PX, (
            f"{slug} at {width} px: chart {c['src']} draws text at {c['minText']:.1f} px"
        )


def test_no_table_hides_a_column_at_1440_px(seen: dict[tuple[str, int], dict[str, Any]]) -> None:
    tables = [(slug, t) for (slug, w), v in seen.items() if w == 1440 for t in v["tables"]]
    assert {slug for slug, _ in tables} == set(RECORDS)
    for slug, t in tables:
        assert not t["clipped"], f"{slug} at 1440 px: table [{t['head']}] hides {t['clipped']}"


def test_the_key_column_stays_in_view_when_a_table_scrolls(seen: dict[tuple[str, int], dict[str, Any]]) -> None:
    tables = [(slug, w, t) for (slug, w), v in seen.items() for t in v["tables"]]
    assert any(t["scrolls"] for _, w, t in tables if w == 390), "no table scrolls at 390 px: the check checks nothing"
    for slug, width, t in tables:
        assert not t["hidden"], f"{slug} at {width} px: table [{t['head'][:40]}] scrolled right hides {t['hidden'][:3]}"
