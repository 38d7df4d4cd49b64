"""The *Changes* page: a dated changelog of every publish, and a preview of what is not published yet
(ARCHITECTURE.md §Numbers).

``archive/published/history.jsonl`` (``render.pages.history``) holds one entry per ``probebook publish``; the
page lists them newest first: the records versioned and the errata added since the publish before, and
the numbers that moved (old → new and the relative change). ``archive/published/ledger.json`` holds the
numbers last accepted; a build whose numbers differ from it gets an *Unpublished changes* section
listing every number added, removed or changed since then, so a correction to a derivation or an
erratum shows exactly which numbers moved. A build without such changes has no such section.
"""

from __future__ import annotations

from typing import Any

from render.numbers import reading as numbers
from render.numbers.claims import TruthChange
from render.numbers.ledger import Diff, change_percent
from render.numbers.links import escape_text, relative_link

PAGE = "changes.md"


def _page_cell(page: str, existing: set[str], titles: dict[str, str]) -> str:
    label = escape_text(titles.get(page, page))
    return f"[{label}]({relative_link(PAGE, page)})" if page in existing else f"{label} (page removed)"


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
        shown = numbers.general
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


def _history_section(history: list[dict[str, Any]], existing: set[str], titles: dict[str, str]) -> list[str]:
    """Each publish, newest first: what it accepted, the records versioned and errata added since the one before."""
    out = ["## History", ""]
    if not history:
        return [*out, "Nothing has been published yet.", ""]
    for i in range(len(history) - 1, -1, -1):
        e, prev = history[i], history[i - 1] if i else None
        out += [f"### Published {escape_text(e['date'])}", ""]
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
            out += ["Numbers that moved:", "", "| page | number | old | new | change |", "|---|---|---|---|---|"]
            out += [
                f"| {_page_cell(c['page'], existing, titles)} | {_code(c['key'])} | {escape_text(c['old'])} | "
                f"{escape_text(c['new'])} | {escape_text(change_percent(c.get('relative')))} |"
                for c in e["changed"]
            ]
            out.append("")
    return out


def page_markdown(
    d: Diff,
    published: bool,
    existing: set[str],
    titles: dict[str, str],
    moved: list[TruthChange] | None = None,
    history: list[dict[str, Any]] | None = None,
    now: dict[str, Any] | None = None,
) -> str:
    """The Changes page. ``published``: whether a published ledger exists; ``existing``: tree pages;
    ``moved``: claims whose truth differs under the published numbers (``render.numbers.claims.truth_changes``);
    ``history``: the published history's entries, oldest first (``render.pages.history.read``); ``now``: this build's
    records and errata (``render.pages.history.snapshot``), previewed against the last publish."""
    out = ["# Changes", ""]
    out += [
        "Every publish of this site's numbers, newest first: the records versioned, the errata, and the "
        "numbers that moved. Each number links to its page and evidence.",
        "",
    ]
    last = history[-1] if history else None
    pending = _versioned(now, last, existing, titles) if now is not None and last is not None else []
    if published and not d.any and not pending:
        return "\n".join(out + _history_section(history or [], existing, titles))
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
        out += ["### Changed", "", "| page | number | old | new | change | derivation |", "|---|---|---|---|---|---|"]
        for c in d.changed:
            derivation = escape_text(c.new["derivation"])
            if c.old["derivation"] != c.new["derivation"]:
                derivation = f"was: {escape_text(c.old['derivation'])}<br>now: {derivation}"
            out.append(
                f"| {_page_cell(c.page, existing, titles)} | {_code(c.key)} | {escape_text(c.old['text'])} | "
                f"{escape_text(c.new['text'])} | {escape_text(change_percent(c.relative))} | {derivation} |"
            )
        out.append("")
    if published and moved:
        out += _claims_section(moved, existing, titles)
    if d.added:
        out += ["### Added", "", *_rows_table(d.added, existing, titles)]
    if d.removed:
        out += ["### Removed", "", *_rows_table(d.removed, existing, titles)]
    if not d.any:
        out += ["No number changed." if published else "No numbers are published on this site yet.", ""]
    return "\n".join(out + _history_section(history or [], existing, titles))
