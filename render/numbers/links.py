"""Text a number's page needs around it: Markdown-inert data text, link titles, evidence page paths, short ids."""

from __future__ import annotations

import posixpath
import re
from typing import Any

_UNSAFE_TITLE = re.compile(r"[\\<>`]")


def title_text(text: str) -> str:
    """Text safe inside a Markdown link title: one line, ``"`` as ``'``, no backslashes, angle brackets or backticks."""
    return " ".join(_UNSAFE_TITLE.sub("", text.replace('"', "'")).split())


# What Markdown (with the extensions mkdocs.yml enables) or HTML could act on anywhere in a line: HTML's
# three specials become entities, Markdown's inline specials a backslash escape (Python-Markdown's
# ESCAPED_CHARS), so the generated source still reads as text ("step's", "0.00814").
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


_BACKSLASHED = set("\\`*[]|{}#")


# What acts only at the start of a line: a list item ("- ", "+ ", "12. "), a rule or setext underline ("---",
# "==="), a fence ("~~~") or an admonition ("!!!"); "+20%" or "2.11.0" are left as they read.
_LINE_START = re.compile(r"[-+](?=[\s-]|$)|[0-9]+[.)](?=\s|$)|=+\s*$|~~~|!!!")


def escape_text(text: Any) -> str:
    """Any data text -> inert Markdown that reads as the text: only what Markdown or HTML could act on is escaped.

    ``&``, ``<``, ``>`` become entities; ``\\ ` * [ ] | { } #`` and an ``_`` not inside a word get a backslash;
    a leading list, quote or ordered-list marker is escaped. Newlines become spaces, so the text stays inside
    the paragraph or table cell it was put in. The sanitizer after the engine is the boundary (ARCHITECTURE.md
    §Invariants, item 8); this keeps data from becoming markup in the first place.
    """
    s = " ".join(str(text).split())
    out = []
    for i, c in enumerate(s):
        if c in _ENTITIES:
            out.append(_ENTITIES[c])
        elif c in _BACKSLASHED or (c == "(" and i > 0 and s[i - 1] == "]"):
            out.append(
                "\\" + c
            )  # "](" would open a link target (and render.pages.sandbox.check_links refuses it early)
        elif c == "_" and not (0 < i < len(s) - 1 and s[i - 1].isalnum() and s[i + 1].isalnum()):
            out.append("\\_")  # an underscore inside a word (created_at) never emphasises
        else:
            out.append(c)
    escaped = "".join(out)
    m = _LINE_START.match(escaped)
    if m:
        end = m.end() - 1
        escaped = escaped[:end] + f"&#{ord(escaped[end])};" + escaped[end + 1 :]
    return escaped


def evidence_page(ident: str) -> str:
    """The tree path of an evidence id's generated page, e.g. ``evidence/4be1c0ff....md``."""
    return f"evidence/{ident.split(':', 1)[-1]}.md"


def relative_link(page: str, target: str) -> str:
    """A relative link from the tree page ``page`` to the tree file ``target`` (both POSIX paths)."""
    return posixpath.relpath(target, posixpath.dirname(page) or ".")


def short_id(ident: str) -> str:
    """``sha256:`` and the first 12 hex digits: enough to name an id in prose and titles."""
    hexpart = ident.split(":", 1)[-1]
    return f"sha256:{hexpart[:12]}"
