"""The browser tour's checks (tests/test_tour.py): what it reads in a page, what it counts as a failure, its report.

``record_view`` reads one record page in a tab (``PAGE_JS``: its number links, Answer, tables, charts' text);
``follow_links`` jumps to every number link's target on the evidence pages (``LINK_JS``); ``report`` groups the
``Failure`` list per page and per check. Kept apart from the test file so that file holds the fixtures and the
tests; bench/screenshots.py serves the site and opens Chromium for both.
"""

from __future__ import annotations

import collections
import re
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conftest import HANG_S, bench_module

shots = bench_module("screenshots")

ANSWER = ".admonition.answer"
"""Where a record states its Answer (issue 28's "An Answer at the top of every record version"): adjust it to
the element the answers change emits."""
NUMBER_LINK = 'article a[href*="evidence/"][href*=".html#"]'
"""A number's link: to a place on an evidence page; links named ``sha256:...`` (an evidence id) are not numbers, and
a number's further links (``[2]``, one per further evidence document) are checked for the number they follow."""
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

# The record page as a reader first sees it: its number links, its Answer's box, and (when asked) its tables and
# its charts' smallest text. Chart text is measured as drawn: font size times the text's screen transform (the
# SVG's own scaling to its box); a static chart (<img> of an SVG) is parsed into a hidden box of the image's
# drawn size and measured the same way.
PAGE_JS = """
async ([answer, numberLink, withTables, withCharts]) => {
  const squash = s => s.replace(/\\s+/g, '');
  const text = a => a.textContent.replace(/\\s+/g, ' ').trim();
  // A number's further evidence links read "[2]", "[3]" after it: each is followed as the number it belongs to,
  // which must show where that document's inputs are (render.numbers.links.number_links); one with no number
  // link before it keeps its own text, and fails.
  const further = /^\\[\\d+\\]$/;
  const valueOf = a => {
    let e = a;
    while (e && e.tagName === 'A' && further.test(text(e))) e = e.previousElementSibling;
    return e && e.tagName === 'A' ? text(e) : text(a);
  };
  const links = [...document.querySelectorAll(numberLink)]
    .map(a => ({href: a.href, text: further.test(text(a)) ? valueOf(a) : text(a)}))
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
      // a row not drawn (a head row with no text, render/assets/tables.css) holds no column and no key
      const rows = [...table.rows].filter(r => r.getClientRects().length > 0);
      const head = [...(rows[0] ? rows[0].cells : [])];
      const keys = rows.map(r => r.cells[0]).filter(Boolean);
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
    // A number shown rounded ("70.3 ms", "0.19%") is held by a target that shows it at more digits ("70.2743 ms",
    // "0.00190934"): the target's number, rounded to the shown number's significant figures, is the shown number
    // (a percent read as a fraction too). Any other text must appear as it is.
    const SCALE = {'%': 0.01, 'k': 1e3, 'M': 1e6, 'G': 1e9, 'T': 1e12};
    const parse = t => {
      const m = t.replace(/\u2212/g, '-').replace(/[\\s\u202f\u2009]/g, '').replace(/,(?=\\d{3})/g, '')
        .match(/^(-?\\d+(?:\\.\\d+)?)(%|k|M|G|T)?/);
      if (!m) return null;
      const digits = m[1].replace(/^-?0*\\.?0*/, '').replace('.', '').length || 1;
      return {value: parseFloat(m[1]), digits, scale: SCALE[m[2]] || 1};
    };
    const sig = (x, d) => x === 0 ? 0 : parseFloat(x.toPrecision(Math.min(Math.max(d, 1), 21)));
    const holdsNumber = (shown, where) => {
      const want = parse(shown);
      if (!want) return false;
      const plain = where.replace(/\u2212/g, '-').replace(/(\\d),(?=\\d{3})/g, '$1');
      const found = plain.match(/-?\\d+(?:\\.\\d+)?(?:e-?\\d+)?/g) || [];
      // "0.1%" may be a fixed number of decimals ('.1%') as well as significant figures: 0.000697 reads 0.1%
      const point = shown.replace(/\u2212/g, '-').match(/^-?\\d+\\.(\\d+)/);
      const decimals = point ? point[1].length : 0;
      return found.some(f => {
        const x = parseFloat(f);
        return [1, want.scale, 1 / want.scale].some(k => sig(x / k, want.digits) === sig(want.value, want.digits)
          || (decimals > 0 && Number((x / k).toFixed(decimals)) === want.value));
      });
    };
    const results = texts.map(text => {
      const want = squash(text);
      if (!whole.includes(want)) {
        if (!holdsNumber(text, target.textContent)) return {text, held: false, seen: false};
        // the smallest element that holds it at more digits (its cell), as for a text shown as it is
        let holder = target;
        for (let again = true; again;) {
          again = false;
          for (const child of holder.children) {
            if (holdsNumber(text, child.textContent)) { holder = child; again = true; break; }
          }
        }
        return {text, held: true, seen: seen(holder)};
      }
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


def slug(page: str) -> str:
    return page.removesuffix(".html").replace("/", "-")


def record_view(
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


def follow_links(
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
                tab.screenshot(path=str(shots_to / f"link-{short}-{slug(failed_fragments[0])}-{width}.png"))
                shots_taken[width] += 1
        page_of = sorted({p for texts in fragments.values() for pages in texts.values() for p in pages})[0]
        found += [Failure(page_of, scheme, "console", f"on {evidence}: {t[:200]}") for t in heard["console"]]
        found += [Failure(page_of, scheme, "offsite", f"from {evidence}: {u[:200]}") for u in heard["offsite"]]
    return found


def fragment_kind(fragment: str) -> str:
    """What a number link points at on its evidence page: its fragment's leading word (``row-95`` -> ``row``,
    ``n-…`` a derived number's own entry, ``machine-…``, ``params-…``, ``data-…``, ``point-3``)."""
    found = re.match(r"[A-Za-z]+", fragment)
    return found.group(0) if found else fragment


def coverage(links: dict[str, list[dict[str, str]]], kind_of: Callable[[str], str]) -> dict[str, set[tuple[str, str]]]:
    """Each evidence page (its URL's path) -> what following its number links covers: (its kind, ``kind_of(path)``;
    the kind of target, ``fragment_kind``) and ("record page", each record page that links it)."""
    covers: dict[str, set[tuple[str, str]]] = collections.defaultdict(set)
    for page, page_links in links.items():
        for link in page_links:
            path = urllib.parse.urlsplit(link["href"]).path
            covers[path] |= {(kind_of(path), fragment_kind(link["href"].partition("#")[2])), ("record page", page)}
    return covers


def representative_links(
    links: dict[str, list[dict[str, str]]], kind_of: Callable[[str], str]
) -> dict[str, list[dict[str, str]]]:
    """The number links (record page -> links) of the evidence pages the tour follows: together they cover all that
    ``coverage`` finds in ``links``, every (evidence page kind, target kind) pair and every record page with links.

    Chosen greedily, the page covering most of what is left first (ties by path), so the choice is fixed for a
    site. Where each link's target is and that it holds the linked value is checked on every evidence page
    without a browser (tests/test_link_targets.py); the browser adds where the jump lands on screen (the sticky
    header, a scrolling table's clip, the page's hashchange script), which is the layout of the page's kind and
    of the target's kind. The repository's 15 records link about 130 evidence pages: following them all took
    about 290 s of a loaded 2-core machine, three quarters of the tour.
    """
    covers = coverage(links, kind_of)
    left: set[tuple[str, str]] = set().union(*covers.values()) if covers else set()
    chosen: set[str] = set()
    while left:
        path = min(covers, key=lambda p: (-len(covers[p] & left), p))
        chosen.add(path)
        left -= covers[path]
    kept = {page: [x for x in v if urllib.parse.urlsplit(x["href"]).path in chosen] for page, v in links.items()}
    return {page: v for page, v in kept.items() if v}


def listen(tab: Any, heard: dict[str, list[str]]) -> None:
    """Collect ``tab``'s console errors and uncaught exceptions into ``heard["console"]``."""
    tab.on("console", lambda m: heard["console"].append(m.text) if m.type == "error" else None)
    tab.on("pageerror", lambda e: heard["console"].append(str(e)))
