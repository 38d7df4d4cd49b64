"""What commands print for other programs: JSON that any parser reads."""

from __future__ import annotations

import html
import json
import re
from typing import Any

from measure.errors import ProbebookError

# C1 controls and DEL are legal raw inside JSON strings but act on a terminal; written as \u escapes.
_C1 = re.compile("[\x7f-\x9f]")


def json_text(obj: Any, **options: Any) -> str:
    """``json.dumps`` that never writes ``Infinity`` or ``NaN`` (not JSON; refused with one line) nor a raw control."""
    try:
        text = json.dumps(obj, allow_nan=False, **options)
    except ValueError:
        raise ProbebookError(
            "the output holds a number that is not finite (Infinity or NaN), which JSON cannot carry"
        ) from None
    return _C1.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


# What a shell reads: a page's Markdown without its links' targets and titles. A number's link on a page carries
# its derivation in the title and a footnote link per further evidence; in a terminal those are noise around the
# figure, and `derive --json` keeps the Markdown for whoever embeds it.
_FOOTNOTE = re.compile(r"\s?\[\\\[\d+\\\]\]\([^)\s]*(?:\s+\"[^\"]*\")?\)")
_LINK = re.compile(r"(!?)\[((?:\\.|[^\]\\])*)\]\(([^)\s]*)(?:\s+\"[^\"]*\")?\)")
_ABBR = re.compile(r'<abbr title="[^"]*">(.*?)</abbr>')
_ESCAPED = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|<>~])")
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _link_text(m: re.Match[str]) -> str:
    """A link's text; with its target where the target is a file derive wrote beside it (a bare file name), which a
    reader opens next, or where it is an image. A number's link to its evidence page (a folder and an anchor) is
    dropped: `derive` already prints the evidence."""
    image, text, target = m.group(1), m.group(2), m.group(3)
    if image or ("/" not in target and "#" not in target and target):
        return f"{text} ({target})"
    return text


def terminal_text(markdown: str) -> str:
    """Markdown as plain text for a terminal (pure): a link shows its text (and a written file's name), an image its
    alt text and file, an ``<abbr>`` the shortened text the page shows (the CSV beside it holds the full name),
    Markdown escapes and HTML entities are undone, and control characters (from evidence) are dropped."""
    text = _FOOTNOTE.sub("", markdown)
    text = _LINK.sub(_link_text, text)
    text = _ABBR.sub(lambda m: m.group(1), text)
    text = html.unescape(_ESCAPED.sub(r"\1", text))
    return _CONTROL.sub("", text)
