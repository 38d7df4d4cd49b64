"""What the site shows of reproductions (issue 24): a record version's *Reproductions* section, one comparison page
per ``reproduction`` document, and each record's status on the Records index (ARCHITECTURE.md §Pages).

Found from the archive alone: every ``reproduction`` document whose ``data.record``/``data.version`` name a record
version is listed on that version's page, oldest first (``render.derive.reproduction.found``). A ``cross-machine``
document compares evidence measured on another GPU model and is called a comparison across machines, never a
reproduction. Every count and change shown is a ``Quantity`` linked to the reproduction's evidence page and a row
of the ledger (the section's under the record page, the comparison table's under its own page); every text from
the document (title, labels, claims, rule, commands, machine) passes ``escape_text`` or sits in a fenced block
with its control characters escaped.
"""

from __future__ import annotations

import re
from typing import Any

from measure.errors import ProbebookError, printable
from render.derive import basis, reading
from render.derive import reproduction as derive
from render.errors import BuildError
from render.numbers import ledger
from render.numbers.links import escape_text, evidence_page, relative_link, short_id
from render.numbers.quantity import Quantity
from render.pages.layout import nav_title
from render.pages.sources import Sources
from render.pages.tracediff import section as trace_section

COUNTS_ANCHOR = "reproduction-counts"
"""Where on a reproduction's evidence page its verdicts are tabled (the table as a whole)."""


def count_anchor(name: str) -> str:
    """The anchor of one row of that table (``count-within``): a count lands on the row that shows it, not on the
    top of the table (issue 28, item 3)."""
    return f"count-{name}"


_UNIT = re.compile(r"[A-Za-z/µ·²³]{0,16}")
"""A unit the document states that a Quantity may show; anything else is shown without a unit (untrusted text)."""


def comparison_page(ident: str) -> str:
    """Tree path of the comparison page of reproduction ``ident`` (beside the evidence pages, not in the nav)."""
    return f"evidence/comparison/{ident.split(':', 1)[-1]}.md"


def number_anchor(index: int) -> str:
    """The anchor of ``data.numbers[index]`` on the reproduction's evidence page."""
    return f"number-{index}"


def mode_label(repro: derive.Reproduction) -> str:
    return "comparison across machines" if repro.mode == "cross-machine" else "reproduction"


def machine_text(doc: dict[str, Any]) -> str:
    """``2 × NVIDIA H200`` or ``the CPU``, from the reproducing machine's fingerprint (plain text, unescaped)."""
    recorded = doc.get("machine")
    machine: dict[str, Any] = recorded if isinstance(recorded, dict) else {}
    gpu, count = machine.get("gpu"), machine.get("gpu_count")
    if not gpu:
        return "the CPU"
    count = count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else 1
    return f"{count} × {nav_title(str(gpu))[:120]}"


def count(repro: derive.Reproduction, name: str, value: int) -> Quantity:
    """One exact count of a reproduction's verdicts (no interval), linked to its evidence page."""
    what = "claims" if name in ("claims", "held", "flipped", "claims_not_resolved") else "numbers"
    verdict = name.removeprefix("claims_").replace("_", " ")
    derivation = f"count of data.{what}" if name == what else f"count of data.{what} with verdict '{verdict}'"
    outcome = {v: k for k, v in derive.THREE_WAY.items()}.get(name)
    if outcome is not None:  # a three-way outcome, not a within/outside verdict
        derivation = f"count of data.numbers with outcome '{outcome}' among those with basis 'measured'"
    elif name in derive.APART:  # counted by basis; a measured number's verdicts are counted among the measured only
        derivation = {
            "measured": "count of data.numbers with basis 'measured'",
            "recorded": "count of data.numbers with basis 'recorded'",
            "recorded_same": "count of data.numbers with basis 'recorded' and verdict 'within'",
        }[name]
    elif what == "numbers" and name != what:
        derivation += " among those with basis 'measured'"
    return Quantity(
        value,
        "",
        evidence=(repro.ident,),
        derivation=derivation,
        key=f"reproduction {short_id(repro.ident)}.{name}",
        anchor=count_anchor(name),
        exact=True,  # a count of verdicts
    )


def counts(repro: derive.Reproduction) -> dict[str, Quantity]:
    return {k: count(repro, k, v) for k, v in derive.verdict_counts(repro.numbers, repro.claims).items()}


def _all(docs: dict[str, dict[str, Any]]) -> dict[tuple[str, int], list[derive.Reproduction]]:
    try:
        return derive.found(docs)
    except ProbebookError as exc:
        raise BuildError(str(exc)) from None


def _sentence(rel: str, q: dict[str, Quantity]) -> str:
    """``21 of 24 measured numbers within their uncertainty, 2 outside, 1 not comparable, 0 missing; 18 of 18 recorded
    numbers the same; 0 of 3 claims flipped, 1 not resolved. Three ways: 2 resolved different, 15 equivalent, 7 not
    resolved``."""
    return (
        f"{q['within'].markdown(rel)} of {q['measured'].markdown(rel)} measured numbers within their uncertainty, "
        f"{q['outside'].markdown(rel)} outside it, {q['not_comparable'].markdown(rel)} not comparable, "
        f"{q['missing'].markdown(rel)} missing; {q['recorded_same'].markdown(rel)} of {q['recorded'].markdown(rel)} "
        f"recorded numbers (params, constants, readings of the machine) the same; "
        f"{q['flipped'].markdown(rel)} of {q['claims'].markdown(rel)} claims flipped, "
        f"{q['claims_not_resolved'].markdown(rel)} not resolved. Three ways: {q['different'].markdown(rel)} "
        f"resolved different, {q['equivalent'].markdown(rel)} equivalent, {q['not_resolved'].markdown(rel)} "
        "not resolved"
    )


def record_section(
    rel: str, slug: str, version: int | None, docs: dict[str, dict[str, Any]]
) -> tuple[str, list[dict[str, Any]]]:
    """The *Reproductions* section of a record version and its ledger rows; a one-line "not yet reproduced" when
    the archive holds none (a reader then knows nobody has, rather than wondering whether the site shows them)."""
    found = _all(docs).get((slug, version or 0), [])
    out = ["", "## Reproductions", ""]
    if not found:
        out += ["Not yet reproduced: no `probebook reproduce` result in the archive names this version.", ""]
        return "\n".join(out) + "\n", []
    rows: list[dict[str, Any]] = []
    out += [
        "Each time this version's evidence was measured again (`probebook reproduce`) and the page rebuilt on it; "
        "every number and claim compared under the rule each comparison page states.",
        "",
    ]
    for repro in found:
        q = counts(repro)
        rows += [ledger.number_row(v, rel, v.key) for v in q.values()]
        link = relative_link(rel, comparison_page(repro.ident))
        out += [
            f"### {mode_label(repro).capitalize()} of {escape_text(repro.date)}",
            "",
            f"On {escape_text(machine_text(docs[repro.ident]))}: {_sentence(rel, q)}. "
            f"[The full comparison table]({link}).",
            "",
        ]
        flipped = [c for c in repro.claims if c.verdict == "flipped"]
        if flipped:
            out += ["Flipped claims:", ""]
            out += [f"- {escape_text(c.text)}" for c in flipped]
            out.append("")
    return "\n".join(out) + "\n", rows


def index_status(sources: Sources, docs: dict[str, dict[str, Any]]) -> dict[str, str]:
    """Records index cell per current record version: yes or no first, then its newest reproduction, else its newest
    comparison across machines, in one line (``[yes, 2026-12-02](…): 41 of 45 numbers within, 1 of 2 claims
    flipped``), or ``no``."""
    found, here = _all(docs), "records/index.md"
    out = {}
    for record in sources.records:
        page = record.current
        items = found.get((record.slug, page.version or 0), [])
        same = [r for r in items if r.mode == "reproduction"]
        newest = (same or items)[-1] if items else None
        if newest is None:
            out[page.rel] = "no"
            continue
        q = counts(newest)
        word = "yes, " if newest.mode == "reproduction" else "no; compared across machines "
        link = relative_link(here, comparison_page(newest.ident))
        claims = "claim" if newest.claims and len(newest.claims) == 1 else "claims"
        out[page.rel] = (
            f"[{word}{escape_text(newest.date)}]({link}): {q['within'].markdown(here)} of "
            f"{q['measured'].markdown(here)} numbers within, {q['flipped'].markdown(here)} of "
            f"{q['claims'].markdown(here)} {claims} flipped"
        )
    return out


def _value(repro: derive.Reproduction, row: derive.NumberRow, side: str) -> Quantity:
    """A number's old or new value as the document recorded it, with its interval."""
    value = row.old if side == "old" else row.new
    interval = row.old_interval if side == "old" else row.new_interval
    shown = row.shown_old if side == "old" else row.shown_new
    unit = row.unit if _UNIT.fullmatch(row.unit) else ""
    fmt = ".1%" if not unit and shown.strip().endswith("%") else ".3g"  # a share is shown as the page showed it
    if value is not None and reading.reads_whole(shown, value):
        value = int(value)  # a count or shape param the page showed whole (seq_len 2048) is shown whole again
    return Quantity(
        value,
        unit,
        fmt=fmt,
        uncertainty=interval,
        evidence=(repro.ident,),
        derivation=f"data.numbers[{row.index}].{side} as the reproduction recorded it",
        key=f"numbers[{row.index}].{side}",
        anchor=number_anchor(row.index),
        note=None if value is not None else f"no {side} value",
        basis=basis.RECORDED,  # where the reproduction recorded no interval
    )


def _change(repro: derive.Reproduction, row: derive.NumberRow) -> Quantity:
    value = derive.relative_change(row.old, row.new)
    return Quantity(
        value,
        "",
        fmt="+.1%",
        evidence=(repro.ident,),
        derivation=f"(new − old) / abs(old) of data.numbers[{row.index}]",
        key=f"numbers[{row.index}].change",
        anchor=number_anchor(row.index),
        note=None if value is not None else "no change: a value is missing or the old one is zero",
        basis=basis.RECORDED,
    )


_CALL = re.compile(r"(\w+)\(([^()]*)\)((?:\.\w+(?:\([^()]*\))?)*)")
"""``fn(alias, args).attr(args)``, a page-function call with no call inside it."""


def _words(text: str) -> str:
    """``params.seq_len`` -> ``seq len``, ``shape='wo.wgrad'`` -> ``shape wo.wgrad``: an argument as words."""
    text = text.strip().strip("'\"")
    if text.startswith(("params.", "data.")):
        text = text.rsplit(".", 1)[1]  # the field's own name; its path is on the evidence page
    return text.replace("=", " ").replace("'", "").replace('"', "").replace("_", " ")


def reader_name(key: str) -> str:
    """A ledger key that a record gave no label, in words for the comparison page's reader: ``value(graph_eager,
    params.seq_len)`` -> ``seq len of graph eager``; ``fit(sweep).share(2048)`` -> ``fit of sweep: share 2048``; a
    key of calls within calls names its outer call and first run (``mfu of sweep_compiled``). The key itself stays
    one click away, on the reproduction's evidence page that every number of the row links to."""
    base, _, nth = key.partition("#")
    suffix = f" ({nth})" if nth.isdigit() else ""
    m = _CALL.fullmatch(base.strip())
    if m is None:
        head = re.match(r"(\w+)\((?:\w+\()?(\w+)", base)
        return (f"{_words(head.group(1))} of {_words(head.group(2))}" if head else _words(base)[:80]) + suffix
    fn, args, tail = m.groups()
    parts = [a for a in args.split(",") if a.strip()]
    alias, rest = (_words(parts[0]), [_words(a) for a in parts[1:]]) if parts else ("", [])
    if fn == "value" and rest:
        name = f"{rest[0]} of {alias}"
    elif fn == "constant":
        name = f"constant {alias}"
    else:
        name = f"{_words(fn)} of {alias}" if alias else _words(fn)
        name += f" {rest[0]}" if fn in ("median", "agreement", "kernel_time", "kernel_share") and rest else ""
        rest = rest[1:] if fn in ("median", "agreement", "kernel_time", "kernel_share") else rest
        if rest:
            name += f" ({', '.join(rest)})"
    for attr in re.findall(r"\.(\w+)(?:\(([^()]*)\))?", tail):
        name += f": {_words(attr[0])}" + (f" {_words(attr[1])}" if attr[1] else "")
    return name + suffix


def three_way_text(row: derive.NumberRow) -> str:
    """A number's three-way outcome as a cell: ``resolved different (band ±5%)``; ``–`` where it has none."""
    if row.outcome is None:
        return "–"
    word = "resolved different" if row.outcome == "resolved" else row.outcome
    return word + (f" (band ±{row.delta:.0%})" if row.delta is not None else "")


def _id_list(rel: str, ids: dict[str, str], docs: dict[str, dict[str, Any]]) -> list[str]:
    out = []
    for name in sorted(ids):
        ident = ids[name]
        shown = f"`{short_id(ident)}`"
        if ident in docs:  # only evidence this archive holds has a page to link to
            shown = f"[{shown}]({relative_link(rel, evidence_page(ident))})"
        out.append(f"- {escape_text(name)}: {shown}")
    return out or ["*(none)*"]


def comparison(repro: derive.Reproduction, docs: dict[str, dict[str, Any]], sources: Sources) -> tuple[str, list]:
    """The comparison page of one reproduction and its ledger rows: every number, most moved first."""
    rel = comparison_page(repro.ident)
    label = mode_label(repro)
    title = f"{label.capitalize()} of {repro.title or repro.record}, version {repro.version}, {repro.date}"
    record = next((r for r in sources.records if r.slug == repro.record), None)
    page = next((p for p in record.versions if p.version == repro.version), None) if record else None
    shown_record = (
        f"[{escape_text(page.title)}, version {page.version}]({relative_link(rel, page.rel)})"
        if page is not None
        else f"{escape_text(repro.record)} version {repro.version} (not a record of this site)"
    )
    q = counts(repro)
    rows = [ledger.number_row(v, rel, v.key) for v in q.values()]
    out = [f"# {escape_text(nav_title(title))}", ""]
    out += [
        f"A {label} of {shown_record}, on {escape_text(machine_text(docs[repro.ident]))}: {_sentence(rel, q)}. "
        f"Stored as evidence [`{short_id(repro.ident)}`]({relative_link(rel, evidence_page(repro.ident))}).",
        "",
    ]
    if repro.mode == "cross-machine":
        out += [
            '!!! warning "Not a reproduction"',
            "",
            "    The new evidence was measured on another GPU model: a difference here is across machines.",
            "",
        ]
    out += ["## The rule", "", escape_text(repro.rule) or "*(the document states none)*", ""]
    out += [
        "## Every number, most moved first",
        "",
        "Sorted by how far each number moved (|change|); numbers with no change to show come last. *Three ways* "
        "is the verdict of the difference against its probe class's practical band, and the interval it was "
        "judged by: *across sessions* (where the record says a new session lands) or *this run's windows*.",
        "",
        "| number | old | new | change | verdict | three ways | judged by |",
        "|---|---:|---:|---:|---|---|---|",
    ]
    for row in derive.moved_order(repro.numbers):
        cells = [_value(repro, row, "old"), _value(repro, row, "new"), _change(repro, row)]
        rows += [ledger.number_row(c, rel, c.key) for c in cells]
        # the record's label, else the key in words: the expression itself is on the evidence page, one click away
        labelled = row.label and row.label != row.key and not row.label.startswith(row.key.split("#")[0])
        name = escape_text(row.label if labelled else reader_name(row.key))
        three = [three_way_text(row), row.judged_by or "–"]
        out.append(
            f"| {name} | "
            + " | ".join(c.markdown(rel) for c in cells)
            + f" | {row.verdict} | "
            + " | ".join(three)
            + " |"
        )
    out += ["", "## Claims", ""]
    if repro.claims:
        out += ["| claim | before | after | verdict |", "|---|---|---|---|"]
        for c in repro.claims:
            after = "–" if c.new is None else str(c.new).lower()
            out.append(f"| {escape_text(c.text)} | {str(c.old).lower()} | {after} | {c.verdict} |")
    else:
        out.append("*(the record states no checked claim)*")
    traced, traced_rows = trace_section(rel, repro.original, repro.new, docs)  # where both sides hold a profile
    out += traced
    rows += traced_rows
    for anchor, heading, ids in (("original-evidence", "Original", repro.original), ("new-evidence", "New", repro.new)):
        out += ["", f'<span id="{anchor}"></span>', "", f"## {heading} evidence", "", *_id_list(rel, ids, docs)]
    if repro.commands:
        out += ["", "## Commands run", "", "```sh", *(printable(c) for c in repro.commands), "```"]
    return "\n".join(out) + "\n", rows


def comparison_pages(docs: dict[str, dict[str, Any]], sources: Sources) -> tuple[dict[str, bytes], list]:
    """Every reproduction document's comparison page (tree path -> bytes) and their ledger rows."""
    files: dict[str, bytes] = {}
    rows: list[dict[str, Any]] = []
    for _named, items in sorted(_all(docs).items()):  # in one order whatever order the archive was read in
        for repro in items:
            text, made = comparison(repro, docs, sources)
            files[comparison_page(repro.ident)] = text.encode("utf-8")
            rows += made
    return files, rows
