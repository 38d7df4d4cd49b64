"""An evidence page's "Numbers taken from this evidence": one entry per ledger number that cites the document.

A number a page shows is often not any one value of its evidence as the evidence page shows it: a median of many
windows, a fit's coefficient, a share, a count of rows, a value in another unit. Its link lands on its own entry
here (``render.numbers.links.number_links``), whose element id (``entry_anchor``) is made from the citing page and
the ledger key, so it is the same whichever way the build ran. The entry shows the number exactly as the citing
page shows it (first column, in view on a phone), what it is (its derivation), which page and version cites it,
and the rows or field it was computed from, as a link that marks them (``render/assets/numbers.js``). Every text
here is data: it is escaped (``escape_text``) like the rest of the page, never written as markup.
"""

from __future__ import annotations

import re
from typing import Any

from render.numbers import claims
from render.numbers.links import SAMPLES, anchor_href, entry_anchor, escape_text, relative_link

HEADING = "Numbers taken from this evidence"
_ANCHOR = re.compile(r"[A-Za-z0-9_.~-]{1,200}")


def by_evidence(rows: list[dict[str, Any]]) -> dict[str, list[tuple[str, str, str, str, str]]]:
    """Ledger ``rows`` as the entries of each evidence page they cite: evidence id -> (page, key, the number as its
    page shows it, derivation, where its rows are on that evidence page) per row, sorted by page and key, so the
    list, and the evidence page's cache key made from it, is the same however the pages were rendered. A checked
    claim's row is no number shown: it has no entry."""
    out: dict[str, list[tuple[str, str, str, str, str]]] = {}
    for row in rows:
        if row.get("unit") == claims.KIND:
            continue  # a checked claim shows as its sentence, linked to nothing: no number to land
        evidence = row.get("evidence") or []
        anchors = row.get("anchors") or []
        shown = str(row.get("shown") or row.get("text") or "")
        for i, ident in enumerate(evidence):
            anchor = str(anchors[i]) if i < len(anchors) and anchors[i] else SAMPLES
            anchor = anchor if _ANCHOR.fullmatch(anchor) else SAMPLES  # a link target, from data: id-safe or none
            entry = (str(row["page"]), str(row["key"]), shown, str(row.get("derivation") or ""), anchor)
            out.setdefault(str(ident), []).append(entry)
    for entries in out.values():
        entries.sort()
    return out


_RUNS = re.compile(r"samples-r([0-9_-]+)")


def place_text(anchor: str) -> str:
    """Where ``anchor`` is, in words: ``row 12``, ``rows 3–5, 9``, ``params › batch``, ``the raw samples``."""
    bare = anchor.split("~", 1)[0]
    column = anchor.split("~", 1)[1] if "~" in anchor else ""
    in_column = f", column {column}" if column else ""
    m = _RUNS.fullmatch(bare)
    if m:
        return "rows " + ", ".join(run.replace("-", "–") for run in m.group(1).split("_")) + in_column
    if bare.startswith("row-"):
        return f"row {bare[4:]}{in_column}"
    if bare == SAMPLES:
        return "the raw samples"
    head, _, rest = bare.partition("-")
    return f"{head} › {rest}" if rest else head


_VERSION = re.compile(r"/v([0-9]+)\.md$")


def section(rel: str, entries: list[tuple[str, str, str, str, str]], titles: dict[str, str], history: str = "") -> str:
    """The section's Markdown on the evidence page ``rel``: one table row per entry (``by_evidence``), ``titles``
    naming each citing page; "" when no number cites the document. ``history``: the tree path of the run's
    configuration key's history page (``render.evidence.historypage``), linked from each entry beside its rows: a
    number's link lands here, and the reader goes on to every session of the same measurement."""
    if not entries:
        return ""
    lines = [
        f"## {HEADING}",
        "",
        "Each number a page shows from this evidence, as that page shows it, with what it is and the rows or field "
        "it was computed from.",
        "",
        "| number | what it is | cited by | computed from |",
        "|---|---|---|---|",
    ]
    more = f" · [every session]({relative_link(rel, history)})" if history else ""
    for page, key, shown, derivation, anchor in entries:
        version = _VERSION.search(page)
        title = titles.get(page, page)
        named = escape_text(title) + (f", version {version.group(1)}" if version else "")
        cited = f"[{named}]({relative_link(rel, page)})"
        lines.append(
            f'| <span id="{entry_anchor(page, key)}"></span>{escape_text(shown)} | {escape_text(derivation)} | '
            f"{cited}: {escape_text(key)} | [{escape_text(place_text(anchor))}]({anchor_href(anchor)}){more} |"
        )
    return "\n".join(lines) + "\n"
