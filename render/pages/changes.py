"""The *Changes* page: a dated changelog of every publish, and a preview of what is not published yet
(ARCHITECTURE.md §Numbers).

``archive/published/history.jsonl`` (``render.pages.history``) holds one entry per ``probebook publish``; the
page lists them newest first, each under its own heading (its ordinal, date, commit or ledger digest and
counts): the records versioned and the errata added since the publish before, and the numbers whose shown text
moved, largest relative change first, each named by its derivation (what the page's link title says, not the
ledger's internal key) and linked to its page and evidence. A number whose shown text did not change (float
jitter below the shown figures) or whose value did not (a display-only change: another unit or format) is not a
change a reader sees: those are counted in one line (``classify``). ``archive/published/ledger.json`` holds the
numbers last accepted; a build whose numbers differ from it gets an *Unpublished changes* section
listing every number added, removed or changed since then, so a correction to a derivation or an
erratum shows exactly which numbers moved. A build without such changes has no such section.
"""

from __future__ import annotations

import re
from typing import Any

from render.derive import reading
from render.numbers.claims import TruthChange
from render.numbers.ledger import Change, Diff, change_percent
from render.numbers.links import escape_text, evidence_page, relative_link

PAGE = "changes.md"

MOVED = "moved"
"""Its shown text changed and its value moved: a change a reader sees, listed."""
DISPLAY = "display-only"
"""Its shown text changed but its value did not (another unit, prefix or format): counted, not listed."""
JITTER = "jitter"
"""Its shown text is the same (its value moved below the figures shown, or its derivation's wording): counted."""


def classify(old_text: str, new_text: str, relative: float | None) -> str:
    """Whether a ledger change is one a reader sees: ``MOVED``, ``DISPLAY`` or ``JITTER``.

    ``relative`` is the value's relative change (``render.numbers.ledger.relative_change``), None when it has no
    relative size (a value appeared, vanished, or was zero), which counts as moved when the text changed.
    """
    if old_text == new_text:
        return JITTER
    if relative == 0:
        return DISPLAY
    return MOVED


def by_size(relative: float | None) -> tuple[bool, float]:
    """Sort key of a moved number: the largest relative change first, those with no relative size last."""
    return (relative is None, -abs(relative) if relative is not None else 0.0)


def number_label(row: dict[str, Any] | None, key: str) -> str:
    """What a reader calls a number: its derivation's first clause (the link title the page shows, ``GEMM
    square-8192 (8192×8192×8192): 2·m·n·k / median of 5 windows``), at most 120 characters; the ledger key when
    the row has no derivation or the derivation is the key itself (a combined number's expression)."""
    derivation = str((row or {}).get("derivation") or "")
    first = derivation.split("; ")[0].strip()
    if not first or first == key:
        return key
    return first if len(first) <= 120 else first[:119].rstrip() + "…"


def counted_line(display: int, jitter: int) -> str:
    """The one line that counts what is not listed (empty when there is nothing to count)."""
    if not (display or jitter):
        return ""
    return (
        f"Not listed: {display} display-only (the shown text changed, the value did not) and {jitter} whose shown "
        "text did not change (float jitter below the figures shown, a newly stated interval or basis, or a "
        "derivation's wording)."
    )


def _page_cell(page: str, existing: set[str], titles: dict[str, str]) -> str:
    label = escape_text(titles.get(page, page))
    return f"[{label}]({relative_link(PAGE, page)})" if page in existing else f"{label} (page removed)"


def _moved_rows(
    changes: list[dict[str, Any]], existing: set[str], titles: dict[str, str], current: dict[tuple[str, str], Any]
) -> list[str]:
    """The moved numbers of ``changes`` (each with page, key, old, new text, relative; optional derivations) as a
    table, largest change first, then the line counting the rest."""
    kinds = [classify(str(c["old"]), str(c["new"]), c.get("relative")) for c in changes]
    moved = sorted(
        (c for c, k in zip(changes, kinds, strict=True) if k == MOVED), key=lambda c: by_size(c.get("relative"))
    )
    out = [] if moved else ["No number's shown text changed.", ""]
    if moved:
        out += ["| number | page | old | new | change |", "|---|---|---|---|---|"]
        for c in moved:
            row = current.get((c["page"], c["key"]))
            label = escape_text(number_label(row, c["key"]))
            if c["page"] in existing:
                label = f"[{label}]({relative_link(PAGE, c['page'])})"
            new = escape_text(c["new"])
            evidence = (row or {}).get("evidence") or []
            if evidence and isinstance(evidence[0], str) and evidence[0].startswith("sha256:"):
                new = f"[{new}]({relative_link(PAGE, evidence_page(evidence[0]))})"  # the value's evidence page
            change = escape_text(change_percent(c.get("relative")))
            if c.get("old_derivation") not in (None, c.get("new_derivation")):
                change += f"<br>derivation was: {escape_text(c['old_derivation'])}"
            out.append(
                f"| {label} | {_page_cell(c['page'], existing, titles)} | {escape_text(c['old'])} | {new} | {change} |"
            )
        out.append("")
    line = counted_line(kinds.count(DISPLAY), kinds.count(JITTER))
    return out + ([line, ""] if line else [])


def _as_dict(c: Change) -> dict[str, Any]:
    return {
        "page": c.page,
        "key": c.key,
        "old": c.old["text"],
        "new": c.new["text"],
        "relative": c.relative,
        "old_derivation": c.old["derivation"],
        "new_derivation": c.new["derivation"],
    }


_COMMIT = re.compile(r"\bcommit ([0-9a-f]{7,40})\b")


def publish_heading(ordinal: int, e: dict[str, Any]) -> str:
    """A publish's heading, distinct for every publish: ``Publish 3: 2026-11-30, commit c59473468646, 416 numbers
    (12 moved, 330 added)``; the ledger's digest stands in for a commit the entry does not name. It counts the
    numbers the section lists (``MOVED``), not every ledger change: a display-only change or a newly stated interval
    is counted in the section's own line."""
    m = _COMMIT.search(str(e.get("source") or ""))
    which = f"commit {m.group(1)[:12]}" if m else f"ledger {str(e.get('ledger_sha256'))[:12]}"
    moved = sum(
        classify(str(c.get("old")), str(c.get("new")), c.get("relative")) == MOVED for c in e.get("changed") or []
    )
    counts = f"{moved} moved, {e.get('added', 0)} added"
    if e.get("removed"):
        counts += f", {e['removed']} removed"
    return f"Publish {ordinal}: {e.get('date')}, {which}, {e.get('numbers', 0):,} numbers ({counts})"


def _rows_table(rows: list[dict[str, Any]], existing: set[str], titles: dict[str, str]) -> list[str]:
    out = ["| page | number | value | derivation |", "|---|---|---|---|"]
    out += [
        f"| {_page_cell(r['page'], existing, titles)} | {_code(r['key'])} | {escape_text(r['text'])} | "
        f"{escape_text(r['derivation'])} |"
        for r in rows
    ]
    return [*out, ""]


def _code(text: str) -> str:
    """A ledger key as inline code in a table cell.

    Control characters are shown as escapes (a newline as ``\\n``) and every character Markdown or
    HTML could act on becomes a character reference, so no key can end the cell, the row or the code.
    """
    visible = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
    return f"<code>{escape_text(visible)}</code>"


def _claims_section(moved: list[TruthChange], existing: set[str], titles: dict[str, str]) -> list[str]:
    """Claims whose truth differs under the published numbers: the sentence, then and now."""
    out = [
        "### Claims whose truth changed",
        "",
        "Each sentence below is a checked claim (true in this build); under the published values of "
        "the numbers it compares it was false, or could not be checked because they were not published.",
        "",
        "| page | claim | published | now | compares |",
        "|---|---|---|---|---|",
    ]
    for m in moved:
        spec = m.row["claim"]
        was = "unknown (not published)" if m.was is None else ("true" if m.was else "false")
        shown = reading.general
        leaves = [leaf for leaf in spec["leaves"] if leaf["value"] is not None]
        now = ", ".join(f"{leaf['key']} = {shown(leaf['value'])}" for leaf in leaves)
        pairs = zip(spec["leaves"], m.old_values, strict=True)
        old = ", ".join(f"{leaf['key']} = {shown(v)}" for leaf, v in pairs if v is not None)
        then = escape_text(was) + (f": {escape_text(old)}" if old else "")
        out.append(
            f"| {_page_cell(m.row['page'], existing, titles)} | {escape_text(spec['sentence'])} | {then} | "
            f"true: {escape_text(now)} | {escape_text(m.row['derivation'])} |"
        )
    return [*out, ""]


def _versioned(e: dict[str, Any], prev: dict[str, Any] | None, existing: set[str], titles: dict[str, str]) -> list[str]:
    """The records versioned and the errata added in ``e`` (a history entry or a snapshot) since ``prev``."""
    out: list[str] = []
    before = (prev or {}).get("records") or {}
    versioned = []
    for slug, rec in sorted((e.get("records") or {}).items()):
        old = before.get(slug)
        if old is not None and old.get("version") == rec.get("version"):
            continue
        what = "new record" if old is None else f"version {rec.get('version')}, was {old.get('version')}"
        versioned.append(f"- {_page_cell(rec.get('page', ''), existing, titles)}: {escape_text(what)}")
    if versioned:
        out += ["Records versioned:", "", *versioned, ""]
    seen = {(x.get("page"), x.get("date"), x.get("text")) for x in (prev or {}).get("errata") or []}
    errata = [x for x in e.get("errata") or [] if (x.get("page"), x.get("date"), x.get("text")) not in seen]
    if errata:
        out += ["Errata:", ""]
        out += [
            f"- {_page_cell(x.get('page', ''), existing, titles)}, {escape_text(x.get('date'))}: "
            f"{escape_text(x.get('text'))}"
            for x in errata
        ]
        out.append("")
    return out


def _history_section(
    history: list[dict[str, Any]], existing: set[str], titles: dict[str, str], current: dict[tuple[str, str], Any]
) -> list[str]:
    """Each publish, newest first: what it accepted, the records versioned and errata added since the one before."""
    out = ["## History", ""]
    if not history:
        return [*out, "Nothing has been published yet.", ""]
    for i in range(len(history) - 1, -1, -1):
        e, prev = history[i], history[i - 1] if i else None
        out += [f"### {escape_text(publish_heading(i + 1, e))}", ""]
        line = f"{e.get('numbers', 0)} numbers published (ledger sha256:{escape_text(str(e['ledger_sha256'])[:12])})"
        if prev is not None or e.get("changed") or e.get("added"):
            line += (
                f": {len(e.get('changed') or [])} changed, {e.get('added', 0)} added, {e.get('removed', 0)} removed "
                "since the publish before"
            )
        out += [line + ".", ""]
        if e.get("source"):
            out += [f"*{escape_text(e['source'])}*", ""]
        out += _versioned(e, prev, existing, titles)
        if e.get("changed"):
            out += [
                "Numbers that moved, largest change first:",
                "",
                *_moved_rows(e["changed"], existing, titles, current),
            ]
    return out


def page_markdown(
    d: Diff,
    published: bool,
    existing: set[str],
    titles: dict[str, str],
    moved: list[TruthChange] | None = None,
    history: list[dict[str, Any]] | None = None,
    now: dict[str, Any] | None = None,
    current: list[dict[str, Any]] | None = None,
) -> str:
    """The Changes page. ``published``: whether a published ledger exists; ``existing``: tree pages;
    ``moved``: claims whose truth differs under the published numbers (``render.numbers.claims.truth_changes``);
    ``history``: the published history's entries, oldest first (``render.pages.history.read``); ``now``: this
    build's records and errata (``render.pages.history.snapshot``), previewed against the last publish;
    ``current``: this build's ledger rows, whose derivations label the numbers (a history entry keeps only their
    keys and texts)."""
    rows = {(r["page"], r["key"]): r for r in current or []}
    rows.update({(c.page, c.key): c.new for c in d.changed})
    out = ["# Changes", ""]
    out += [
        "Every publish of this site's numbers, newest first: the records versioned, the errata, and the "
        "numbers that moved. Each number links to its page and evidence.",
        "",
    ]
    last = history[-1] if history else None
    pending = _versioned(now, last, existing, titles) if now is not None and last is not None else []
    if published and not d.any and not pending:
        return "\n".join(out + _history_section(history or [], existing, titles, rows))
    out += ["## Unpublished changes", "", *pending]
    if not published:
        out += ["Nothing has been published yet, so every number below is new.", ""]
    else:
        out += ["Numbers in this build that differ from the last published ones; they are not published yet.", ""]
    out.append(
        f"**{len(d.added)} added, {len(d.removed)} removed, {len(d.changed)} changed, {d.unchanged} unchanged.**"
    )
    out.append("")
    if d.changed:
        out += ["### Changed", "", "Numbers whose shown text changed, largest relative change first.", ""]
        out += _moved_rows([_as_dict(c) for c in d.changed], existing, titles, rows)
    if d.versions:
        out += [
            "### New record versions",
            "",
            "Each new version's numbers beside the same number of the version it follows (old: that version's), "
            "largest relative change first.",
            "",
        ]
        out += _moved_rows([_as_dict(c) for c in d.versions], existing, titles, rows)
    if published and moved:
        out += _claims_section(moved, existing, titles)
    if d.added:
        out += ["### Added", "", *_rows_table(d.added, existing, titles)]
    if d.removed:
        out += ["### Removed", "", *_rows_table(d.removed, existing, titles)]
    if not d.any:
        out += ["No number changed." if published else "No numbers are published on this site yet.", ""]
    return "\n".join(out + _history_section(history or [], existing, titles, rows))
