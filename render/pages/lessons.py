"""The playbook follows its records: a lesson cites records by slug and renders against their current versions.

A lesson (``playbook/*.md`` other than its index) names the records it stands on in its front matter
(``records: [step-anatomy-250m]``) and takes no evidence of its own: its template sees the evidence aliases of
each record's *current* version, so a new version moves the lesson with it, and the lesson's numbers and claims
are computed and checked as the record's own are (the same page functions, ``claim()`` and the direction rule of
``render.numbers.directions``, ledger rows). Besides that:

- a link to a superseded record version is refused unless the lesson lists that version under ``history``
  (``{record: slug, version: N, note: why it is shown}``), which the page then shows as history, saying so;
- a claim of the lesson that compares what a superseded version of one of its records claimed, and the current
  version no longer claims, is refused (``check_withdrawn``): the record withdrew or qualified that reading;
- the page ends with a generated *Behind it* line linking each record's current version, never a typed one
  that goes stale.

Each refusal is one line naming the lesson's file (and line where one is known).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from render.errors import BuildError
from render.numbers.claims import KIND as CLAIM
from render.numbers.links import escape_text, relative_link
from render.pages.frontmatter import SourceError, text_field

_SLUG = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
_VERSION_LINK = re.compile(r"records/([a-z0-9][a-z0-9-]{0,63})/v([1-9][0-9]{0,3})\.md")
HISTORY_TITLE = "History: superseded versions, shown as they were published"
"""The heading of a lesson's history box: what it lists is not what the records say today."""


@dataclass(frozen=True)
class History:
    """A superseded record version a lesson shows, as history."""

    slug: str
    version: int
    note: str
    """Why the lesson shows it (plain text)."""


def is_lesson(page: Any) -> bool:
    """Whether a source page is a lesson: a playbook page other than the playbook's index."""
    return bool(page.kind == "playbook" and page.rel != "playbook/index.md")


def fields(meta: dict[str, Any], where: Any) -> dict[str, Any]:
    """A lesson's ``records`` and ``history`` front matter fields, checked (``where(name)`` names file and line)."""
    records = meta.get("records", [])
    if isinstance(records, str):
        records = [records]
    if not isinstance(records, list) or any(not isinstance(s, str) or not _SLUG.match(s) for s in records):
        raise SourceError(f"{where('records')}: field 'records' must list record slugs, e.g. [step-anatomy-250m]")
    if len(set(records)) != len(records):
        raise SourceError(f"{where('records')}: field 'records' names a record twice")
    history = meta.get("history") or []
    if not isinstance(history, list):
        raise SourceError(f"{where('history')}: field 'history' must list {{record, version, note}} entries")
    items = []
    for i, entry in enumerate(history):
        spot = f"{where('history')} (history[{i}])"
        if not isinstance(entry, dict) or set(entry) != {"record", "version", "note"}:
            raise SourceError(f"{spot}: each history entry needs exactly the fields 'record', 'version' and 'note'")
        slug, version = entry["record"], entry["version"]
        if not isinstance(slug, str) or not _SLUG.match(slug):
            raise SourceError(f"{spot}: 'record' must be a record slug, got {slug!r}")
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise SourceError(f"{spot}: 'version' must be a whole number >= 1, got {version!r}")
        items.append(History(slug, version, text_field(entry["note"], spot, "note")))
    return {"records": tuple(records), "history": tuple(items)}


def bind(pages: list[Any], records: Iterable[Any]) -> list[Any]:
    """``pages`` with each lesson's evidence the aliases of its records' current versions; its records, history
    entries and links to record versions checked (module doc)."""
    by_slug = {r.slug: r for r in records}
    return [_bind(p, by_slug) if is_lesson(p) else p for p in pages]


def _bind(page: Any, by_slug: dict[str, Any]) -> Any:
    aliases: dict[str, str] = {}
    lines = dict(page.lines)
    origin: dict[str, str] = {}
    for slug in page.records:
        record = by_slug.get(slug)
        if record is None:
            known = ", ".join(sorted(by_slug)) or "none"
            raise SourceError(f"{page.where('records')}: no record {slug!r} under records/ (records: {known})")
        current = record.current
        for alias, ident in current.evidence.items():
            if alias in aliases and aliases[alias] != ident:
                raise SourceError(
                    f"{page.where('records')}: evidence alias {alias!r} names other evidence in "
                    f"{origin[alias]} and in {current.rel}; a lesson's records must not disagree on an alias"
                )
            aliases[alias], origin[alias] = ident, current.rel
            if "records" in page.lines:
                lines[f"evidence.{alias}"] = page.lines["records"]
    shown = set()
    for h in page.history:
        record = by_slug.get(h.slug)
        versions = {p.version: p for p in record.versions} if record is not None else {}
        if record is None or h.version not in versions:
            raise SourceError(
                f"{page.where('history')}: history names records/{h.slug}/v{h.version}.md, which does not exist"
            )
        if versions[h.version] is record.current:
            raise SourceError(
                f"{page.where('history')}: records/{h.slug}/v{h.version}.md is the current version, not history; "
                "name the record under 'records'"
            )
        shown.add((h.slug, h.version))
    for n, line in enumerate(page.body.split("\n"), start=1):
        for m in _VERSION_LINK.finditer(line):
            slug, version = m.group(1), int(m.group(2))
            record = by_slug.get(slug)
            if record is None or record.current.version == version or (slug, version) in shown:
                continue  # an unknown record is the link check's to refuse
            raise SourceError(
                f"{page.path} line {n}: links records/{slug}/v{version}.md, superseded by version "
                f"{record.current.version}; link the current version, or list this one under 'history' with a note"
            )
    return replace(page, evidence=aliases, lines=lines)


def behind_it(page: Any, sources: Any) -> str:
    """The Markdown a lesson ends with: each record's current version, and the history it lists, marked so."""
    by_slug = {r.slug: r for r in sources.records}
    out = []
    cited = [by_slug[s].current for s in page.records if s in by_slug]
    if cited:
        links = ", ".join(
            f"[{escape_text(p.title or p.slug)}]({relative_link(page.rel, p.rel)}) (version {p.version}, current)"
            for p in cited
        )
        out += ["", f"Behind it: {links}.", ""]
    if page.history:
        out += ["", f'!!! note "{HISTORY_TITLE}"', ""]
        for h in page.history:
            record = by_slug[h.slug]
            old = next(p for p in record.versions if p.version == h.version)
            now = record.current
            out.append(
                f"    - [{escape_text(old.title or h.slug)}, version {h.version}]({relative_link(page.rel, old.rel)}): "
                f"superseded by [version {now.version}]({relative_link(page.rel, now.rel)}); not what the record "
                f"states today. {escape_text(h.note)}"
            )
        out.append("")
    return "\n".join(out) + ("\n" if out else "")


def comparisons(row: dict[str, Any], aliases: dict[str, str]) -> set[str]:
    """A claim row's comparisons, each with its evidence aliases replaced by their ids and ``>`` turned into ``<``,
    so one comparison written on two pages (other alias names, sides swapped, in a claim or an answer) reads
    the same."""
    names = sorted(aliases, key=len, reverse=True)
    pattern = re.compile(r"(?<=[(\s,])(" + "|".join(map(re.escape, names)) + r")(?=[,)\s])") if names else None
    out = set()
    for part in str(row.get("derivation", "")).split(" and "):
        text = pattern.sub(lambda m: aliases[m.group(1)], part) if pattern else part
        for op, flipped in ((" >= ", " <= "), (" > ", " < ")):
            if op in text:
                left, right = text.split(op, 1)
                text = right + flipped + left
                break
        out.add(text)
    return out


def check_withdrawn(rendered: Iterable[tuple[Any, dict[str, str], list[dict[str, Any]]]], sources: Any) -> None:
    """Refuse a lesson's claim with a comparison that a superseded version of one of its records made and no claim
    or answer of the current version makes; ``rendered``: each page, its aliases and its ledger rows."""
    made: dict[str, set[str]] = {}
    lessons = []
    for page, aliases, rows in rendered:
        made[page.rel] = set().union(*(comparisons(r, aliases) for r in rows if r.get("unit") == CLAIM))
        if is_lesson(page):
            lessons.append((page, aliases, rows))
    by_slug = {r.slug: r for r in sources.records}
    for page, aliases, rows in lessons:
        for row in (r for r in rows if r.get("unit") == CLAIM):
            for c in sorted(comparisons(row, aliases)):
                for slug in page.records:
                    record = by_slug[slug]
                    if c in made.get(record.current.rel, set()):
                        continue
                    old = [p.version for p in record.archived if c in made.get(p.rel, set())]
                    if old:
                        sentence = str(row.get("key", "")).removeprefix("claim: ")
                        raise BuildError(
                            f"{page.path}: claim {sentence[:80]!r} compares what records/{slug}/v{old[-1]}.md claimed "
                            f"and the current version {record.current.version} no longer claims (withdrawn or "
                            "qualified); state what the current version states"
                        )
