"""The evidence page of a ``reproduction`` document, read as data (issue 24): its verdicts, every number and
claim it compared, the rule and the commands, in place of the generic "Other data" field table.

It links to the reproduction's comparison page (``render.pages.reproductions``) and to both evidence sets there:
the page lists them with links to those the archive holds, which this page, made from the document alone (its
cache key is its bytes, ``render.assemble.stages.generate_pages``), cannot know. Every number's row carries the
anchor the comparison page's numbers link to (``number-<i>``); every text is escaped.
"""

from __future__ import annotations

from typing import Any

from measure.errors import printable
from render.derive import reading
from render.derive import reproduction as derive
from render.numbers.links import escape_text, evidence_page, relative_link
from render.pages import reproductions as shown


def _plain(value: float | None) -> str:
    return "—" if value is None else reading.readable_float(value)


def _interval(interval: tuple[float, float] | None) -> str:
    return "" if interval is None else f" ({_plain(interval[0])} to {_plain(interval[1])})"


def section(ident: str, doc: dict[str, Any]) -> str | None:
    """The Markdown that shows a reproduction document's data; None for any other document."""
    if doc.get("probe") != derive.PROBE:
        return None
    repro = derive.parse(ident, doc)
    rel = evidence_page(ident)
    link = relative_link(rel, shown.comparison_page(ident))
    counts = derive.verdict_counts(repro.numbers, repro.claims)
    out = ["## What this reproduction found", ""]
    out += [
        f"A {shown.mode_label(repro)} of record {escape_text(repro.record)} version {repro.version} "
        f"({escape_text(repro.title)}). [The comparison page]({link}) shows it sorted by how far each number "
        f"moved and links [the original evidence]({link}#original-evidence) and [the new]({link}#new-evidence).",
        "",
        f'<span id="{shown.COUNTS_ANCHOR}"></span>',
        "",
        "| verdicts | count |",
        "|---|---:|",
    ]
    out += [
        f'| <span id="{shown.count_anchor(name)}"></span>{name.replace("_", " ")} | {value} |'
        for name, value in counts.items()
    ]
    mismatch = derive.summary_mismatch(repro)
    if mismatch:
        out += ["", f"*The document's own summary disagrees with its rows on: {', '.join(mismatch)}.*"]
    out += ["", "## The rule", "", escape_text(repro.rule) or "*(none stated)*", ""]
    out += [
        "## Numbers compared",
        "",
        "Values as recorded, in each number's unit, six significant figures; intervals in parentheses.",
        "",
        "| # | key | label | old | new | unit | verdict | three ways | judged by |",
        "|---:|---|---|---:|---:|---|---|---|---|",
    ]
    for n in repro.numbers:
        out.append(
            f'| <span id="{shown.number_anchor(n.index)}"></span>{n.index} | {escape_text(n.key)} | '
            f"{escape_text(n.label)} | {_plain(n.old)}{_interval(n.old_interval)} | "
            f"{_plain(n.new)}{_interval(n.new_interval)} | {escape_text(n.unit)} | {n.verdict} | "
            f"{shown.three_way_text(n)} | {n.judged_by or '–'} |"
        )
    out += ["", "## Claims compared", ""]
    out += ["| # | claim | before | after | verdict |", "|---:|---|---|---|---|"]
    for c in repro.claims:
        after = "—" if c.new is None else str(c.new).lower()
        out.append(f"| {c.index} | {escape_text(c.text)} | {str(c.old).lower()} | {after} | {c.verdict} |")
    if repro.commands:
        out += ["", "## Commands", "", "```sh", *(printable(c) for c in repro.commands), "```"]
    return "\n".join(out) + "\n"
