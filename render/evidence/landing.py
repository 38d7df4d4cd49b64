"""What an evidence page shows where a number's link would land, so the link can choose that place or its entry.

``anchor_texts`` reads a document as its page shows it (``render.evidence.pages``: the params, machine and field
tables, each samples row and cell) into plain text by anchor; ``landing_texts`` serves them to
``render.numbers.links.landing_place`` while a page renders (``render.assemble.pages``), which keeps a number's link on
a raw row or field only when that place shows the number as the page does (``render.numbers.links.holds``).
"""

from __future__ import annotations

from typing import Any

from render.evidence import fields, pages
from render.numbers.links import (
    COLUMNS,
    MAX_OTHER,
    MAX_ROWS,
    SAMPLES,
    Landing,
    field_id,
    flatten,
    plain_text,
    row_anchor,
)
from render.tables import columns


def anchor_texts(doc: dict[str, Any]) -> dict[str, str]:
    """What the page shows where each anchor of its rows and fields lands (the text of the anchor's table row, or of
    one samples cell for ``row-12~time_s``), as plain text: what ``render.numbers.links.landing_place`` reads to
    tell whether a number's link may land there. Built from the same rows and texts as the tables."""
    # a section's heading, the samples note, a list of values in one cell (wider than a phone): no one value shown
    out: dict[str, str] = {"code": "", "params": "", "machine": "", "envelope": "", SAMPLES: ""}
    for prefix in ("code", "params"):
        found = doc.get(prefix)
        mapping: dict[str, Any] = found if isinstance(found, dict) else {}
        for k in sorted(mapping):
            anchor = field_id(prefix, str(k))
            if anchor:
                out[anchor] = f"{fields.label(str(k))} {fields.value_text(str(k), mapping[k])}"
    for label, value, anchor, unit in pages._machine_rows(doc):
        if anchor:
            out[anchor] = f"{label} {fields.value_text(unit, value)}"
    other = {k: v for k, v in (doc.get("data") or {}).items() if k != "samples"}
    for path, value in flatten(other)[:MAX_OTHER]:
        anchor = field_id("data", path)
        if anchor:
            out[anchor] = "" if isinstance(value, list) else f"{fields.label(path)} {fields.value_text(path, value)}"
    names, cells = columns.samples_columns(doc)
    out[COLUMNS] = "\n".join(names)
    for i, row in enumerate(cells[:MAX_ROWS]):
        shown = [pages.readable(None if pages._missing(v) else v, c) for v, c in zip(row, names, strict=True)]
        out[row_anchor(i)] = " ".join([str(i), *shown])
        out.update((f"{row_anchor(i)}~{c}", text) for c, text in zip(names, shown, strict=True))
    return {anchor: text if anchor == COLUMNS else plain_text(text) for anchor, text in out.items()}


_TEXTS: dict[str, dict[str, str]] = {}
"""``anchor_texts`` by evidence id (an id names its bytes, so a kept one is never stale), in this process."""


def landing_texts(docs: dict[str, dict[str, Any]]) -> Landing:
    """``render.numbers.links.LANDING`` for a build over ``docs``: the text at an anchor of an evidence page, None
    for an id or anchor it does not know (a campaign point's cell, the envelope)."""

    def shown_at(ident: str, anchor: str) -> str | None:
        if ident not in docs:
            return None
        if ident not in _TEXTS:
            if len(_TEXTS) >= 512:
                _TEXTS.clear()
            _TEXTS[ident] = anchor_texts(docs[ident])
        return _TEXTS[ident].get(anchor)

    return shown_at
