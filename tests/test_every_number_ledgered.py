"""A built site's pages show no number outside the ledger but their own structure (issue 23): the walk and its rules."""

from __future__ import annotations

import collections
import html.parser
import json
import posixpath
import re
from pathlib import Path
from typing import Any

import pytest

from render.numbers.said import numbers_in
from render.tables.columns import COLUMNS

STRUCTURE = {
    "date": "a date or a time of day (2026-11-29, 09:59): when a run or a build happened",
    "version": "a version (v2, versions 1 and 2, 0.1.0, 550.54.15, the Environment block's CUDA 13.0): a name",
    "heading ordinal": "a heading's leading ordinal (1. Setup)",
    "evidence link": "the [2], [3] of a number's further evidence documents",
    "column label": "a table header (unstable batches (CV over 5%)), where it is and where a note repeats it",
    "another page's number": "a record's headline on the index: a ledger row of the page it links to",
    "code": "text in code (a Reproduce command's options, hashes, a formula: `6·P`): what a reader types or compares",
    "citation": "a cited source's year or issue number (Kaplan et al. 2020, PyTorch issue 130730): the source's name",
    "formula": "a formula's whole coefficient of a symbol (4·P_all + 2·P_trainable, 6·P): the method, not a result",
    "type width": "a data type's width (the cast to 16 bits, a 16-byte alignment): a name of the type, not a result",
    "file size": "a file's size beside its SHA-256 on Benchmarks (807 bytes, SHA-256): its identity, like its hash",
}
"""What may show a number that no ledger row holds: the page's own structure. Every other number on a page is
a ledger row of that page (its shown text)."""

SKIPPED_PAGES = ("evidence/", "404.html", "changes.html", "archive/")
"""Pages not walked: an evidence page shows the evidence itself (its raw fields and samples), Changes shows other
pages' ledger rows and the diff's counts, 404 and the archive's download page show no result."""

_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?Z?)?\b|\b\d{2}:\d{2}(?::\d{2})?\b")
_ORDINAL = re.compile(r"^\s*\d+[.)]?\s")
_VERSION = re.compile(r"\b[Vv]ersions? \d+(?:(?:,| and) \d+)*\b")
_CITATION = re.compile(r"\bet al\.,? (?:19|20)\d{2}\b|\b(?:PyTorch|GitHub) issues? #?\d+\b")
_FORMULA = re.compile(r"(?<![\w.,])\d+·(?=[A-Za-z])")
_TYPE_WIDTH = re.compile(r"\b(?:8|16|32|64)(?: bits\b|-bit\b|-byte alignment\b)")
_FILE_SIZE = re.compile(r"^[\d,]+ bytes, SHA-256\b")
_ALLOWED = (_FILE_SIZE, _TYPE_WIDTH, _FORMULA, _CITATION, _DATE, _VERSION)
"""The structure matched inside a text node (``STRUCTURE``), taken out in this order before its numbers are read."""
_VERSION_ROWS = ("driver", "CUDA", "torch", "probebook", "git commit")
"""The Environment block's rows that show a version (CUDA 13.0), by their label."""
_FOOTNOTE = re.compile(r"^\[\d+\]$")
_HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
_SKIP = {"script", "style", "code", "pre", "svg", "nav", "version", "abbr"}
"""Tags whose text holds no measurement: code, and an ``abbr``, which on this site is only a table's abbreviated
kernel name, an identifier like code (``…kernel<128, 4, at::native::gpu_kernel…``: template arguments, not numbers)."""
_VOID = {"br", "img", "input", "meta", "link", "hr", "source", "col", "wbr"}


class _Walk(html.parser.HTMLParser):
    """The article's text nodes, each with the elements it is inside."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.nodes: list[tuple[str, tuple[str, ...]]] = []
        self.row: list[str] = []  # the texts of the table row so far
        self.links: list[str] = []
        self.inside = 0  # depth of <article>

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _VOID:
            return
        self.stack.append(tag)
        self.inside += tag == "article"
        if tag == "tr":
            self.row = []
        href = dict(attrs).get("href")
        if tag == "a" and self.inside and href:
            self.links.append(href)

    def handle_endtag(self, tag: str) -> None:
        if tag in _VOID or tag not in self.stack:
            return
        while self.stack:
            top = self.stack.pop()
            self.inside -= top == "article"
            if top == tag:
                break

    def handle_data(self, data: str) -> None:
        if self.inside and data.strip():
            in_cell = "td" in self.stack or "th" in self.stack
            version = in_cell and bool(self.row) and self.row[0].strip() in _VERSION_ROWS
            self.nodes.append((data, (*self.stack, "version") if version else tuple(self.stack)))
            if in_cell:
                self.row.append(data)


def kind_of(stack: tuple[str, ...]) -> str:
    """Where a text node sits, as the report names it: a table cell, a heading, an admonition, prose."""
    for tag in reversed(stack):
        if tag in ("td", "th"):
            return "table cell"
        if tag in _HEADINGS:
            return "heading"
        if tag in ("li", "p", "figcaption", "summary", "details"):
            return "prose" if tag != "figcaption" else "caption"
    return "other"


def _plain(text: str) -> str:
    return " ".join(text.replace("\u202f", " ").replace("\u00a0", " ").split())


def walked(html_text: str) -> _Walk:
    walk = _Walk()
    walk.feed(html_text)
    return walk


def unledgered(html_text: str, ledger_texts: list[str]) -> list[tuple[str, str, str]]:
    """(kind, number, the text it is in) for each number on the page that neither a ledger row of the page
    (or of a page it links to) shows nor ``STRUCTURE`` allows."""
    known = {t for text in ledger_texts for _, _, t, _ in numbers_in(_plain(text))}
    walk = walked(html_text)
    headers = {_plain(d) for d, stack in walk.nodes if "th" in stack} | {c.header for c in COLUMNS.values()}
    labels = sorted((h for h in headers if any(c.isdigit() for c in h)), key=len)
    found = []
    for data, stack in walk.nodes:
        if _SKIP.intersection(stack) or "th" in stack:
            continue  # code and column labels (STRUCTURE)
        text = _plain(data)
        if "a" in stack and _FOOTNOTE.match(text):
            continue
        if _HEADINGS.intersection(stack):
            text = _ORDINAL.sub("", text)
        for label in reversed(labels):  # a note above a table says a column's label again
            text = text.replace(label, " ")
        for allowed in _ALLOWED:
            text = allowed.sub(" ", text)
        for _, _, shown, _ in numbers_in(text):
            if shown not in known:
                found.append((kind_of(stack), shown, text[:160]))
    return found


def page_of(rel: str) -> str:
    """The tree page a built HTML file is: ``records/x/v1.html`` is ``records/x/v1.md``."""
    return rel[:-5] + ".md"


def walk_site(site: Path) -> dict[str, list[tuple[str, str, str]]]:
    """Every walked page's unledgered numbers, by page (its tree path, ``records/x/v1.md``)."""
    rows = json.loads((site / "ledger.json").read_text(encoding="utf-8"))["rows"]
    texts: dict[str, list[str]] = {}
    for r in rows:
        texts.setdefault(r["page"], []).append(r["text"])
    for r in rows:
        if r.get("interval"):
            texts[r["page"]].append(r["interval"])
    out = {}
    for path in sorted(site.rglob("*.html")):
        rel = path.relative_to(site).as_posix()
        if rel.startswith(SKIPPED_PAGES) or rel in SKIPPED_PAGES:
            continue
        html_text = path.read_text(encoding="utf-8")
        linked = {
            page_of(posixpath.normpath(posixpath.join(posixpath.dirname(rel), h.split("#")[0].split("?")[0])))
            for h in walked(html_text).links
            if h.split("#")[0].endswith(".html") and "://" not in h
        }
        page = page_of(rel)
        found = unledgered(html_text, [t for p in {page, *linked} for t in texts.get(p, [])])
        if found:
            out[page] = found
    return out


def test_the_walk_finds_a_number_no_ledger_row_shows_and_allows_the_structure():
    page = (
        "<nav>1 2 3</nav><article><h2>2. Setup at 2026-11-29 09:59</h2>"
        '<p>It took <a href="../evidence/x.html#row-1">12.3 ms</a> <a href="#">[2]</a> on torch 2.11.0, v2.</p>'
        "<table><tr><th>CV over 5%</th></tr><tr><td>4,096</td><td>17</td>"
        '<td><abbr title="void k&lt;128, 4&gt;(float)">…k&lt;128, 4&gt;…</abbr></td></tr></table>'
        "<pre><code>probebook measure gemm --batch 8</code></pre>"
        "<p>A typed 7.5 s here.</p>"
        "<p>Kaplan et al. 2020 (PyTorch issue 130730) count <code>6·P</code> or 6·P, not 6 P.</p>"
        "<p>807 bytes, SHA-256 <code>9f2c</code>.</p><p>A cast to 16 bits at 16 rows.</p></article>"
    )
    assert unledgered(page, ["12.3 ms", "4,096"]) == [
        ("table cell", "17", "17"),
        ("prose", "7.5", "A typed 7.5 s here."),
        ("prose", "6", "or  P, not 6 P."),
        ("prose", "16", "A cast to   at 16 rows."),
    ]
    assert unledgered(page, ["12.3 ms", "4,096", "17", "7.5 s", "6", "16"]) == []


def test_the_fixture_site_shows_no_number_outside_its_ledger(fixture_site: Any) -> None:
    # tables, the Environment block, alt text, notes, intervals and headlines on the index are all ledger rows,
    # and so is the width the prose states for its share(4096) call: value() of the sweep's 4096-token row
    assert walk_site(fixture_site.site) == {}


_MOE_SHAPE = (
    "a shape of the moe-250m preset (measure/workload/presets.py: experts=8) that its evidence does not record, and "
    "render may not read the workload (ARCHITECTURE.md §Invariants): record it in the probe's params to template it"
)
_MOE_PAD = (
    "the grouped experts' padding rule (a multiple of 8 rows, measure/workload) and the error torch raised without it "
    "(a multiple of 16 bytes): code and a library's message, not in the evidence"
)
REPOSITORY_EXCEPTIONS = {
    ("records/moe-experts-h200/v1.md", "8"): (2, _MOE_SHAPE + "; " + _MOE_PAD),
    ("records/moe-experts-h200/v1.md", "16"): (1, _MOE_PAD),
    ("records/moe-experts-h200/v2.md", "8"): (2, _MOE_SHAPE + "; " + _MOE_PAD),
    ("records/moe-experts-h200/v3.md", "8"): (2, _MOE_SHAPE + "; " + _MOE_PAD),
}
"""The numbers the repository's site still shows outside its ledger: (page, number as shown) -> (times, why)."""


@pytest.mark.slow
def test_the_repository_site_shows_no_number_outside_its_ledger(repository_site: Path) -> None:
    # before issue 23's pass over docs/ the walk found 102 numbers on 24 pages; what is left is REPOSITORY_EXCEPTIONS
    found = walk_site(repository_site)
    shown = collections.Counter((page, number) for page, rows in found.items() for _, number, _ in rows)
    assert shown == {where: times for where, (times, _) in REPOSITORY_EXCEPTIONS.items()}, found
