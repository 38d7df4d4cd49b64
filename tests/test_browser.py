"""A real headless Chromium reads the built fixture site as a reader would, at 1440 and 390 px, light and dark.

One tour per built site (module scope): the home page, every record version (the current one and an
archived one), the methodology page and the changelog when the build has them, and an evidence page;
each is screenshotted into ``test-artifacts/browser/<site>/``. The tests then check what the tour saw:
no console errors, no request off localhost, no failed request; no table clipped without a scroll cue;
chart text at least 12 px at its rendered size; dark charts that are not white boxes; interactive charts
drawn by the site's own vega-embed, with the static SVG shown when JavaScript is off; every number link
landing on an element that exists.

``SITES`` names the builds the tour runs on: the fixture site built by each site engine
(mkdocs-material and Zensical, ``render.site.engines``).
"""

from __future__ import annotations

import functools
import http.server
import re
import threading
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from conftest import HANG_S, bench_module

from render.assemble.stages import BuildPaths

REPO = Path(__file__).resolve().parent.parent
ARTIFACTS = REPO / "test-artifacts" / "browser"
# Chromium, its flags, the local hosts and the two widths: one copy, bench/screenshots.py's (the tour's too)
_shots = bench_module("screenshots")
CHROMIUM, CHROMIUM_ARGS, LOCAL_HOSTS, WIDTHS = _shots.CHROMIUM, _shots.CHROMIUM_ARGS, _shots.LOCAL_HOSTS, _shots.WIDTHS
SCHEMES = ("light", "dark")
MIN_TEXT_PX = 12.0
"""The smallest chart text a reader must be able to read, at the size the browser draws it."""
WHITE_SHARE = 0.2
"""A dark chart may have at most this share of near-white pixels (its text and light marks)."""

SITES: dict[str, str] = {"mkdocs": "fixture_site", "zensical": "fixture_site_zensical"}
"""Site name -> the conftest fixture that builds the fixture site once per session with that engine."""

# Every test here runs on one xdist worker (``--dist loadfile``, pyproject.toml), so each build's tour runs once: an
# xdist_group mark on the site fixture's params did not hold (pytest 9.2, xdist 3.8) and each worker made its own
# tour of each build, four tours of about a minute on 2 cores where two are needed (issue 29).
# slow: a tour of the whole built site at two widths and two themes is end to end (about 12 s of CPU in Chromium
# and the test server), which the README's command leaves to `-m slow` to stay in its CPU budget; .ci/run runs it.
pytestmark = [pytest.mark.browser, pytest.mark.slow]


def tour_pages(site: Path) -> list[str]:
    """The pages a reader's tour opens, as paths relative to the site, in a stable order."""
    pages = ["index.html"]
    pages += sorted(str(p.relative_to(site)) for p in site.glob("records/*/v*.html"))
    pages += sorted(
        str(p.relative_to(site))
        for p in site.rglob("*.html")
        if re.search(r"methodology|changelog|changes", p.stem) and "evidence" not in p.parts
    )
    evidence = sorted(p for p in (site / "evidence").glob("*.html") if p.stem != "index")
    record = (site / pages[1]).read_text(encoding="utf-8") if len(pages) > 1 else ""
    cited = [p for p in evidence if p.name in record]  # an evidence page a record links to
    pages += [str((cited or evidence)[0].relative_to(site))] if evidence else []
    return pages


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the site folder; keeps the test output clean."""

    def log_message(self, format: str, *args: Any) -> None:
        pass


@dataclass
class View:
    """What one page showed at one width and scheme."""

    page: str
    width: int
    scheme: str
    script: bool = True
    requests: list[str] = field(default_factory=list)
    offsite: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    tables: list[dict[str, Any]] = field(default_factory=list)
    charts: list[dict[str, Any]] = field(default_factory=list)
    dark_fallbacks: list[dict[str, Any]] = field(default_factory=list)
    links: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.page} at {self.width} px, {self.scheme}{'' if self.script else ', no JavaScript'}"


# Every table's scroll box: whether a header cell ends past the visible box (clipped), and the cue a
# reader gets that more is to the right: a scrollbar that takes room, or a shadow or gradient drawn
# on the box or its wrapper (the usual "scroll for more" cue).
TABLES_JS = """
() => [...document.querySelectorAll('article table')].map(table => {
  let box = table;
  while (box && box.tagName !== 'ARTICLE' && !/(auto|scroll)/.test(getComputedStyle(box).overflowX)) {
    box = box.parentElement;
  }
  if (!box || box.tagName === 'ARTICLE') box = table.parentElement;
  const right = box.getBoundingClientRect().right;
  const drawn_rows = [...table.rows].filter(r => r.getClientRects().length > 0);  // an empty head row is not drawn
  const cells = [...(drawn_rows[0] ? drawn_rows[0].cells : [])];
  const clipped = cells.filter(c => c.getBoundingClientRect().right > right + 1).map(c => c.textContent.trim());
  const style = getComputedStyle(box);
  const scrolls = /(auto|scroll)/.test(style.overflowX) && box.scrollWidth > box.clientWidth;
  const borders = parseFloat(style.borderTopWidth) + parseFloat(style.borderBottomWidth);
  const bar = box.offsetHeight - box.clientHeight - borders;
  const drawn = el => el && (getComputedStyle(el).boxShadow !== 'none'
                             || getComputedStyle(el).backgroundImage !== 'none');
  const blank = !!table.tHead && table.tHead.textContent.trim() === '';
  return {head: cells.map(c => c.textContent.trim()).join(' | '), clipped, scrolls,
          cue: bar > 0 || drawn(box) || drawn(box.parentElement),
          blank_head: blank, blank_head_px: blank ? table.tHead.getBoundingClientRect().height : 0};
})
"""

# Every visible chart, static (<img> of an SVG) or interactive (vega-embed's inline SVG): its smallest
# text at the drawn size, and the share of near-white pixels when drawn over the page's background.
# Also every dark-scheme SVG, visible or not (the fallback without JavaScript), drawn the same way.
CHARTS_JS = """
async () => {
  const bg = getComputedStyle(document.querySelector('.md-main') || document.body).backgroundColor;
  const pageBg = getComputedStyle(document.body).backgroundColor;
  const under = bg === 'rgba(0, 0, 0, 0)' ? pageBg : bg;
  const shown = el => { const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
  async function white(src, w, h) {
    const img = new Image(); img.src = src; await img.decode();
    const c = document.createElement('canvas'); c.width = Math.round(w); c.height = Math.round(h);
    const g = c.getContext('2d'); g.fillStyle = under; g.fillRect(0, 0, c.width, c.height);
    g.drawImage(img, 0, 0, c.width, c.height);
    const d = g.getImageData(0, 0, c.width, c.height).data; let n = 0;
    for (let i = 0; i < d.length; i += 4) if (0.2126 * d[i] + 0.7152 * d[i + 1] + 0.0722 * d[i + 2] > 230) n++;
    return n / (c.width * c.height);
  }
  async function staticSizes(img) {
    const text = await (await fetch(img.src.split('#')[0])).text();
    const svg = new DOMParser().parseFromString(text, 'image/svg+xml');
    return [...svg.querySelectorAll('text')].map(t => parseFloat(t.getAttribute('font-size')));
  }
  const charts = [], fallbacks = [];
  // images load lazily (the sanitizer's loading="lazy"): a hidden or off-screen one is fetched here to be measured
  for (const img of document.querySelectorAll('article img')) {
    img.loading = 'eager';
    try { await img.decode(); } catch (e) {}
  }
  for (const img of document.querySelectorAll('article img')) {
    const src = img.getAttribute('src') || '';
    if (!/\\.svg#only-(light|dark)$/.test(src)) continue;
    const share = await white(img.src, img.naturalWidth, img.naturalHeight);
    if (src.endsWith('#only-dark')) fallbacks.push({src, white: share});
    if (!shown(img)) continue;
    const sizes = await staticSizes(img);
    const width = img.getBoundingClientRect().width;
    charts.push({kind: 'static', src, texts: sizes.length, minText: Math.min(...sizes) * width / img.naturalWidth,
                 width, white: share});
  }
  for (const holder of document.querySelectorAll('article .pb-chart')) {
    const svg = holder.querySelector('svg');
    if (!svg || !shown(svg)) continue;
    const box = svg.getBoundingClientRect();
    const own = (svg.viewBox && svg.viewBox.baseVal && svg.viewBox.baseVal.width) || svg.width.baseVal.value;
    const scale = box.width / own;
    const sizes = [...svg.querySelectorAll('text')].filter(t => t.textContent.trim())
      .map(t => parseFloat(getComputedStyle(t).fontSize) * scale);
    const data = 'data:image/svg+xml;charset=utf-8,' + encodeURIComponent(new XMLSerializer().serializeToString(svg));
    charts.push({kind: 'interactive', src: holder.getAttribute('aria-label'), texts: sizes.length,
                 minText: Math.min(...sizes), width: box.width, white: await white(data, box.width, box.height)});
  }
  return {charts, fallbacks};
}
"""


# the default engine's tour in the default run; the other engine's tour (about 50 s of a 2-core run) with -m slow,
# which CI runs too (issue 29: the README's test command under 2 minutes)
@pytest.fixture(scope="module", params=[n if n == "mkdocs" else pytest.param(n, marks=pytest.mark.slow) for n in SITES])
def site(request: pytest.FixtureRequest) -> tuple[str, Path]:
    """(name, folder) of a build of the fixture site, built once per session (``conftest.fixture_site*``)."""
    built: BuildPaths = request.getfixturevalue(SITES[request.param])
    return request.param, built.site


@pytest.fixture(scope="module")
def server(site: tuple[str, Path]) -> Iterator[str]:
    """``http.server`` on 127.0.0.1 (a free port) in a thread, serving the site; yields the base URL."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(site[1])))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


def _context(browser: Any, width: int, scheme: str, script: bool, view: list[View]) -> Any:
    """A browser context at ``width`` in ``scheme`` whose every request off localhost is recorded and aborted."""
    context = browser.new_context(
        viewport={"width": width, "height": 900}, color_scheme=scheme, java_script_enabled=script
    )

    def route(r: Any) -> None:
        url = r.request.url
        if urllib.parse.urlsplit(url).hostname in LOCAL_HOSTS or url.startswith(("data:", "blob:")):
            r.continue_()
        else:
            view[0].offsite.append(url)
            r.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.on("request", lambda r: view[0].requests.append(r.url))
    page.on("console", lambda m: view[0].console_errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: view[0].console_errors.append(str(e)))
    page.on("requestfailed", lambda r: view[0].failures.append(f"{r.url}: {r.failure}"))
    page.on("response", lambda r: view[0].failures.append(f"{r.url}: HTTP {r.status}") if r.status >= 400 else None)
    return context, page


def _look(page: Any, view: View, shot: Path) -> None:
    """What ``page``, already loaded and idle on the network, shows: read into ``view``, screenshotted to ``shot``."""
    if view.script and page.locator("article a[href$='.vl.json']").count():
        # charts.js draws each chart once it nears the screen, after loading its bundle and fetching its spec: bring
        # each near, then wait until every one is drawn (or failed back)
        page.wait_for_function("() => document.querySelectorAll('article .pb-chart').length > 0", timeout=HANG_S * 1000)
        _shots.wait_for_charts(page, HANG_S)  # a loaded machine draws slowly; only a hang should fail here
    view.tables = page.evaluate(TABLES_JS)
    found = page.evaluate(CHARTS_JS)
    view.charts, view.dark_fallbacks = found["charts"], found["fallbacks"]
    view.links = page.eval_on_selector_all('article a[href*="evidence/"]', "els => els.map(e => e.href)")
    shot.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(shot), full_page=True)


@dataclass
class _Plan:
    """One width and scheme, scripts on or off: its own browser context and tab, and the pages it visits."""

    width: int
    scheme: str
    script: bool
    pages: list[str]
    current: list[View]
    context: Any = None
    tab: Any = None


@pytest.fixture(scope="module")
def tour(browser: Any, server: str, site: tuple[str, Path]) -> list[View]:
    """Every tour page at each width and scheme with scripts on, and the pages with charts at 390 px without.

    Each plan has its own tab, and the tabs load side by side: a tab goes to its next page as soon as
    its current one has been read, so it loads while the other tabs are read. Each visit still waits
    for its own tab's network to go idle (no request for 500 ms, Playwright's ``networkidle``) before
    it is read; only the waiting overlaps.
    """
    name, folder = site
    pages = tour_pages(folder)
    views: list[View] = []
    with_charts = [p for p in pages if ".vl.json" in (folder / p).read_text(encoding="utf-8")]
    plans = [_Plan(w, s, True, pages, [View("", w, s, True)]) for w in WIDTHS for s in SCHEMES]
    plans += [_Plan(390, s, False, with_charts, [View("", 390, s, False)]) for s in SCHEMES]

    def go(plan: _Plan, i: int) -> None:
        plan.current[0] = View(plan.pages[i], plan.width, plan.scheme, plan.script)  # its requests land here
        views.append(plan.current[0])
        plan.tab.goto(server + plan.pages[i], wait_until="commit")

    try:
        for plan in plans:
            plan.context, plan.tab = _context(browser, plan.width, plan.scheme, plan.script, plan.current)
            go(plan, 0)
        for i in range(len(pages)):
            for plan in (p for p in plans if i < len(p.pages)):
                plan.tab.wait_for_load_state("networkidle")
                view = plan.current[0]
                slug = view.page.removesuffix(".html").replace("/", "-")
                shot = ARTIFACTS / name / f"{slug}-{view.width}-{view.scheme}{'' if view.script else '-nojs'}.png"
                _look(plan.tab, view, shot)
                if i + 1 < len(plan.pages):
                    go(plan, i + 1)
    finally:
        for plan in plans:
            if plan.context is not None:
                plan.context.close()
    return views


def test_the_tour_covers_every_kind_of_page(tour: list[View], site: tuple[str, Path]) -> None:
    pages = {v.page for v in tour}
    assert "index.html" in pages
    records = [p for p in pages if p.startswith("records/") and p != "records/index.html"]
    assert len(records) >= 2, "the tour needs a current and an archived record"
    assert any(p.startswith("evidence/") for p in pages)
    assert any("changes" in p or "changelog" in p for p in pages)
    shots = list((ARTIFACTS / site[0]).glob("*.png"))
    assert len(shots) >= len(pages) * len(WIDTHS) * len(SCHEMES)


def test_no_console_errors_no_outside_requests_no_failures(tour: list[View]) -> None:
    for v in tour:
        assert v.requests, f"{v.name}: the page made no requests at all"
        hosts = {urllib.parse.urlsplit(u).hostname for u in v.requests if not u.startswith(("data:", "blob:"))}
        assert hosts <= LOCAL_HOSTS and not v.offsite, f"{v.name}: requests left localhost: {v.offsite}"
        assert not v.console_errors, f"{v.name}: console errors: {v.console_errors}"
        assert not v.failures, f"{v.name}: failed requests: {v.failures}"


def test_no_table_is_clipped_without_a_scroll_cue(tour: list[View]) -> None:
    assert any(v.tables for v in tour), "the tour saw no table"
    for v in tour:
        for t in v.tables:
            if t["clipped"]:
                assert t["scrolls"], f"{v.name}: table [{t['head']}] hides {t['clipped']} and cannot scroll"
                assert t["cue"], f"{v.name}: table [{t['head']}] hides {t['clipped']} with no visible scroll cue"


def test_a_head_row_with_no_text_is_not_drawn(tour: list[View]) -> None:
    """A table of names and values (a record's Environment) has an empty Markdown head row: no blank strip for it."""
    blank = [(v.name, t) for v in tour for t in v.tables if t["blank_head"]]
    assert blank, "the tour saw no table with an empty head row (a record's Environment has one)"
    for name, t in blank:
        assert t["blank_head_px"] == 0, f"{name}: table [{t['head']}] draws an empty head row, {t['blank_head_px']} px"


def test_chart_text_is_at_least_12_px_as_drawn(tour: list[View]) -> None:
    drawn = [(v, c) for v in tour for c in v.charts]
    assert {c["kind"] for _, c in drawn} == {"static", "interactive"}
    assert any(v.width == 390 for v, _ in drawn)
    for v, c in drawn:
        assert c["texts"] > 0, f"{v.name}: chart {c['src']} has no text"
        assert c["minText"] >= MIN_TEXT_PX, f"{v.name}: chart {c['src']} draws text at {c['minText']:.1f} px"


def test_dark_charts_are_not_white_boxes(tour: list[View]) -> None:
    dark = [(v, c) for v in tour if v.scheme == "dark" and v.script for c in v.charts]
    assert dark, "the tour saw no chart in dark mode"
    # the dark SVGs behind the interactive charts, drawn over the dark page (without scripts the theme
    # cannot switch to its dark scheme, so the light SVG shows on a light page)
    fallbacks = [(seen, f) for seen in tour if seen.scheme == "dark" and seen.script for f in seen.dark_fallbacks]
    assert fallbacks, "the tour saw no dark static SVG"
    for v, c in dark + fallbacks:
        assert c["white"] <= WHITE_SHARE, f"{v.name}: chart {c['src']} is {c['white']:.0%} near-white"
    light = [c for v in tour if v.scheme == "light" and v.script for c in v.charts]
    assert light and all(c["white"] > 0.5 for c in light)  # the check tells a light chart from a dark one


def test_charts_are_interactive_with_scripts_and_static_without(tour: list[View]) -> None:
    for v in tour:
        kinds = {c["kind"] for c in v.charts}
        if v.script and v.charts:
            assert kinds == {"interactive"}, f"{v.name}: static and interactive charts both shown"
        if not v.script:
            assert kinds == {"static"}, f"{v.name}: the static SVG fallback is not shown"
    assert any(not v.script and v.charts for v in tour)


def test_every_number_link_lands_on_an_element_that_exists(tour: list[View], browser: Any) -> None:
    links = sorted({u for v in tour for u in v.links})
    assert links, "no page links a number to its evidence"
    context = browser.new_context()
    try:
        pages: dict[str, str] = {}
        for link in links:
            url, _, fragment = link.partition("#")
            if url not in pages:
                got = context.request.get(url)
                assert got.status == 200, f"{link}: HTTP {got.status}"
                pages[url] = got.text()
            if fragment:
                ident = urllib.parse.unquote(fragment)
                assert re.search(rf'\bid="{re.escape(ident)}"', pages[url]), f"{link}: no element with id {ident!r}"
    finally:
        context.close()


def test_evidence_page_offers_its_downloads(tour: list[View], server: str, browser: Any) -> None:
    evidence = next(v.page for v in tour if v.page.startswith("evidence/"))
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(server + evidence, wait_until="networkidle")
        assert page.locator("article table").count() >= 1  # the raw samples table
        downloads = page.eval_on_selector_all(
            'article a[href$=".csv"], article a[href$=".json"]', "els => els.map(e => e.href)"
        )
        assert any(d.endswith(".csv") for d in downloads) and any(d.endswith(".json") for d in downloads)
        for href in downloads:
            assert urllib.parse.urlsplit(href).hostname in LOCAL_HOSTS
            got = page.request.get(href)
            assert got.status == 200 and got.body(), f"download {href} failed"
    finally:
        context.close()
