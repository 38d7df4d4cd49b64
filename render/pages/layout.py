"""What render adds around hand-written pages: headings, the archived banner, errata, version
lists, the Records and Archive indexes, and the navigation (ARCHITECTURE.md §Pages).

A record version always lives at ``records/<slug>/v<N>.md``, so its address never changes; the
newest version is listed under *Records*, older ones under *Archive* with a banner linking to
the current one. All text from front matter is escaped.
"""

from __future__ import annotations

import re
from typing import Any

from render.numbers.links import escape_text, evidence_page, relative_link, short_id
from render.numbers.quantity import Quantity
from render.pages import answers
from render.pages.sources import Record, SourcePage, Sources

BANNER = "Archived reference."
BANNER_LINK = "Read the current results →"


def page_title(page: SourcePage) -> str:
    """The title a page goes by in navigation and links."""
    if page.title:
        return page.title
    stem = page.rel.rsplit("/", 1)[-1][:-3]
    if stem == "index":
        parent = page.rel.rsplit("/", 2)[-2] if "/" in page.rel else "Home"
        return parent.replace("-", " ").capitalize()
    return stem.replace("-", " ").capitalize()


def _record_of(page: SourcePage, sources: Sources) -> Record | None:
    return next((r for r in sources.records if r.slug == page.slug), None) if page.kind == "record" else None


def ordered(records: tuple[Record, ...] | list[Record]) -> list[Record]:
    """Records in the one order the nav, the records index and the home page show them: newest first by the
    date of the current version, then by slug."""
    return sorted(sorted(records, key=lambda r: r.slug), key=lambda r: r.current.date or "", reverse=True)


def header(page: SourcePage, sources: Sources, answer: str = "") -> str:
    """Markdown above the page body: heading, archived banner, the Answer box (``answer``), version line, errata."""
    out = []
    if page.title_in_front_matter:
        out += [f"# {escape_text(page.title)}", ""]
    record = _record_of(page, sources)
    if record is None:
        return "\n".join(out) + ("\n" if out else "")
    current = record.current
    if page is not current:
        link = relative_link(page.rel, current.rel)
        after = answers.successor(page, record)
        why = (
            f" Superseded by version {after.version} ({escape_text(after.date)})."
            f" What it changed: {escape_text(after.changes)}"
            if after and after.changes
            else ""
        )
        out += ['!!! warning ""', "", f"    {BANNER} [{BANNER_LINK}]({link}){why}", ""]
    if answer:
        out.append(answer)
    line = f"*Version {page.version}, {escape_text(page.date)}"
    if page.supersedes is not None:
        older = next(p for p in record.versions if p.version == page.supersedes)
        line += f"; supersedes [version {page.supersedes}]({relative_link(page.rel, older.rel)})"
    out += [line + ".*", ""]
    errata = record.errata_for(page.version)  # with those of other versions that apply to this one too
    if errata:
        out += ['!!! note "Errata"', ""]
        for e, on in errata:
            where = ""
            if on != page.version:
                other = next(p for p in record.versions if p.version == on)
                where = f" (written on [version {on}]({relative_link(page.rel, other.rel)}))"
            out.append(f"    - **{escape_text(e.date)}**{where}: {escape_text(e.text)}")
        out.append("")
    return "\n".join(out) + "\n"


def footer(page: SourcePage, sources: Sources, aliases: dict[str, str], docs: dict[str, dict[str, Any]]) -> str:
    """Markdown below a record's body: its evidence and its other versions."""
    out = []
    if aliases:
        out += ["", "## Evidence", ""]
        for alias in sorted(aliases):
            ident = aliases[alias]
            link = relative_link(page.rel, evidence_page(ident))
            out.append(f"- `{alias}`: [`{short_id(ident)}`]({link}), {escape_text(docs[ident]['probe'])}")
    record = _record_of(page, sources)
    if record is not None and len(record.versions) > 1:
        out += ["", "## Versions", ""]
        for p in reversed(record.versions):
            label = f"Version {p.version}" + (" (current)" if p is record.current else "")
            shown = f"**{label}**" if p is page else f"[{label}]({relative_link(page.rel, p.rel)})"
            said = p.changes or (f"first version: {p.title}" if p is record.versions[0] else p.title)
            out.append(f"- {shown}, {escape_text(p.date)}: {escape_text(said or '')}")
    return "\n".join(out) + ("\n" if out else "")


Headlines = dict[str, list[tuple[str, Quantity]]]
"""Record page -> its headline results (label, Quantity), as ``render.pages.sandbox.evaluate_summary`` gives them."""


def results_box(rel: str, headlines: list[tuple[str, Quantity]]) -> str:
    """The box of headline results at the top of a record (its front matter ``summary``)."""
    if not headlines:
        return ""
    out = ['!!! abstract "Results"', ""]
    out += [f"    - {escape_text(label)}: **{q.markdown(rel)}**" for label, q in headlines]
    return "\n".join(out) + "\n\n"


def _headline_cell(here: str, headlines: list[tuple[str, Quantity]]) -> str:
    return "<br>".join(f"{escape_text(label)}: {q.markdown(here)}" for label, q in headlines) or "–"


Verdicts = dict[str, str]
"""Record page -> its Answer's verdicts as Markdown for that page (``render.pages.answers.evaluate``), one a line."""


def _answer(c: SourcePage, here: str, verdicts: Verdicts) -> str:
    text = verdicts.get(c.rel)
    return answers.rebase(text, c.rel, here) if text else ""


RECORDS_CLASS = "pb-records"
"""The admonition type the Records index's table stands in: its class lets ``tables.css`` lay the table out as one
card per record on a phone (Markdown gives a table no class of its own, and a rendered page carries no raw HTML)."""


def first_verdict(answer: str) -> str:
    """An Answer's first verdict (verdicts are joined one a line, ``render.assemble.pages``), with ``…`` when it has
    more: the Records index gives each record one line of its answer; the whole box is first on the record's page."""
    lines = [line for line in answer.split("\n") if line.strip()]
    if not lines:
        return ""
    return lines[0].strip() + (" …" if len(lines) > 1 else "")


def records_index(
    sources: Sources,
    headlines: Headlines | None = None,
    machines: dict[str, str] | None = None,
    verdicts: Verdicts | None = None,
    reproduced: dict[str, str] | None = None,
) -> str:
    """The *Records* page: one row per record, newest first: its title, its answer's first verdict, its status
    (version and machine), its date and whether it was reproduced (issue 42, item 6); ``reproduced``: page -> its
    reproduction status, as Markdown (``render.pages.reproductions.index_status``). The headline results are on
    each record's page, in its Results box. ``headlines`` is kept for callers; the index no longer shows them."""
    machines, verdicts, reproduced = machines or {}, verdicts or {}, reproduced or {}
    out = ["# Records", ""]
    if not sources.records:
        out.append("No records yet. Write one as `docs/records/<slug>/v1.md` (the README shows how).")
        return "\n".join(out) + "\n"
    out += [
        "The current version of every record, newest first: each answer's first verdict, what it ran on and whether "
        "it was reproduced. Older versions are under [Archive](../archive/index.md).",
        "",
        f'!!! {RECORDS_CLASS} ""',
        "",
        "    | record | answer | status | date | reproduced |",
        "    |---|---|---|---|---|",
    ]
    here = "records/index.md"
    for r in ordered(sources.records):
        c = r.current
        said = first_verdict(_answer(c, here, verdicts)).replace("|", "\\|") or "–"
        machine = machines.get(c.rel)
        status = f"version {c.version}" + (f", {escape_text(machine)}" if machine else "")
        out.append(
            f"    | [{escape_text(c.title)}]({relative_link(here, c.rel)}) | {said} | {status}"
            f" | {escape_text(c.date)} | {reproduced.get(c.rel, 'no')} |"
        )
    return "\n".join(out) + "\n"


LATEST = 5
"""How many of the newest records the home page shows the answer and headline results of."""


def latest_results(
    sources: Sources, headlines: Headlines, machines: dict[str, str], verdicts: Verdicts | None = None
) -> str:
    """The home page's *Latest results*: the newest records' answers, headline results and the machine they ran on."""
    verdicts = verdicts or {}
    shown = [r.current for r in ordered(sources.records) if headlines.get(r.current.rel)][:LATEST]
    if not shown:
        return ""
    out = ["", "## Latest results", ""]
    for c in shown:
        link = relative_link("index.md", c.rel)
        out += [
            f"**[{escape_text(c.title)}]({link})**, version {c.version}, {escape_text(c.date)}, on "
            f"{escape_text(machines.get(c.rel, '–'))}:",
            "",
        ]
        said = " ".join(_answer(c, "index.md", verdicts).split("\n"))
        if said:
            out += [f"**Answer:** {said}", ""]
        out += [f"- {escape_text(label)}: {q.markdown('index.md')}" for label, q in headlines[c.rel]]
        out.append("")
    return "\n".join(out)


def archive_index(sources: Sources) -> str:
    out = ["# Archive", ""]
    archived = [(r, p) for r in ordered(sources.records) for p in r.archived]
    if not archived:
        out.append("No record has been superseded yet.")
        return "\n".join(out) + "\n"
    out += ["Superseded record versions. Each is still rendered from its own evidence at every build.", ""]
    out += ["| record | version | date | current version |", "|---|---|---|---|"]
    for r, p in archived:
        here = "archive/index.md"
        out.append(
            f"| [{escape_text(p.title)}]({relative_link(here, p.rel)}) | {p.version} | {escape_text(p.date)} | "
            f"[version {r.current.version}]({relative_link(here, r.current.rel)}) |"
        )
    return "\n".join(out) + "\n"


# Look-alikes for the characters HTML acts on. Themes print nav titles unescaped in some places
# and through ``striptags`` (which un-escapes entities) in ``<title>``, so escaping is not enough:
# a nav title must hold none of these characters at all.
_NAV_SAFE = str.maketrans({"<": "‹", ">": "›", "&": "＆", '"': "”", "'": "’", "`": "‘"})


def nav_title(text: str) -> str:
    """A title safe wherever a theme prints it: one line, no ``<>&"'`` (look-alikes instead)."""
    return " ".join(str(text).split()).translate(_NAV_SAFE)


# mkdocs and Zensical read a YAML block, or MultiMarkdown ``key: value`` lines, at the top of a Markdown file as
# the page's meta, and the theme prints ``title``, ``description``, ``author``, ``subtitle`` and ``status``
# outside the content area, unescaped. Every page of the tree opens with this empty block, which both read as
# no meta; whatever the prose or evidence put first is then body (only the first block is read), where the
# sanitizer sees it. Titles reach the theme from the nav (``nav_title``) and the first heading alone.
SEALED_META = b"---\n{}\n---\n"
UNSEARCHED_META = b"---\nsearch:\n  exclude: true\n---\n"
"""The meta of a page left out of the search index (mkdocs-material's ``search: exclude``), render's own: a
superseded record version, which the current one's entries already answer for; an archived version is reached from
its record's version line and the Archive page. Each was a record's worth of entries searched before an answer."""


BOOSTED_META = b"---\nsearch:\n  boost: 4\n---\n"
"""The meta of a current record version: mkdocs-material's search ranks it above the evidence, comparison and
playbook pages that name the same words (issue 42: reproduction pages came before the records they reproduce)."""


def is_record_version(rel: str) -> bool:
    """Whether a tree path is a record version (``records/<slug>/v<N>.md``), not the Records index."""
    return re.fullmatch(r"records/[^/]+/v[0-9]+\.md", rel) is not None


def sealed(rel: str, data: bytes, unsearched: bool = False) -> bytes:
    """A tree file as the engine reads it: a Markdown page opens with ``SEALED_META`` (``UNSEARCHED_META`` when
    ``unsearched``, ``BOOSTED_META`` for a current record version), anything else as it is."""
    if not rel.endswith(".md"):
        return data
    if unsearched:
        return UNSEARCHED_META + data
    return (BOOSTED_META if is_record_version(rel) else SEALED_META) + data


def superseded_pages(sources: Sources) -> set[str]:
    """Tree paths of every record version a later one replaced."""
    return {p.rel for r in sources.records for p in r.versions if p is not r.current}


NOT_IN_NAV = "/evidence/\n/bench.md"
"""mkdocs ``not_in_nav`` patterns: evidence pages and listings are built but reached from the Evidence index, the
Benchmarks page from the bench paths that link to it (``render.pages.benchfiles``)."""


def nav(sources: Sources) -> list[Any]:
    """The mkdocs ``nav``: Home, Playbook, Records, Archive, Evidence, Changes (titles via ``nav_title``).

    Its size depends on the records and playbook only: the Evidence entry is the index alone.
    """

    def item(title: str, path: str) -> dict[str, str]:
        return {nav_title(title): path}

    by_rel = {p.rel: p for p in sources.pages}
    playbook = [item("Playbook", "playbook/index.md")] if "playbook/index.md" in by_rel else []
    playbook += [
        item(page_title(p), p.rel) for p in sources.pages if p.kind == "playbook" and p.rel != "playbook/index.md"
    ]
    records = [item("Records", "records/index.md")]
    records += [item(page_title(r.current), r.current.rel) for r in ordered(sources.records)]
    archive = [item("Archive", "archive/index.md")]
    archive += [item(f"{page_title(p)} (v{p.version})", p.rel) for r in ordered(sources.records) for p in r.archived]
    # one entry, whatever the archive holds: the nav is printed into every page (render/evidence/index.py)
    # and the history of each configuration key, reached from its own index (render/evidence/historypage.py)
    evidence = {"Evidence": [item("Evidence", "evidence/index.md"), item("History", "evidence/history/index.md")]}
    out: list[Any] = []
    if "index.md" in by_rel:
        out.append(item("Home", "index.md"))
    if playbook:
        out.append({"Playbook": playbook})
    out += [{"Records": records}, {"Archive": archive}, evidence, item("Changes", "changes.md")]
    out += [item(page_title(p), p.rel) for p in sources.pages if p.kind == "page"]
    return out
