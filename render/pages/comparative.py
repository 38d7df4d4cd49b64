"""The comparative-sentence lint: a comparison near a number is a checked claim or visibly marked context.

A sentence in a page's prose is *comparative* when it holds a word that states an order, a direction or
a size (``faster``, ``after``, ``below``, ``within``, ``than``, ``more``, ``small``, ... in ``WORDS``) and
also a number: a placeholder (``{{ ... }}``, a page function's Quantity), a figure typed in prose, or a
number word (``four sessions``). Such a sentence is a statement about the evidence, so the build checks
it (ARCHITECTURE.md §Pages): it passes when it holds a ``claim()`` (whose text the build shows only while
its comparison holds; the writer makes the claim state the sentence's comparison, e.g. ``X against Y,
{{ claim(x < y, "the smaller") }}``), or when it carries ``{{ context() }}``, which shows the reader the
mark ``CONTEXT_MARK`` (the sentence is background the evidence cannot check: a method's rule, an order
of steps, a reason). Any other comparative sentence fails the build with its file and line. Records and
the playbook are linted (issue 23); the methodology page states the rules themselves and is not.

What is prose is ``render.pages.lint.mask``'s answer (fenced and inline code, link targets and URLs are
not); a claim's or context's placeholder counts as neither a number nor a comparison, and any other
placeholder counts as a number. Sentences end at ``. ! ? :`` or ``;`` followed by a space, at a blank
line, a heading, a list item or a table cell, so one claim cannot cover its neighbours.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

CONTEXT_MARK = "(context, not checked)"
"""What ``{{ context() }}`` shows after a sentence the evidence cannot check (the one copy of the wording)."""

WORDS = (
    "faster", "slower", "quicker", "sooner", "earlier", "later", "after", "before", "below", "above",
    "within", "than", "more", "less", "fewer", "small", "smaller", "large", "larger", "higher", "lower",
    "greater", "longer", "shorter", "exceeds", "exceed",
)  # fmt: skip
"""Words that state an order, a direction or a size (issue 23's list, with their comparative forms)."""

_NUMBER_WORDS = (
    "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve", "dozen",
    "hundred", "thousand", "once", "double", "triple",
)  # fmt: skip

_WORD = re.compile(r"\b(" + "|".join(WORDS) + r")\b", re.IGNORECASE)
_DIGITS = re.compile(r"(?<![\w.-])\d[\d,]*(?:\.\d+)?(?![\w-])")
_SPELLED = re.compile(r"\b(" + "|".join(_NUMBER_WORDS) + r")\b", re.IGNORECASE)
_PLACEHOLDER = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
_CHECKED = re.compile(r"^\s*-?\s*(claim|context)\s*\(")
_OTHER_TAG = re.compile(r"\{%.*?%\}|\{#.*?#\}", re.DOTALL)
# Sentence ends: punctuation then space, a blank line, a heading, a list item, a table cell, a quote.
_BREAK = re.compile(r"(?<=[.!?:;])\s+|\n\s*\n|\n(?=\s*(?:#|[-*+]\s|\d+\.\s|>))|\|")

NUMBER = "\x01"
"""What an unchecked placeholder reads as: a number (a Quantity, usually)."""
MARK = "\x02"
"""What ``{{ context() }}`` reads as."""
CLAIM = "\x03"
"""What a ``{{ claim(...) }}`` reads as."""


@dataclass(frozen=True)
class Hit:
    """One comparative sentence that is neither a claim nor marked context."""

    where: str
    line: int
    """1-based line in the file where the sentence starts."""
    word: str
    """The comparative word found."""
    sentence: str
    """The sentence as written (shortened)."""

    def __str__(self) -> str:
        return (
            f"{self.where} line {self.line}: comparative sentence ({self.word!r} near a number) is not checked: "
            f"{self.sentence!r}; make it a claim(...) the evidence checks, or end it with {{{{ context() }}}}"
        )


def _fill(match: re.Match[str], char: str) -> str:
    """The match replaced by ``char`` once and spaces, keeping its newlines (lines and columns stay put)."""
    body = re.sub(r"[^\n]", " ", match.group(0))
    return char + body[1:] if char else body


def _placeholders(text: str) -> str:
    """Placeholders as one marker character each: a claim blank, context ``MARK``, anything else ``NUMBER``."""

    def one(m: re.Match[str]) -> str:
        inner = m.group(1)
        if _CHECKED.match(inner):
            return _fill(m, MARK if inner.strip().lstrip("-").strip().startswith("context") else CLAIM)
        return _fill(m, NUMBER)

    return _OTHER_TAG.sub(lambda m: _fill(m, ""), _PLACEHOLDER.sub(one, text))


def sentences(text: str, masked: str) -> list[tuple[int, str, str]]:
    """(offset, prose as the lint reads it, original text) of each sentence of ``text``.

    ``masked`` is ``text`` with everything but prose blanked (``render.pages.lint.mask``, which blanks
    placeholders too): the markers of ``_placeholders`` are put back where it left prose.
    """
    marked = _placeholders(text)
    prose = "".join(m if m in (NUMBER, MARK, CLAIM) else k for m, k in zip(marked, masked, strict=True))
    out, start = [], 0
    for b in [*_BREAK.finditer(prose), None]:
        end = b.start() if b else len(prose)
        if prose[start:end].strip():
            out.append((start, prose[start:end], text[start:end]))
        start = b.end() if b else end
    return out


def find(text: str, masked: str, where: str, first_line: int = 1) -> list[Hit]:
    """Every comparative sentence in ``text`` (prose as in ``masked``) that is not a claim nor marked context."""
    hits = []
    for offset, prose, original in sentences(text, masked):
        if MARK in prose or CLAIM in prose:
            continue
        word = _WORD.search(prose)
        if word and (NUMBER in prose or _DIGITS.search(prose) or _SPELLED.search(prose)):
            line = first_line + text.count("\n", 0, offset + len(prose) - len(prose.lstrip()))
            shown = " ".join(original.split())
            hits.append(Hit(where, line, word.group(0), shown if len(shown) <= 2000 else shown[:1997] + "..."))
    return hits
