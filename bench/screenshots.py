"""Before/after screenshots of the pages an issue names, from a built site, in real headless Chromium.

Run: ``python bench/screenshots.py --site site --out test-artifacts/after`` (after ``probebook build``);
``--set reader`` takes the reader set instead of the default one.

It serves ``--site`` on 127.0.0.1 (``http.server`` in a thread, a free port), opens each page of the chosen
set at 1440 and 390 px, light scheme, and saves the first screen and the full page as
``<page>-<width>-<scheme>-<first|full>.png`` under ``--out``, and on a page with charts the screen that
starts at its first chart (``-chart.png``); the set's dark pages are also taken in the dark scheme. The sets:

- ``default`` (issue 28): step-anatomy-250m and batch-sweep-h200 at their current version (the highest
  ``vN.html``) and the Changes page; step-anatomy-250m also dark.
- ``reader`` (the reader issues): the Records index, hvp-cost and eval-boundary at their current version,
  one evidence page hvp-cost cites and one reproduction page (one a step-anatomy-250m version links, else
  the first), each also dark. The evidence and reproduction pages are the first of their kind by name, so
  a site before and after a change shows the same documents while they are still cited.

A full-page shot larger than ``--max-kb`` is dropped (the first screen is kept): the shots are committed,
and a 40-screen page is several megabytes (the record pages' full shots were 0.9-4 MiB on 2026-12-02).
Charts are drawn by the site's own script after it fetches their specs: each page waits for every chart to
be drawn before its shots.

The tour test (tests/test_tour.py) imports ``serve``, ``current_records``, ``open_context`` and
``wait_for_charts`` from here, so the before/after set and the tour see the site the same way.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import http.server
import re
import sys
import threading
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
LOCAL_HOSTS = {"127.0.0.1", "localhost"}
WIDTHS = (1440, 390)
"""A desktop and a phone (an iPhone 12 to 15 is 390 CSS px wide)."""
HEIGHTS = {1440: 900, 390: 844}
"""The first screen's height at each width (a 1440x900 laptop; an iPhone 12 to 15 is 390x844 CSS px)."""
RECORDS = ("step-anatomy-250m", "batch-sweep-h200")
"""The records issue 28's closing note shows before and after, at their current version."""
DARK = ("step-anatomy-250m",)
"""Pages of the default set also taken in the dark scheme (one is enough to show the dark theme)."""
READER_RECORDS = ("hvp-cost", "eval-boundary")
"""The records the reader set shows; ``eval-boundary`` is a prefix (its record is named per machine)."""
REPRODUCED = "step-anatomy-250m"
"""The record whose reproduction page the reader set prefers."""
SETS = ("default", "reader")
_EVIDENCE_LINK = re.compile(r'href="(?:\.\./)*evidence/([0-9a-f]{64})\.html')
_COMPARISON_LINK = re.compile(r'href="(?:\.\./)*evidence/comparison/([0-9a-f]{64})\.html')
CHARTS_DRAWN_JS = (
    "() => [...document.querySelectorAll('article .pb-chart')].every(h => h.getAttribute('data-state') !== 'waiting'"
    " && (h.querySelector('svg') || h.hidden))"
)
"""True once the site's chart script has drawn (or hidden, on failure) every interactive chart."""
NEAR_CHARTS_JS = """async () => {
  const frame = () => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  const x = window.scrollX, y = window.scrollY;
  for (const h of document.querySelectorAll('article .pb-chart')) {
    (h.nextElementSibling || h).scrollIntoView();
    await frame();
  }
  window.scrollTo(x, y);
}"""
"""Brings each chart near the screen once: the site's chart script draws a chart only then (issue 42)."""


def current_records(site: Path) -> dict[str, str]:
    """Each record under ``site/records/`` -> its current page (the highest ``vN.html``), relative to ``site``."""
    found: dict[str, str] = {}
    for folder in sorted(p for p in (site / "records").iterdir() if p.is_dir()):
        versions = [int(m.group(1)) for p in folder.glob("v*.html") if (m := re.fullmatch(r"v(\d+)\.html", p.name))]
        if versions:
            found[folder.name] = f"records/{folder.name}/v{max(versions)}.html"
    return found


def pages(site: Path, which: str = "default") -> dict[str, str]:
    """The screenshot set ``which`` (one of ``SETS``): a short name -> the page, relative to ``site``."""
    if which == "reader":
        return reader_pages(site)
    current = current_records(site)
    missing = [r for r in RECORDS if r not in current]
    if missing:
        raise ValueError(f"{site}: no record folder for {', '.join(missing)} under records/")
    chosen = {r: current[r] for r in RECORDS}
    changes = next((n for n in ("changes.html", "changelog.html") if (site / n).exists()), None)
    if changes is None:
        raise ValueError(f"{site}: no changes.html (build the site with probebook build first)")
    chosen["changes"] = changes
    return chosen


def dark_pages(which: str, chosen: dict[str, str]) -> set[str]:
    """The pages of set ``which`` also taken in the dark scheme: every reader page (the reader issue asks
    for dark mode on each), the default set's ``DARK``."""
    return set(chosen) if which == "reader" else {n for n in chosen if n in DARK}


def _record(current: dict[str, str], name: str) -> str | None:
    """The current record called ``name``, else the first whose slug starts with ``name-``."""
    if name in current:
        return name
    return next((r for r in sorted(current) if r.startswith(name + "-")), None)


def reader_pages(site: Path) -> dict[str, str]:
    """The reader set: Records index, ``READER_RECORDS`` current, an evidence page hvp-cost cites, a reproduction."""
    if not (site / "records" / "index.html").is_file():
        raise ValueError(f"{site}: no records/index.html (build the site with probebook build first)")
    current = current_records(site)
    slugs = {name: _record(current, name) for name in READER_RECORDS}
    missing = [name for name, slug in slugs.items() if slug is None]
    if missing:
        raise ValueError(f"{site}: no record folder for {', '.join(missing)} under records/")
    chosen = {"records-index": "records/index.html"}
    chosen.update({name: current[slug] for name, slug in slugs.items() if slug is not None})
    cited = sorted(set(_EVIDENCE_LINK.findall((site / chosen["hvp-cost"]).read_text(encoding="utf-8"))))
    cited = [sha for sha in cited if (site / "evidence" / f"{sha}.html").is_file()]
    if not cited:
        raise ValueError(f"{site}: {chosen['hvp-cost']} cites no evidence page under evidence/")
    chosen["evidence"] = f"evidence/{cited[0]}.html"
    folder = site / "evidence" / "comparison"
    every = sorted(p.stem for p in folder.glob("*.html")) if folder.is_dir() else []
    if not every:
        raise ValueError(f"{site}: no reproduction page under evidence/comparison/")
    preferred = _record(current, REPRODUCED)
    # any version's: the current one may cite a newer run that no reproduction compares yet
    versions = sorted((site / "records" / preferred).glob("v*.html")) if preferred else []
    linked = sorted(
        {sha for v in versions for sha in _COMPARISON_LINK.findall(v.read_text(encoding="utf-8"))} & set(every)
    )
    chosen["reproduction"] = f"evidence/comparison/{(linked or every)[0]}.html"
    return chosen


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the site folder without a log line per request."""

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def serve(site: Path) -> Iterator[str]:
    """``site`` served by ``http.server`` on 127.0.0.1 (a free port) in a thread; yields the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


def open_context(browser: Any, width: int, scheme: str, offsite: Callable[[str], None] | None = None) -> Any:
    """A browser context ``width`` px wide (first-screen height ``HEIGHTS``) in ``scheme``.

    Every request off localhost is aborted (the site must work offline), and passed to ``offsite`` when given.
    """
    context = browser.new_context(viewport={"width": width, "height": HEIGHTS[width]}, color_scheme=scheme)

    def route(r: Any) -> None:
        url = r.request.url
        if urllib.parse.urlsplit(url).hostname in LOCAL_HOSTS or url.startswith(("data:", "blob:")):
            r.continue_()
        else:
            if offsite is not None:
                offsite(url)
            r.abort()

    context.route("**/*", route)
    return context


def wait_for_charts(page: Any, timeout_s: float) -> None:
    """Wait until the site's chart script has drawn every interactive chart on ``page``."""
    page.evaluate(NEAR_CHARTS_JS)
    page.wait_for_function(CHARTS_DRAWN_JS, timeout=timeout_s * 1000)


@contextlib.contextmanager
def chromium() -> Iterator[Any]:
    """A headless Chromium (``CHROMIUM``) driven by Playwright."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def take(site: Path, out: Path, max_kb: int, which: str = "default") -> list[Path]:
    """Take the screenshot set ``which`` of ``site`` into ``out``; returns the files written."""
    chosen = pages(site, which)
    dark = dark_pages(which, chosen)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    with serve(site) as base, chromium() as browser:
        for width in WIDTHS:
            for scheme in ("light", "dark"):
                names = [n for n in chosen if scheme == "light" or n in dark]
                if not names:
                    continue
                context = open_context(browser, width, scheme)
                try:
                    tab = context.new_page()
                    for name in names:
                        tab.goto(base + chosen[name], wait_until="networkidle")
                        wait_for_charts(tab, 120)
                        stem = f"{name}-{width}-{scheme}"
                        first = out / f"{stem}-first.png"
                        tab.screenshot(path=str(first))
                        written.append(first)
                        chart = tab.locator("article .pb-chart svg, article img[src*='.svg#only-']")
                        if (
                            chart.count()
                        ):  # the first chart at the top of a screen: what the chart items are about
                            chart.first.evaluate("el => el.scrollIntoView({block: 'start'})")
                            shot = out / f"{stem}-chart.png"
                            tab.screenshot(path=str(shot))
                            written.append(shot)
                            tab.evaluate("() => window.scrollTo(0, 0)")
                        full = out / f"{stem}-full.png"
                        tab.screenshot(path=str(full), full_page=True)
                        if full.stat().st_size > max_kb * 1024:
                            full.unlink()  # too large to commit: the first screen stands for it
                        else:
                            written.append(full)
                finally:
                    context.close()
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--site", type=Path, default=Path("site"), help="the built site (default: site)")
    parser.add_argument("--out", type=Path, required=True, help="folder for the PNGs, e.g. test-artifacts/after")
    parser.add_argument("--max-kb", type=int, default=300, help="drop a full-page shot larger than this (KiB)")
    parser.add_argument("--set", choices=SETS, default="default", help="which pages (default: default)")
    args = parser.parse_args(argv)
    if not (args.site / "index.html").is_file():
        print(f"error: --site {args.site}: no index.html (build the site with probebook build first)", file=sys.stderr)
        return 2
    try:
        chosen = pages(args.site, args.set)
    except ValueError as e:
        print(f"error: --site {e}", file=sys.stderr)
        return 2
    if not CHROMIUM.exists():
        print(f"error: {CHROMIUM} is not installed", file=sys.stderr)
        return 2
    for name, page in chosen.items():
        print(f"{name}: {page}")
    written = take(args.site, args.out, args.max_kb, args.set)
    for path in written:
        print(f"{path} ({path.stat().st_size // 1024} KiB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
