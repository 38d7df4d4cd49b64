"""Page weights of a built site: the first page, the heaviest page, and the whole site, as a browser loads them.

Run: ``python bench/page_weight.py --site site`` (after ``probebook build``); ``--json FILE`` keeps the numbers.

A page's weight is every response a headless Chromium (``bench/screenshots.py``'s, served the same way, 1440 px,
light scheme) receives while it opens the page, waits for the network to settle, brings every chart near the
screen and waits until each is drawn: the HTML, its CSS and scripts, fonts, images, the chart manifest, specs
and bundle, and whatever the theme fetches (the search index). Each body is counted raw (as
``http.server`` sends it, uncompressed) and gzipped at level 6 (about what a static host serves), since the
site's text compresses several-fold and a reader on a phone pays the gzipped bytes.

The heaviest page is found in two steps, since loading all of a site's pages in a browser takes too long: each
HTML page gets a static estimate (its own bytes plus the local files its ``src`` and ``href`` attributes
name that are images, styles, scripts or chart specs, and on a page with a chart the chart manifest and
bundle), and the ``--candidates`` largest estimates are loaded in the browser; the heaviest of those measured
is reported. The whole site is every file under ``--site``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
import urllib.parse
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import screenshots  # bench/ is not a package: the sibling script serves and drives the browser

_REF = re.compile(r'(?:src|href)="([^"#?]+)[^"]*"')
_LOADED = (".css", ".js", ".svg", ".png", ".jpg", ".webp", ".woff2", ".vl.json")
"""What a page's reference loads (or, for a spec, the chart script fetches): not the pages it links to, nor an
evidence page's JSON and CSV downloads."""
_CHARTS = ("charts.json", "vega-embed.js")
"""What charts.js fetches beside itself (in the site's assets/probebook/) once a page has a chart."""


@dataclass
class Weight:
    """One page as loaded: its responses' bytes, raw and gzipped, and by kind."""

    page: str
    requests: int = 0
    raw: int = 0
    gzip: int = 0
    by_kind: dict[str, dict[str, int]] = field(default_factory=dict)


def kind(url: str) -> str:
    """The kind of a response, from its path's ending: html, css, js, svg, spec, search, json, font or other."""
    path = urllib.parse.urlsplit(url).path
    if path.endswith(".vl.json"):
        return "spec"
    if path.endswith("search_index.json"):
        return "search"
    if path.endswith(("/", ".html")):
        return "html"
    suffix = path.rsplit(".", 1)[-1] if "." in path.rsplit("/", 1)[-1] else ""
    return {"css": "css", "js": "js", "svg": "svg", "json": "json", "woff2": "font", "woff": "font"}.get(
        suffix, "other"
    )


def gzipped(body: bytes) -> int:
    """The size of ``body`` gzipped at level 6 (a static host's usual setting)."""
    return len(gzip.compress(body, compresslevel=6, mtime=0))


def estimate(site: Path, page: Path) -> int:
    """``page``'s own bytes plus the local files it references that a browser loads with it (see ``_LOADED``)."""
    text = page.read_text(encoding="utf-8", errors="replace")
    seen: set[Path] = set()
    total = page.stat().st_size
    for ref in _REF.findall(text):
        if "://" in ref or ref.startswith(("data:", "mailto:", "//")) or not ref.endswith(_LOADED):
            continue
        target = (page.parent / urllib.parse.unquote(ref)).resolve()
        if target in seen or not target.is_file() or site.resolve() not in target.parents:
            continue
        seen.add(target)
        total += target.stat().st_size
    if any(p.name.endswith(".vl.json") for p in seen):  # charts.js then loads the manifest and the bundle
        total += sum(p.stat().st_size for p in (site / "assets" / "probebook").glob("*") if p.name in _CHARTS)
    return total


def measure(browser: Any, base: str, page: str, timeout_s: float) -> Weight:
    """``page`` (relative to the site) loaded in ``browser`` with its charts drawn: every response counted."""
    weight = Weight(page)
    bodies: list[tuple[str, bytes]] = []
    context = screenshots.open_context(browser, 1440, "light")
    try:
        tab = context.new_page()

        def heard(response: Any) -> None:
            try:
                bodies.append((response.url, response.body()))
            except Exception:  # a redirect or an aborted request has no body to count
                pass

        tab.on("response", heard)
        tab.goto(base + page, wait_until="networkidle")
        screenshots.wait_for_charts(tab, timeout_s)
        tab.wait_for_load_state("networkidle")
    finally:
        context.close()
    for url, body in bodies:
        k = weight.by_kind.setdefault(kind(url), {"requests": 0, "raw": 0, "gzip": 0})
        z = gzipped(body)
        k["requests"] += 1
        k["raw"] += len(body)
        k["gzip"] += z
        weight.requests += 1
        weight.raw += len(body)
        weight.gzip += z
    return weight


def site_total(site: Path) -> dict[str, int]:
    """Every file under ``site``: how many, their bytes, and the HTML pages' count and bytes."""
    files = [p for p in site.rglob("*") if p.is_file()]
    html = [p for p in files if p.suffix == ".html"]
    return {
        "files": len(files),
        "bytes": sum(p.stat().st_size for p in files),
        "html_pages": len(html),
        "html_bytes": sum(p.stat().st_size for p in html),
    }


def _mib(n: int) -> str:
    return f"{n / 1024:.0f} KiB" if n < 1024 * 1024 else f"{n / 1024 / 1024:.2f} MiB"


def _line(label: str, w: Weight) -> str:
    kinds = ", ".join(f"{k} {_mib(v['raw'])}/{_mib(v['gzip'])}" for k, v in sorted(w.by_kind.items()))
    return f"{label}: {w.page}: {w.requests} requests, {_mib(w.raw)} raw, {_mib(w.gzip)} gzipped ({kinds})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--site", type=Path, default=Path("site"), help="the built site (default: site)")
    parser.add_argument("--candidates", type=int, default=8, help="pages loaded to find the heaviest (default 8)")
    parser.add_argument("--json", type=Path, help="also write the numbers to this file")
    args = parser.parse_args(argv)
    if not (args.site / "index.html").is_file():
        print(f"error: --site {args.site}: no index.html (build the site with probebook build first)", file=sys.stderr)
        return 2
    if args.candidates < 1:
        print(f"error: --candidates {args.candidates}: must be at least 1", file=sys.stderr)
        return 2
    if not screenshots.CHROMIUM.exists():
        print(f"error: {screenshots.CHROMIUM} is not installed", file=sys.stderr)
        return 2
    pages = sorted(args.site.rglob("*.html"))
    ranked = sorted(pages, key=lambda p: estimate(args.site, p), reverse=True)[: args.candidates]
    with screenshots.serve(args.site) as base, screenshots.chromium() as browser:
        first = measure(browser, base, "index.html", 120)
        weights = [measure(browser, base, p.relative_to(args.site).as_posix(), 300) for p in ranked]
    heaviest = max(weights, key=lambda w: w.raw)
    total = site_total(args.site)
    print(_line("first page", first))
    print(_line("heaviest page", heaviest))
    for w in sorted(weights, key=lambda w: w.raw, reverse=True):
        print(f"  candidate {w.page}: {_mib(w.raw)} raw, {_mib(w.gzip)} gzipped, {w.requests} requests")
    print(
        f"site: {total['files']} files, {_mib(total['bytes'])}; {total['html_pages']} HTML pages, "
        f"{_mib(total['html_bytes'])}"
    )
    if args.json:
        doc = {"first": asdict(first), "heaviest": asdict(heaviest), "candidates": [asdict(w) for w in weights]}
        args.json.write_text(json.dumps({**doc, "site": total}, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
