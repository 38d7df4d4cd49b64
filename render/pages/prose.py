"""Prose made inert before Markdown sees it: link targets limited to http(s), mailto and relative paths, and
every ``<`` outside code escaped. These are early, Markdown-level errors only: the sanitized page is the boundary
(``render.site.sanitize``; ARCHITECTURE.md §Invariants, item 8)."""

from __future__ import annotations

import re

from render.pages.sandbox import PageError

_SAFE_URL = re.compile(r"^(https?://|mailto:|#|/|\.{0,2}/|[A-Za-z0-9_.~%-]+(?:[/?#]|$))", re.IGNORECASE)
_LINK_DEST = re.compile(r"\]\(\s*<?([^)\s>]*)")
_REF_DEST = re.compile(r"^[ \t]*\[[^\]\n]+\]:[ \t]*<?(\S*?)>?(?:\s|$)", re.MULTILINE)
_FENCE = re.compile(r"^[ \t>]*(`{3,}|~{3,})")
_INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL)
# Every '<' opens nothing, except a Markdown autolink to http(s) or mailto, which Markdown itself turns into a link,
# and an abbreviation with nothing but a plain title, as a table's long kernel names are shown
# (``render.tables.columns.markdown_grid``: the whole name, HTML-escaped, in the title; the sanitizer keeps
# ``abbr`` and ``title`` and nothing else of it). Without this a record's kernel table showed its tags as text.
_TAG_OPEN = re.compile(r"<(?!(?:https?://|mailto:)[^\s<>\"'`]*>)(?!abbr title=\"[^\"<>]*\">)(?!/abbr>)", re.IGNORECASE)


def check_links(text: str, where: str) -> None:
    """Refuse link targets with a scheme other than http(s)/mailto (``javascript:``, ``data:`` ...)."""
    for pattern in (_LINK_DEST, _REF_DEST):
        for m in pattern.finditer(text):
            target = m.group(1)
            if target and not _SAFE_URL.match(target):
                line = text.count("\n", 0, m.start(1)) + 1
                raise PageError(
                    f"{where} line {line}: link target {target[:60]!r} is not allowed; "
                    "links go to http(s), mailto or a relative path"
                )


def inert_prose(text: str) -> str:
    """Escape ``<`` outside fenced and inline code, so prose cannot carry raw HTML."""
    return _escape_outside_code(text)


def _escape_outside_code(text: str) -> str:
    lines = text.split("\n")
    fence = None
    chunks: list[tuple[bool, str]] = []  # (is_code, text)
    for line in lines:
        m = _FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)
            chunks.append((True, line))
        elif fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line[m.end() :].strip():
                fence = None
            chunks.append((True, line))
        else:
            chunks.append((False, line))
    pieces = []
    prose: list[str] = []

    def flush() -> None:
        if prose:
            block = "\n".join(prose)
            parts, last = [], 0
            for m in _INLINE_CODE.finditer(block):
                parts.append(_TAG_OPEN.sub("&lt;", block[last : m.start()]))
                parts.append(m.group(0))
                last = m.end()
            parts.append(_TAG_OPEN.sub("&lt;", block[last:]))
            pieces.append("".join(parts))
            prose.clear()

    for is_code, line in chunks:
        if is_code:
            flush()
            pieces.append(line)
        else:
            prose.append(line)
    flush()
    return "\n".join(pieces)
