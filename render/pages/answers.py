"""A record's Answer: its verdicts, built from checked claims, first under its title (issue 28, item 6).

A record's front matter ``answer`` lists one or two verdicts, each a sentence and the comparisons behind it:

```yaml
answer:
  - text: Skipping the optimizer saves {{ paired(abl, "no-optimizer").saving }} of the step.
    holds: paired(abl, "no-optimizer").saving > 0
```

Each comparison must hold, as in ``claim()``, or the build fails naming the file and entry. A sentence that
states a direction (``render.numbers.directions.VERDICT_WORDS``: faster, saves, costs, fails ...) must also be
*resolved*: every comparison behind it holds across the 95% intervals of both sides, so a saving whose interval
includes zero cannot be published as a saving. Each verdict is a claim row of the ledger, so *Changes* lists
an answer whose truth the published numbers would flip. The box also states the record's status: current or
superseded, when its evidence was measured and on what.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from measure.errors import ProbebookError
from render.numbers import claims, directions
from render.numbers.links import escape_text, relative_link
from render.pages.sandbox import (
    PageEnvironment,
    PageError,
    PageState,
    evaluate_expression,
    render_text,
    unresolved_mark,
)
from render.pages.sources import Record, SourcePage

_PLACEHOLDER = re.compile(r"\{\{.*?\}\}|\{%.*?%\}", re.DOTALL)


def plain(text: str) -> str:
    """A verdict's sentence with its placeholders as ``…``: what the ledger names it by, and what is read for a
    direction word (a word inside an expression is no statement)."""
    return " ".join(_PLACEHOLDER.sub("…", text).split())


def evaluate(
    env: PageEnvironment, page: SourcePage, context: dict[str, Any], state: PageState, superseded: bool = False
) -> list[str]:
    """The page's verdicts as Markdown, each checked; their numbers and claims become ledger rows of ``state``.

    ``superseded``: a later version replaced the page, so a direction its intervals do not resolve is marked
    (``UNRESOLVED_MARK``), not refused."""
    out = []
    for i, verdict in enumerate(page.answer):
        where = f"{page.where('answer')} (answer[{i}])"
        sentence = plain(verdict.text)
        comparisons = [evaluate_expression(env, expr, where, context) for expr in verdict.holds]
        try:
            checked = claims.make(tuple(comparisons), sentence).comparisons
        except ProbebookError as exc:
            raise PageError(f"{where}: {exc}") from None
        word = directions.verdict_direction(sentence)
        unresolved = [why for why in map(directions.unresolved, checked) if why is not None] if word else []
        if unresolved and not superseded and claims.checking():  # a reproduction's render records, never refuses
            raise PageError(f"{where}: the answer {sentence!r} says {word!r}: {unresolved[0]}")
        unnamed = [why for why in (directions.unnamed_difference(c, sentence) for c in checked) if why]
        if unnamed and word and claims.checking() and not superseded:
            raise PageError(f"{where}: the answer {sentence!r} does not name a difference: {unnamed[0]}")
        shown = render_text(env, verdict.text, where, context, state).strip()
        out.append(shown + (unresolved_mark(state) if unresolved else ""))
        row = claims.ledger_row(state.rel, list(checked), f"answer: {sentence}")
        state.claims[row["key"]] = row
        state.cited.update(e for c in checked for q in (c.left, c.right) for e in q.evidence)
    return out


def _day(doc: dict[str, Any]) -> str | None:
    try:
        return datetime.fromisoformat(str(doc.get("created_at")).replace("Z", "+00:00")).date().isoformat()
    except ValueError:
        return None


def measured(ids: list[str], docs: dict[str, dict[str, Any]]) -> str | None:
    """When the cited evidence was written: ``2026-11-30`` or ``2026-11-28 to 2026-11-30`` (None: no dates)."""
    days = sorted({d for d in (_day(docs[i]) for i in ids) if d})
    if not days:
        return None
    return days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}"


def successor(page: SourcePage, record: Record) -> SourcePage | None:
    """The version that replaced ``page``: the one that says it supersedes it, else the next (None: it is current)."""
    later = [p for p in record.versions if p.version is not None and p.version > (page.version or 0)]
    if not later:
        return None
    return next((p for p in later if p.supersedes == page.version), later[0])


def status(page: SourcePage, record: Record, when: str | None, machine: str | None) -> str:
    """The record's status line, as plain Markdown: current or superseded, and what its evidence was measured on."""
    after = successor(page, record)
    parts = ["current" if after is None else f"superseded by version {after.version} ({escape_text(after.date)})"]
    parts.append(f"version {page.version}, {escape_text(page.date)}")
    if when or machine:
        words = ["measured", *([escape_text(when)] if when else []), *(["on", escape_text(machine)] if machine else [])]
        parts.append(" ".join(words))
    return "**Status:** " + " · ".join(parts)


def box(verdicts: list[str], status_line: str, caveats: str = "") -> str:
    """The Answer box first under a record's title: its status, then its verdicts, then the caveats its evidence
    carries (``render.pages.caveats``: unstable points, drift, throttled, host-bound); empty without an answer."""
    if not verdicts:
        return ""
    out = ['!!! info answer "Answer"', "", f"    {status_line}", ""]  # class "answer": the tour finds it
    out += [f"    {' '.join(verdicts)}", ""]
    if caveats:
        out += [f"    {caveats}", ""]
    return "\n".join(out) + "\n"


_LINK = re.compile(r"\]\(([^)\s]+)")


def rebase(markdown: str, from_rel: str, to_rel: str) -> str:
    """Markdown written for page ``from_rel`` with its relative links made to work from ``to_rel`` (an answer shown
    on the records index and the home page)."""
    base = from_rel.rsplit("/", 1)[0] if "/" in from_rel else ""

    def move(m: re.Match[str]) -> str:
        target = m.group(1)
        if re.match(r"^[a-z][a-z0-9+.-]*:|^#|^/", target):
            return m.group(0)
        parts: list[str] = base.split("/") if base else []
        for piece in target.split("/"):
            if piece == "..":
                if parts:
                    parts.pop()
            elif piece not in ("", "."):
                parts.append(piece)
        return "](" + relative_link(to_rel, "/".join(parts))

    return _LINK.sub(move, markdown)
