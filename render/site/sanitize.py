"""The boundary between untrusted prose or evidence and the browser: an allowlist HTML sanitizer.

Records are written by many hands and evidence comes from other machines, so Markdown-level
guards (``render.pages.prose.inert_prose``, ``check_links``) cannot be the boundary: a Markdown parser
recognises code spans, fences and reference links in ways no imitation matches exactly. After the
site engine has written the HTML, the content area of every page (records, the playbook and every
generated page, Changes included) goes through nh3 (the binding to the Rust ``ammonia``
sanitizer), which keeps only the tags and attributes below and only http(s), mailto and relative
URLs. The theme's own scripts sit outside the content area and are left as the theme wrote them.
The search index holds each page's text as HTML too, so its ``title`` and ``text`` fields get the
same treatment.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nh3

from measure.errors import ProbebookError
from render.site import frame

# What Python-Markdown with the extensions in mkdocs.yml (tables, toc, admonition, superfences,
# details) and probebook's page functions (number links, tables, chart images) put in a page.
TAGS = frozenset(
    {
        "a", "abbr", "b", "blockquote", "br", "caption", "code", "dd", "del", "details", "div", "dl", "dt",
        "em", "figcaption", "figure", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "ins", "kbd",
        "li", "mark", "ol", "p", "pre", "q", "s", "samp", "small", "span", "strong", "sub", "summary", "sup",
        "table", "tbody", "td", "tfoot", "th", "thead", "tr", "u", "ul", "var", "wbr",
    }
)  # fmt: skip
_EVERYWHERE = {"class", "id", "title"}
ATTRIBUTES = {
    "*": _EVERYWHERE,
    "a": {"href"},
    "img": {"src", "alt", "width", "height", "loading"},
    "td": {"style", "colspan", "rowspan"},
    "th": {"style", "colspan", "rowspan", "scope"},
    "ol": {"start"},
    "details": {"open"},
}
URL_SCHEMES = frozenset({"http", "https", "mailto"})
# Markdown tables align columns with ``style="text-align: ..."``; no other CSS property passes.
STYLE_PROPERTIES = frozenset({"text-align"})
# Dropped with their content, not just unwrapped: their text is code or markup, never prose.
DROP_WITH_CONTENT = frozenset({"script", "style", "template", "noscript", "iframe", "object", "embed", "svg", "math"})

# The theme's content area in every page mkdocs-material writes (its ``main.html``). Pages are handled as bytes:
# the theme's navigation around the content is most of each file (about 400 KB a page on a 1,000-page site)
# and is never decoded, only copied.
_ARTICLE_OPEN = b'<article class="md-content__inner md-typeset">'
_ARTICLE_CLOSE = b"</article>"


@dataclass(frozen=True)
class EngineTheme:
    """Where one site engine's theme puts a page's content and the search index (``render.site.engines`` picks one)."""

    name: str
    """The theme, as error lines name it."""
    opening: re.Pattern[bytes]
    """The theme's own markup that opens the content area; the area starts right after it."""
    looks_for: str
    """That markup in words, for the line that refuses a page without it."""
    search_index: str
    """The search index's path in the site; its entries' ``title`` and ``text`` are HTML."""
    entries: str
    """The key of the index's list of entries."""


MATERIAL = EngineTheme(
    "mkdocs-material",
    re.compile(re.escape(_ARTICLE_OPEN)),
    _ARTICLE_OPEN.decode(),
    "search/search_index.json",
    "docs",
)
# Zensical's ``base.html`` (0.0.x) opens the same article with the theme's skip-link target,
# ``<a id="__skip" tabindex="-1"></a>``: the theme's, so it stays outside the area (the allowlist would drop both
# attributes). A page without it is not a page of this theme, and is refused like any other.
ZENSICAL = EngineTheme(
    "zensical",
    re.compile(re.escape(_ARTICLE_OPEN) + rb'\s*<a id="__skip" tabindex="-1"></a>'),
    _ARTICLE_OPEN.decode() + " then the skip-link target",
    "search.json",
    "items",
)


class SanitizeError(ProbebookError):
    """A built page lacks the content area the sanitizer cleans (a theme it does not know)."""


# With ``content.tooltips`` the theme puts a ``title`` into the page as HTML (its tooltip is made from the text):
# a title that holds a tag would become one, on hover or focus. Angle brackets become look-alikes.
_TOOLTIP_SAFE = str.maketrans({"<": "‹", ">": "›"})


def _attribute(element: str, attribute: str, value: str) -> str | None:
    """Drop ids the theme's own elements use (``__config``, ``__drawer`` ...): content must not clobber them;
    keep markup out of titles."""
    if attribute == "id" and value.startswith("__"):
        return None
    if attribute == "title":
        return value.translate(_TOOLTIP_SAFE)
    return value


# The allowlist as nh3's arguments: ``nh3.clean`` builds a sanitizer from them on every call, which cost
# about three quarters of each call on a page's content or a search entry (``bench/render.py --sanitizer``
# times both ways on one site); one ``nh3.Cleaner`` is built once and reused.
OPTIONS: dict[str, Any] = {
    "tags": set(TAGS),
    "clean_content_tags": set(DROP_WITH_CONTENT),
    "attributes": {k: set(v) for k, v in ATTRIBUTES.items()},
    "attribute_filter": _attribute,
    "strip_comments": True,
    "link_rel": None,
    "url_schemes": set(URL_SCHEMES),
    "filter_style_properties": set(STYLE_PROPERTIES),
    # Every image loads lazily (issue 42, item 5): a chart is a light and a dark SVG of which the theme hides one
    # (``#only-light``, ``#only-dark``), and a hidden lazy image is never fetched, so a page loads its charts in
    # the scheme shown, each as it nears the screen; on batch-sweep that halves the SVG bytes (four of about 95 KB).
    "set_tag_attribute_values": {"img": {"loading": "lazy"}},
}
_CLEANER = nh3.Cleaner(**OPTIONS)


def clean_fragment(html: str) -> str:
    """One HTML fragment through the allowlist; what is not allowed is removed, text is kept as text."""
    return _CLEANER.clean(html)


def _area(html: bytes, where: str, theme: EngineTheme) -> tuple[int, int]:
    """Where the content area starts and ends: from the end of the theme's opening markup to the page's *last*
    ``</article>``, so a stray end tag in the content cannot end it early and leave what follows outside."""
    found = theme.opening.search(html)
    end = html.rfind(_ARTICLE_CLOSE)
    if found is None or end < found.end():
        raise SanitizeError(f"{where}: no content area ({theme.name}'s {theme.looks_for}) to sanitize")
    return found.end(), end


def frame_parts(html: bytes, where: str, theme: EngineTheme = MATERIAL) -> tuple[bytes, bytes]:
    """The page outside its content area (the theme's frame): the bytes before it and after it."""
    head, end = _area(html, where, theme)
    return html[:head], html[end:]


def clean_page(html: bytes, where: str, theme: EngineTheme = MATERIAL) -> bytes:
    """A whole page with its content area sanitized and everything outside it (the theme) byte for byte, once
    that frame is checked against what a clean build of the theme writes (``render.site.frame``)."""
    head, end = _area(html, where, theme)
    frame.check([html[:head], html[end:]], where, frame.frame_of(theme.name))
    content = html[head:end].decode("utf-8")
    clean = clean_fragment(content)
    if clean == content:
        return html
    return html[:head] + clean.encode("utf-8") + html[end:]


def clean_entry(entry: dict) -> bool:
    """Sanitize one search index entry's ``title`` and ``text`` in place; True when either changed."""
    changed = False
    for name in ("title", "text"):
        value = entry.get(name)
        if isinstance(value, str) and value:
            # the serializer writes U+00A0 as ``&nbsp;``: the same character, but the index keeps it as text
            clean = clean_fragment(value).replace("&nbsp;", "\xa0")
            changed = changed or clean != value
            entry[name] = clean
    return changed


_EVIDENCE_SECTION = re.compile(r"^evidence/[0-9a-f]{64}\.html#")


def searchable(entry: dict) -> bool:
    """Whether a search index entry stays in the index: not a section of an evidence page (its raw samples, params,
    machine, other data). Those were four fifths of the repository's 3.5 MB index, which the search worker fetches
    and indexes before search answers, so "Initializing search" showed for about 6 s (issue 28, item 8). The
    page's own entry stays, with its title and full and short id, so an evidence id is still found by search."""
    location = entry.get("location")
    return not (isinstance(location, str) and _EVIDENCE_SECTION.match(location))


def write_search_index(path: Path, index: dict) -> None:
    """The index in one form whatever the sanitizer changed, so a merged index (``render.assemble.dirty``) matches a
    full one."""
    path.write_text(json.dumps(index, sort_keys=True, ensure_ascii=False), encoding="utf-8")


def clean_search_index(path: Path, theme: EngineTheme = MATERIAL) -> bool:
    """Sanitize each entry's ``title`` and ``text`` in the theme's search index; True when it changed."""
    index = json.loads(path.read_text(encoding="utf-8"))
    entries = index.get(theme.entries) if isinstance(index, dict) else None
    if not isinstance(entries, list):
        raise SanitizeError(f"{path}: not a {theme.name} search index (no list {theme.entries!r}) to sanitize")
    kept = [doc for doc in entries if searchable(doc)]
    changed = len(kept) != len(entries)
    for doc in kept:
        changed = clean_entry(doc) or changed
    write_search_index(path, {**index, theme.entries: kept})
    return changed


def clean_site(
    site: Path, only: list[Path] | None = None, theme: EngineTheme = MATERIAL, swept: BackgroundSanitizer | None = None
) -> int:
    """Sanitize every HTML page's content area under ``site`` and the search index; return pages cleaned.

    ``only`` limits it to those pages (the ones an incremental build rewrote: the rest passed before, and
    ``render.assemble.dirty`` merged the index from entries that did); ``swept``: pages a ``BackgroundSanitizer``
    cleaned while the
    engine ran are skipped if they are still as it left them.
    """
    pages = sorted(site.rglob("*.html")) if only is None else [p for p in only if p.suffix == ".html"]
    if swept is not None:
        pages = [p for p in pages if not swept.left_as_cleaned(p)]

    def one(path: Path) -> None:
        raw = path.read_bytes()
        clean = clean_page(raw, str(path), theme)
        if clean is not raw:
            path.write_bytes(clean)

    # nh3 lets go of the GIL while it cleans, so pages are cleaned on every core; each page is its own
    # file, so the order of the work changes no byte, and the first page refused stops the build.
    with ThreadPoolExecutor(max_workers=min(len(pages), os.cpu_count() or 1) or 1) as pool:
        for _ in pool.map(one, pages):
            pass
    count = len(pages)
    index = site / theme.search_index
    if only is None and index.is_file():
        clean_search_index(index, theme)
    inline_search_index(index)
    return count


def inline_search_index(index: Path) -> bool:
    """Rewrite the offline plugin's ``search_index.js`` (the index for file:// pages) from the final, sanitized
    ``search_index.json``: the plugin wrote it from the engine's index, before the sanitizer (and, in an
    incremental build, before the index was merged). True when there was one to rewrite."""
    inline = index.with_suffix(".js")
    if not (index.is_file() and inline.is_file()):
        return False
    inline.write_text("var __index = " + index.read_text(encoding="utf-8"), encoding="utf-8")
    return True


_FINISHED = re.compile(rb"</html>\s*\Z")
"""How a written page ends: an engine writes a page whole, once, so a page that ends so is complete."""


class BackgroundSanitizer:
    """Cleans the pages a site engine has finished writing, while it still writes others (``render.assemble.deferred``).

    mkdocs writes every page once, whole, into a folder of its own; a page read whole (it ends with
    ``</html>`` and is as long as its file) is cleaned exactly as ``clean_site`` would, and put in place by
    a rename, so nothing ever reads half a page. ``clean_site(swept=...)`` then cleans every page this did
    not, or that changed since. Only for engines and configs that write no page twice (``render.assemble.deferred``).
    """

    def __init__(self, site: Path, theme: EngineTheme = MATERIAL):
        self.site = site
        self.theme = theme
        self.done: dict[Path, tuple[int, int, int]] = {}
        """Page -> (inode, size, mtime) as this left it, cleaned."""

    def once(self, stop: Callable[[], bool] = lambda: False) -> int:
        """One pass over the pages written so far, until ``stop()``; returns how many it cleaned."""
        cleaned = 0
        for path in sorted(self.site.rglob("*.html")):
            if path in self.done:
                continue
            if stop():
                break
            try:
                before = _signature(path)
                raw = path.read_bytes()
                if len(raw) != before[1] or not _FINISHED.search(raw, max(0, len(raw) - 64)):
                    continue  # still being written
                clean = clean_page(raw, str(path), self.theme)
                if _signature(path) != before:
                    continue  # written again while it was read: the final pass cleans it
                if clean is not raw:
                    temp = path.with_name(f".{path.name}.clean")
                    temp.write_bytes(clean)
                    os.replace(temp, path)
                self.done[path] = _signature(path)
            except (OSError, SanitizeError, frame.FrameError):
                continue  # the final pass cleans it, or refuses it with its own line
            cleaned += 1
        return cleaned

    def left_as_cleaned(self, page: Path) -> bool:
        """Whether ``page`` is as this pass left it once cleaned."""
        done = self.done.get(page)
        try:
            return done is not None and _signature(page) == done
        except OSError:
            return False


def _signature(path: Path) -> tuple[int, int, int]:
    st = path.stat()
    return st.st_ino, st.st_size, st.st_mtime_ns


def learn_frame(site: Path, theme: EngineTheme = MATERIAL) -> frame.Frame:
    """The frame of ``theme`` as the clean build in ``site`` writes it (``render.site.frame``)."""
    pages = [frame_parts(p.read_bytes(), str(p), theme) for p in sorted(site.rglob("*.html"))]
    return frame.learn(theme.name, pages)


if __name__ == "__main__":  # python -m render.site.sanitize --frame SITE THEME: keep the frame of a clean build
    import sys

    if len(sys.argv) != 4 or sys.argv[1] != "--frame":
        raise SystemExit("usage: python -m render.site.sanitize --frame SITE THEME (mkdocs-material or zensical)")
    chosen = {t.name: t for t in (MATERIAL, ZENSICAL)}[sys.argv[3]]
    (frame.FOLDER / f"{chosen.name}.json").write_text(
        learn_frame(Path(sys.argv[2]), chosen).to_json(), encoding="utf-8"
    )
