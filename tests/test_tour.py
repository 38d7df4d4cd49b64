"""A real headless Chromium tours every current record of the repository's own site (issue 28) and lists what fails.

The tour opens each record's current version (its highest ``vN.html``) at 1440 and 390 px, light and dark, in one
Chromium, and checks what a reader meets there:

- ``number-link``: every number link (``NUMBER_LINK``) is followed; after the jump the element it lands on holds
  the linked text (spaces, thin spaces and thousands commas aside) and that text is inside the viewport, below
  the sticky header and not clipped by a scrolling table. An empty anchor (``<span id=row-3></span>``) counts as
  the row, list item or paragraph it marks. Each distinct target is jumped to once per width, in the page, by
  JavaScript (``LINK_JS``): one round trip per evidence page, not one per link;
- ``chart-text``: every chart's text is at least ``MIN_TEXT_PX`` as drawn at 390 px (font size times the text's
  screen transform);
- ``table-key-column`` / ``table-hidden-columns``: at 1440 px no table's first column is out of sight, and no
  table is wider than its box (which columns it hides is listed);
- ``answer``: the record's Answer (``ANSWER``) starts on the first screen;
- ``console`` / ``offsite``: no console error, nothing requested from outside the site.

Every failure is collected, written to ``test-artifacts/tour/failures.txt`` and reported in one assertion, per
page and per check, with counts; each failing record view is screenshotted under ``test-artifacts/tour/``
(the whole page when a table or chart failed, else the first screen), and for failing links the screen they
landed on. The site is built once per session from ``docs/`` and ``archive/`` (about a minute), or
``PROBEBOOK_TOUR_SITE=site`` reuses a build made with ``probebook build``. bench/screenshots.py serves the
site and opens Chromium the same way.
"""

from __future__ import annotations

import collections
import os
import re
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import HANG_S, bench_module, shared_folder

REPO = Path(__file__).resolve().parent.parent
ARTIFACTS = REPO / "test-artifacts" / "tour"
SITE_ENV = "PROBEBOOK_TOUR_SITE"
"""A folder already built from this repository (``probebook build`` writes ``site/``): the tour reads it as is."""
ANSWER = ".answer, #answer, [data-answer]"
"""Where a record states its Answer (issue 28's "An Answer at the top of every record version"): adjust it to
the element the answers change emits."""
NUMBER_LINK = 'article a[href*="evidence/"][href*=".html#"]'
"""A number's link: to a place on an evidence page; links named ``sha256:...`` (an evidence id) are not numbers."""
WIDTHS = (1440, 390)
SCHEMES = ("light", "dark")
LINK_SCHEMES = ("light",)
"""The colour schemes the number links are followed in: where a jump lands does not depend on the colours, and
each scheme costs a visit to every linked evidence page (about 50 at each width)."""
MIN_TEXT_PX = 12.0
"""The smallest chart text a reader must be able to read on a phone, at the size the browser draws it."""
SHOWN_PER_GROUP = 6
"""Failures printed per page and check in the assertion (failures.txt has them all)."""
LINK_SHOTS = 30
"""At most this many screenshots of failed link landings per width."""

pytestmark = pytest.mark.browser

shots = bench_module("screenshots")

# The record page as a reader first sees it: its number links, its Answer's box, and (when asked) its tables and
# its charts' smallest text. Chart text is measured as drawn: font size times the text's screen transform (the
# SVG's own scaling to its box); a static chart (<img> of an SVG) is parsed into a hidden box of the image's
# drawn size and measured the same way.
PAGE_JS = """
async ([answer, numberLink, withTables, withCharts]) => {
  const squash = s => s.replace(/\\s+/g, '');
  const links = [...document.querySelectorAll(numberLink)]
    .map(a => ({href: a.href, text: a.textContent.replace(/\\s+/g, ' ').trim()}))
    .filter(l => l.text && !l.text.startsWith('sha256:'));
  const a = document.querySelector(answer);
  const box = a && a.getBoundingClientRect();
  const header = document.querySelector('.md-header');
  const answerBox = a ? {top: box.top, height: box.height, screen: innerHeight,
                         below: header ? header.getBoundingClientRect().bottom : 0} : null;
  const out = {links, answer: answerBox, tables: [], charts: []};
  const heading = el => {
    for (let e = el; e && e.tagName !== 'ARTICLE'; e = e.previousElementSibling || e.parentElement) {
      if (/^H[1-6]$/.test(e.tagName)) return e.textContent.replace('¶', '').trim();
    }
    return '';
  };
  if (withTables) {
    const viewRight = document.documentElement.clientWidth;
    for (const table of document.querySelectorAll('article table')) {
      let box = table.parentElement;
      while (box && box.tagName !== 'ARTICLE' && getComputedStyle(box).overflowX === 'visible') box = box.parentElement;
      const clip = box && box.tagName !== 'ARTICLE' ? box.getBoundingClientRect() : {left: 0, right: viewRight};
      const left = Math.max(clip.left, 0), right = Math.min(clip.right, viewRight);
      const out_of = c => {
        const r = c.getBoundingClientRect();
        return r.width === 0 || r.left < left - 1 || r.right > right + 1 || getComputedStyle(c).visibility === 'hidden';
      };
      const head = [...(table.rows[0] ? table.rows[0].cells : [])];
      const keys = [...table.rows].map(r => r.cells[0]).filter(Boolean);
      out.tables.push({section: heading(table), head: head.map(c => c.textContent.trim()),
                       hidden: head.filter(out_of).map(c => c.textContent.trim()),
                       keyHidden: keys.filter(out_of).length, rows: keys.length,
                       wider: !!box && box.tagName !== 'ARTICLE' && box.scrollWidth > box.clientWidth + 1});
    }
  }
  if (withCharts) {
    const shown = el => { const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
    const smallest = (svg, name) => {
      let min = null;
      for (const t of svg.querySelectorAll('text')) {
        if (!t.textContent.trim()) continue;
        const m = t.getScreenCTM();
        const px = parseFloat(getComputedStyle(t).fontSize) * (m ? Math.hypot(m.a, m.b) : 1);
        if (min === null || px < min.px) min = {px, text: t.textContent.trim().slice(0, 40)};
      }
      out.charts.push({chart: name, min});
    };
    for (const holder of document.querySelectorAll('article .pb-chart')) {
      const svg = holder.querySelector('svg');
      if (svg && shown(svg)) smallest(svg, holder.getAttribute('aria-label') || 'interactive chart');
    }
    for (const img of document.querySelectorAll('article img')) {
      if (!/\\.svg(#.*)?$/.test(img.getAttribute('src') || '') || !shown(img)) continue;
      const r = img.getBoundingClientRect();
      const doc = new DOMParser().parseFromString(await (await fetch(img.src.split('#')[0])).text(), 'image/svg+xml');
      const holder = document.createElement('div');
      holder.style.cssText = 'position:absolute;left:-20000px;top:0;visibility:hidden;'
                             + `width:${r.width}px;height:${r.height}px`;
      const svg = document.importNode(doc.documentElement, true);
      svg.setAttribute('width', r.width); svg.setAttribute('height', r.height);
      holder.appendChild(svg); document.body.appendChild(holder);
      smallest(svg, img.getAttribute('alt') || img.getAttribute('src'));
      holder.remove();
    }
  }
  return out;
}
"""

# One evidence page: jump to each target as the browser does on following a link (the fragment navigation
# scrolls, hashchange handlers run), then read where the target and its linked texts are. A text is "seen"
# when the text of the smallest element holding it is wholly inside the viewport, below the sticky header, and
# inside every box that clips it (a scrolling table's wrapper).
LINK_JS = """
async (targets) => {
  const squash = s => s.replace(/\\s+/g, '').replace(/(\\d),(?=\\d{3})/g, '$1');
  const frame = () => new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
  const header = document.querySelector('.md-header');
  const out = [];
  for (const {fragment, texts} of targets) {
    if (decodeURIComponent(location.hash.slice(1)) === decodeURIComponent(fragment)) location.hash = '';
    location.hash = fragment;
    await frame();
    let target = document.getElementById(decodeURIComponent(fragment));
    if (!target) { out.push({fragment, missing: true}); continue; }
    const anchor = target.tagName.toLowerCase();
    if (!target.textContent.trim()) {
      target = target.closest('tr, li, dd, dt, p, h1, h2, h3, h4, h5, h6') || target.parentElement;
    }
    const sticky = header && /(fixed|sticky)/.test(getComputedStyle(header).position);
    const top = sticky ? header.getBoundingClientRect().bottom : 0;
    const seen = el => {
      // the box of the element's text, not of the element: a cell is as wide as its column's widest value
      const range = document.createRange();
      range.selectNodeContents(el);
      const r = range.getBoundingClientRect();
      if (r.width === 0 || r.height === 0) return false;
      let [l, t, rr, b] = [0, top, document.documentElement.clientWidth, innerHeight];
      // <html> and <body> pass their overflow to the viewport, which is the first clip already
      for (let p = el.parentElement; p && p !== document.body && p !== document.documentElement; p = p.parentElement) {
        if (getComputedStyle(p).overflowX !== 'visible' || getComputedStyle(p).overflowY !== 'visible') {
          const c = p.getBoundingClientRect();
          [l, t, rr, b] = [Math.max(l, c.left), Math.max(t, c.top), Math.min(rr, c.right), Math.min(b, c.bottom)];
        }
      }
      return r.left >= l - 1 && r.right <= rr + 1 && r.top >= t - 1 && r.bottom <= b + 1;
    };
    const tag = target.tagName.toLowerCase();
    const landed = `<${tag}>` + (anchor !== tag ? ` around <${anchor}>` : '');
    const whole = squash(target.textContent);
    const results = texts.map(text => {
      const want = squash(text);
      if (!whole.includes(want)) return {text, held: false, seen: false};
      let holder = target;
      for (let again = true; again;) {
        again = false;
        for (const child of holder.children) {
          if (squash(child.textContent).includes(want)) { holder = child; again = true; break; }
        }
      }
      return {text, held: true, seen: seen(holder)};
    });
    const r = target.getBoundingClientRect();
    out.push({fragment, landed, excerpt: target.textContent.replace(/\\s+/g, ' ').trim().slice(0, 80),
              targetSeen: r.top >= top - 1 && r.top < innerHeight && r.left < document.documentElement.clientWidth,
              results});
  }
  return out;
}
"""


@dataclass(frozen=True)
class Failure:
    """One thing the tour found wrong: on ``page`` (relative to the site), in ``view`` ("1440 light"), by ``check``."""

    page: str
    view: str
    check: str
    detail: str


def report(failures: list[Failure], pages: int, views: int) -> str:
    """The failure list a reader of the test output needs: counts per check and per page, then each page's failures
    grouped by check (at most ``SHOWN_PER_GROUP`` each; the caller writes the full list to a file)."""
    by_check = collections.Counter(f.check for f in failures)
    by_page = collections.Counter(f.page for f in failures)
    lines = [f"the tour of {pages} current records ({views} views each) found {len(failures)} failures"]
    lines.append("per check: " + ", ".join(f"{c} {n}" for c, n in sorted(by_check.items())))
    lines.append("per page: " + ", ".join(f"{p} {n}" for p, n in sorted(by_page.items())))
    groups: dict[tuple[str, str], list[Failure]] = collections.defaultdict(list)
    for f in failures:
        groups[(f.page, f.check)].append(f)
    for (page, check), group in sorted(groups.items()):
        lines.append(f"{page} [{check}] {len(group)}:")
        lines += [f"    {f.view}: {f.detail}" for f in group[:SHOWN_PER_GROUP]]
        if len(group) > SHOWN_PER_GROUP:
            lines.append(f"    ... and {len(group) - SHOWN_PER_GROUP} more (test-artifacts/tour/failures.txt)")
    return "\n".join(lines)


def test_report_counts_and_groups_failures_per_page_and_check() -> None:
    failures = [Failure("a.html", "1440 light", "answer", "no Answer")]
    failures += [Failure("b.html", "390 dark", "chart-text", f"chart {i}") for i in range(SHOWN_PER_GROUP + 2)]
    text = report(failures, pages=2, views=4)
    assert text.splitlines()[:3] == [
        f"the tour of 2 current records (4 views each) found {SHOWN_PER_GROUP + 3} failures",
        f"per check: answer 1, chart-text {SHOWN_PER_GROUP + 2}",
        f"per page: a.html 1, b.html {SHOWN_PER_GROUP + 2}",
    ]
    assert "a.html [answer] 1:\n    1440 light: no Answer" in text
    assert f"    390 dark: chart {SHOWN_PER_GROUP - 1}\n    ... and 2 more" in text
    assert f"chart {SHOWN_PER_GROUP}" not in text


@pytest.fixture(scope="module")
def repo_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository's own site: ``$PROBEBOOK_TOUR_SITE`` when set, else built once per session from docs/ and
    archive/ (the published ledger read for the Changes page, nothing in the repository written)."""
    given = os.environ.get(SITE_ENV)
    if given:
        site = Path(given).resolve()
        if not (site / "records").is_dir():
            pytest.fail(f"{SITE_ENV}={given}: no records/ folder there (build it with probebook build)")
        return site
    from measure.cli import declarations
    from render.build.stages import BuildPaths, build

    def paths(root: Path) -> BuildPaths:
        return BuildPaths(
            docs=REPO / "docs",
            archive=REPO / "archive",
            build=root / "build",
            site=root / "site",
            config=REPO / "mkdocs.yml",
            published=REPO / "archive" / "published" / "ledger.json",
            declarations=declarations(),
        )

    def make(folder: Path) -> None:
        build(paths(folder))

    root = shared_folder(tmp_path_factory, "repository-site", make)
    return paths(root).site


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not shots.CHROMIUM.exists():
        pytest.skip(f"{shots.CHROMIUM} is not installed (apt-get install -y chromium; .ci/run does it)")
    pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    with shots.chromium() as chromium:
        yield chromium


@dataclass
class Tour:
    """What the tour saw: the pages, the failures, and counts that show it looked."""

    pages: list[str]
    failures: list[Failure]
    seen: collections.Counter[str]


def _slug(page: str) -> str:
    return page.removesuffix(".html").replace("/", "-")


def _record_view(
    tab: Any, base: str, page: str, width: int, scheme: str, heard: dict[str, list[str]], seen: collections.Counter[str]
) -> tuple[list[Failure], list[dict[str, str]]]:
    """Open ``page`` in ``tab`` and check it; returns its failures (less the links') and its number links."""
    view = f"{width} {scheme}"
    heard["console"].clear()
    heard["offsite"].clear()
    tab.goto(base + page, wait_until="networkidle")
    shots.wait_for_charts(tab, HANG_S)
    got = tab.evaluate(PAGE_JS, [ANSWER, NUMBER_LINK, width == 1440, width == 390])
    found: list[Failure] = []
    answer = got["answer"]
    if answer is None:
        found.append(Failure(page, view, "answer", f"no element matches {ANSWER!r}"))
    elif not (answer["below"] - 1 <= answer["top"] and answer["top"] + min(answer["height"], 40) <= answer["screen"]):
        found.append(
            Failure(
                page,
                view,
                "answer",
                f"the Answer starts at {answer['top']:.0f} px; the screen is {answer['screen']} px",
            )
        )
    for chart in got["charts"]:
        seen["charts"] += 1
        least = chart["min"]
        if least is None:
            found.append(Failure(page, view, "chart-text", f"chart {chart['chart']!r} has no text"))
        elif least["px"] < MIN_TEXT_PX - 0.05:
            found.append(
                Failure(
                    page,
                    view,
                    "chart-text",
                    f"chart {chart['chart']!r} draws {least['text']!r} at {least['px']:.1f} px (< {MIN_TEXT_PX:g})",
                )
            )
    for table in got["tables"]:
        seen["tables"] += 1
        where = f"table under {table['section']!r} [{' | '.join(table['head'])[:70]}]"
        if table["keyHidden"]:
            found.append(
                Failure(
                    page,
                    view,
                    "table-key-column",
                    f"{where}: {table['keyHidden']} of {table['rows']} key cells out of sight",
                )
            )
        if table["wider"] or table["hidden"]:
            hidden = ", ".join(table["hidden"]) or "columns past its box"
            found.append(Failure(page, view, "table-hidden-columns", f"{where} hides {hidden}"))
    found += [Failure(page, view, "console", text[:200]) for text in heard["console"]]
    found += [Failure(page, view, "offsite", url[:200]) for url in heard["offsite"]]
    seen["views"] += 1
    return found, got["links"]


def _follow_links(
    tab: Any, scheme: str, links: dict[str, list[dict[str, str]]], heard: dict[str, list[str]], shots_to: Path
) -> list[Failure]:
    """Follow every number link of the current records (``links``: page -> its links) at each width, in ``scheme``.

    Each evidence page is loaded once and read at each width by resizing the tab: its layout is CSS alone (the
    media queries follow the resize), and a load costs about a second on a loaded machine. The screen a failed
    link landed on is saved under ``shots_to`` (the first failure of each evidence page, ``LINK_SHOTS`` at most).
    """
    # evidence page -> fragment -> linked text -> the record pages that link it
    wanted: dict[str, dict[str, dict[str, set[str]]]] = {}
    for page, page_links in links.items():
        for link in page_links:
            url, _, fragment = link["href"].partition("#")
            wanted.setdefault(url, {}).setdefault(fragment, {}).setdefault(link["text"], set()).add(page)
    found: list[Failure] = []
    shots_taken: collections.Counter[int] = collections.Counter()
    for url, fragments in sorted(wanted.items()):
        evidence = urllib.parse.urlsplit(url).path.lstrip("/")
        short = evidence.removeprefix("evidence/")[:12]
        heard["console"].clear()
        heard["offsite"].clear()
        tab.goto(url, wait_until="load")
        targets: list[dict[str, Any]] = [{"fragment": f, "texts": sorted(t)} for f, t in sorted(fragments.items())]
        for width in WIDTHS:
            view = f"{width} {scheme}"
            tab.set_viewport_size({"width": width, "height": shots.HEIGHTS[width]})
            landed = tab.evaluate(LINK_JS, targets)
            failed_fragments = []
            for target, result in zip(targets, landed, strict=True):
                texts = fragments[target["fragment"]]
                bad: list[tuple[str, str]] = []
                if result.get("missing"):
                    bad = [(t, "no element has this id") for t in texts]
                else:
                    for r in result["results"]:
                        if not r["held"]:
                            bad.append((r["text"], f"lands on {result['landed']} reading {result['excerpt']!r}"))
                        elif not r["seen"]:
                            bad.append((r["text"], f"lands on {result['landed']}; the value is out of sight"))
                for text, why in bad:
                    for page in sorted(texts[text]):
                        found.append(
                            Failure(page, view, "number-link", f"{text!r} -> {short}…#{target['fragment']}: {why}")
                        )
                if bad:
                    failed_fragments.append(target["fragment"])
            if failed_fragments and shots_taken[width] < LINK_SHOTS:
                tab.evaluate("f => { location.hash = ''; location.hash = f; }", failed_fragments[0])
                tab.screenshot(path=str(shots_to / f"link-{short}-{_slug(failed_fragments[0])}-{width}.png"))
                shots_taken[width] += 1
        page_of = sorted({p for texts in fragments.values() for pages in texts.values() for p in pages})[0]
        found += [Failure(page_of, scheme, "console", f"on {evidence}: {t[:200]}") for t in heard["console"]]
        found += [Failure(page_of, scheme, "offsite", f"from {evidence}: {u[:200]}") for u in heard["offsite"]]
    return found


def _listen(tab: Any, heard: dict[str, list[str]]) -> None:
    """Collect ``tab``'s console errors and uncaught exceptions into ``heard["console"]``."""
    tab.on("console", lambda m: heard["console"].append(m.text) if m.type == "error" else None)
    tab.on("pageerror", lambda e: heard["console"].append(str(e)))


@pytest.fixture(scope="module")
def tour(repo_site: Path, browser: Any) -> Tour:
    """Every current record at each width and scheme, then every number link at each width (``LINK_SCHEMES``)."""
    pages = sorted(shots.current_records(repo_site).values())
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for old in ARTIFACTS.glob("*.png"):
        old.unlink()
    failures: list[Failure] = []
    seen: collections.Counter[str] = collections.Counter()
    heard: dict[str, list[str]] = {"console": [], "offsite": []}
    links: dict[str, list[dict[str, str]]] = {}  # the same at every width and scheme: the page's HTML is one
    with shots.serve(repo_site) as base:
        for width in WIDTHS:
            for scheme in SCHEMES:
                context = shots.open_context(browser, width, scheme, heard["offsite"].append)
                try:
                    tab = context.new_page()
                    _listen(tab, heard)
                    for page in pages:
                        found, links[page] = _record_view(tab, base, page, width, scheme, heard, seen)
                        if found:  # the whole page where the failure may be below the first screen
                            below = any(f.check.startswith(("table", "chart")) for f in found)
                            shot = ARTIFACTS / f"{_slug(page)}-{width}-{scheme}.png"
                            tab.screenshot(path=str(shot), full_page=below)
                        failures += found
                finally:
                    context.close()
        for scheme in LINK_SCHEMES:
            context = shots.open_context(browser, WIDTHS[0], scheme, heard["offsite"].append)
            try:
                tab = context.new_page()
                _listen(tab, heard)
                seen["links"] += sum(len(v) for v in links.values()) * len(WIDTHS)
                failures += _follow_links(tab, scheme, links, heard, ARTIFACTS)
            finally:
                context.close()
    return Tour(pages, failures, seen)


@pytest.mark.slow  # the repository's site: 14 records, 4 views each, about 50 evidence pages (minutes)
def test_the_tour_sees_every_current_record_its_links_charts_and_tables(tour: Tour, repo_site: Path) -> None:
    records = [p for p in (repo_site / "records").iterdir() if p.is_dir() and any(p.glob("v*.html"))]
    assert len(tour.pages) == len(records) > 0
    assert tour.seen["views"] == len(tour.pages) * len(WIDTHS) * len(SCHEMES)
    assert tour.seen["links"] > 0 and tour.seen["charts"] > 0 and tour.seen["tables"] > 0, tour.seen


@pytest.mark.slow
def test_every_current_record_reads_as_issue_28_asks(tour: Tour) -> None:
    listing = report(tour.failures, len(tour.pages), len(WIDTHS) * len(SCHEMES))
    (ARTIFACTS / "failures.txt").write_text(
        listing.split("\n", 2)[0]
        + "\n"
        + "\n".join(f"{f.page} [{f.check}] {f.view}: {f.detail}" for f in tour.failures)
        + "\n",
        encoding="utf-8",
    )
    assert not tour.failures, listing


# A made-up record and evidence page with one case of each failure and one of each success: the tour's own
# checks, run in the same Chromium on literal HTML, must find exactly these.
_HEAD = "<!doctype html><html><head><meta charset=utf-8><style>body{margin:0} .md-header{position:sticky;top:0;"
_HEAD += "height:48px;background:#335} [id]{scroll-margin-top:60px} td,th{padding:4px 12px;white-space:nowrap}"
_HEAD += "</style></head><body>"
_HEAD += "<header class=md-header></header>"
_WIDE = "".join(f"<th>column{i}</th>" for i in range(30))
_WIDE_ROW = "".join(f"<td>{i}</td>" for i in range(29))
_RECORD = (
    _HEAD
    + "<article><h1>Record</h1><div style='height:1200px'></div><p class=answer>It holds.</p>"
    + "<p><a href='evidence/e.html#row-1'>1.5 ms</a> <a href='evidence/e.html#row-2'>9.9 ms</a> "
    + "<a href='evidence/e.html#far'>777</a> <a href='evidence/e.html#gone'>3</a> "
    + "<a href='evidence/e.html'>sha256:ab</a>"
    + " <a href='evidence/e.html#row-1'>sha256:abcdef</a></p>"
    + "<h2>Wide</h2><div style='overflow-x:auto;width:300px'><table><tr>"
    + _WIDE
    + "</tr></table></div>"
    + "<h2>Shifted</h2><div style='overflow:hidden;width:600px'><table style='margin-left:-60px'>"
    + "<tr><th>key column</th><th>b</th></tr><tr><td>k</td><td>v</td></tr></table></div>"
    + "<h2>Fits</h2><table><tr><th>x</th><th>y</th></tr><tr><td>1</td><td>2</td></tr></table>"
    + "<div class=pb-chart aria-label=tiny><svg viewBox='0 0 1000 100' style='width:300px'>"
    + "<text x=10 y=50 font-size=20>small</text></svg></div>"
    + "<div class=pb-chart aria-label=big><svg viewBox='0 0 100 100' style='width:300px'>"
    + "<text x=10 y=50 font-size=10>large</text></svg></div></article>"
    + "<script>console.error('planted')</script><img src='https://example.invalid/x.png'></body></html>"
)
_EVIDENCE = (
    _HEAD
    + "<article><div style='height:2000px'></div><table>"
    + "<tr><td><span id=row-1></span>1</td><td>1.5&thinsp;ms</td></tr>"
    + "<tr><td><span id=row-2></span>2</td><td>1.0 ms</td></tr></table>"
    + "<div style='height:2000px'></div><div style='overflow-x:auto;width:300px'><table>"
    + "<tr><td><span id=far></span>far</td>"
    + _WIDE_ROW
    + "<td>777</td></tr></table></div>"
    + "<div style='height:2000px'></div></article></body></html>"
)


def test_the_tours_checks_find_each_planted_failure_and_pass_the_rest(browser: Any, tmp_path: Path) -> None:
    (tmp_path / "evidence").mkdir()
    (tmp_path / "r.html").write_text(_RECORD, encoding="utf-8")
    (tmp_path / "evidence" / "e.html").write_text(_EVIDENCE, encoding="utf-8")
    heard: dict[str, list[str]] = {"console": [], "offsite": []}
    seen: collections.Counter[str] = collections.Counter()
    found: list[Failure] = []
    with shots.serve(tmp_path) as base:
        for width in WIDTHS:
            context = shots.open_context(browser, width, "light", heard["offsite"].append)
            try:
                tab = context.new_page()
                _listen(tab, heard)
                failures, links = _record_view(tab, base, "r.html", width, "light", heard, seen)
                found += failures
                if width == WIDTHS[0]:
                    found += _follow_links(tab, "light", {"r.html": links}, heard, tmp_path)
            finally:
                context.close()
    got = sorted((f.view, f.check, f.detail) for f in found)
    # where the Answer and the wide table's cut fall depends on the fonts: only their shape is pinned
    answers = [
        (v, re.fullmatch(r"the Answer starts at (\d+) px; the screen is (\d+) px", d))
        for v, c, d in got
        if c == "answer"
    ]
    assert [(v, m is not None and int(m[1]) > 1200 and int(m[2])) for v, m in answers] == [
        ("1440 light", shots.HEIGHTS[1440]),
        ("390 light", shots.HEIGHTS[390]),
    ]
    wide = [d for v, c, d in got if c == "table-hidden-columns" and "'Wide'" in d]
    assert len(wide) == 1 and wide[0].startswith("table under 'Wide' [column0 | column1 | column2 |")
    cut = wide[0].split("] hides ")[1].split(", ")
    assert cut == [f"column{i}" for i in range(30 - len(cut), 30)] and 2 < len(cut) < 30
    # the aborted request also logs a console error of its own
    heard_once = [("console", "planted"), ("console", "Failed to load resource: net::ERR_FAILED")]
    heard_once.append(("offsite", "https://example.invalid/x.png"))
    assert [g for g in got if g[1] in ("console", "offsite")] == sorted(
        (f"{w} light", check, text) for w in WIDTHS for check, text in heard_once
    )
    missing = "no element has this id"
    far = "lands on <tr> around <span>; the value is out of sight"
    other = "lands on <tr> around <span> reading '21.0 ms'"  # row 2's text, the row number and its value
    landings = [("'3' -> e.html…#gone", missing), ("'777' -> e.html…#far", far), ("'9.9 ms' -> e.html…#row-2", other)]
    assert [g for g in got if g[1] not in ("answer", "console", "offsite") and "'Wide'" not in g[2]] == [
        *[("1440 light", "number-link", f"{link}: {why}") for link, why in landings],
        ("1440 light", "table-hidden-columns", "table under 'Shifted' [key column | b] hides key column"),
        ("1440 light", "table-key-column", "table under 'Shifted' [key column | b]: 2 of 2 key cells out of sight"),
        (
            "390 light",
            "chart-text",
            "chart 'tiny' draws 'small' at 6.0 px (< 12)",
        ),  # 20 px in a 1000-wide box drawn 300 px
        *[("390 light", "number-link", f"{link}: {why}") for link, why in landings],
    ]
    assert seen == {"views": 2, "tables": 3, "charts": 2}
