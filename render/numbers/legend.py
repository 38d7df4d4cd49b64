"""Marks a reader understands: a compact sign after a number or sentence, its meaning in the sign's tooltip, and one
legend per page that says what each sign on the page means (issue 42, item 1).

A page once repeated the words beside every number ("(partial)" 89 times on one page, "(context, not checked)"
after every unchecked sentence). Each such mark is now a sign that links to the page's legend, titled by its meaning,
so it reads on hover and keyboard focus (the theme's tooltips) and from the legend at the foot of the page. Plain
Markdown links: a rendered page carries no raw HTML (``render.pages.prose.inert_prose``). The ledger keeps the words
(``Quantity.shown_text``); only what a page shows changes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Sign:
    """One mark as a page shows it."""

    symbol: str
    """What the page shows (one character, not a word or a digit a reader might take for part of the number)."""
    name: str
    """The mark's short name, as the legend lists it."""
    meaning: str
    """What it tells the reader, in one sentence (its tooltip and its legend line)."""


ANCHOR = "marks"
"""The legend's heading anchor (``## Marks``): every sign links here."""

PARTIAL = Sign("†", "partial", "from partial evidence: a run that did not measure every point it planned")
CONTEXT = Sign("‡", "context, not checked", "a comparative sentence the evidence does not check (a rule, a reason)")
UNRESOLVED = Sign(
    "§",
    "not resolved today",
    "a superseded version's words that the intervals computed today do not resolve; a later version says otherwise",
)
SIGNS: dict[str, Sign] = {"partial": PARTIAL, "context": CONTEXT, "not resolved": UNRESOLVED}
"""Mark -> its sign. A mark not named here (host-bound, lack of fit, throttled) stays a word: it says what it is."""


def sign_markdown(sign: Sign) -> str:
    """The sign as a Markdown link to the legend, its meaning as the link title: `` [†](#marks "partial: …")``."""
    return f'[{sign.symbol}](#{ANCHOR} "{sign.name}: {sign.meaning}")'


def split_marks(mark: str | None) -> tuple[list[Sign], list[str]]:
    """A Quantity's ``mark`` (words joined by ", ") as (the signs among them, the words that stay words)."""
    signs, words = [], []
    for word in (w.strip() for w in (mark or "").split(",")):
        if word in SIGNS:
            signs.append(SIGNS[word])
        elif word:
            words.append(word)
    return signs, words


_USED = re.compile(r"\]\(#" + ANCHOR + r' "([^"]+?):')


def legend(text: str) -> str:
    """The legend of the signs a page's Markdown uses, in the order of ``SIGNS``; "" when it uses none."""
    used = set(_USED.findall(text))
    shown = [s for s in SIGNS.values() if s.name in used]
    if not shown:
        return ""
    lines = ["", "## Marks", "", "Signs on this page, each also explained where it stands (hover or focus it):", ""]
    lines += [f"- **{s.symbol}** {s.name}: {s.meaning}." for s in shown]
    return "\n".join(lines) + "\n"


def with_legend(text: str) -> str:
    """A page's Markdown with the legend of its signs at the end (unchanged when it shows none)."""
    extra = legend(text)
    return text if not extra else text.rstrip("\n") + "\n" + extra
