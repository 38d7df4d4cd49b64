"""One generated page per evidence id (ARCHITECTURE.md §6.4); the index of them is ``render/evidence_index.py``.

A page shows the envelope, the machine, the params, the raw samples as a table, any other
data as JSON, the pages that cite it, and downloads: the archived JSON bytes unchanged and the
samples as CSV. Every text taken from the evidence (notes, source, column names, values) is
escaped, so evidence cannot inject markup into the site.
"""

from __future__ import annotations

import json
from typing import Any

from render import tables
from render.quantity import escape_text, evidence_page, relative_link, short_id

MAX_ROWS = 500
"""Raw rows shown on a page; the CSV download always holds all of them."""


def _cell(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return escape_text(repr(value))
    if isinstance(value, (dict, list)):
        return escape_text(json.dumps(value, sort_keys=True, ensure_ascii=False))
    return escape_text(value)


def _fields_table(mapping: dict[str, Any]) -> str:
    if not mapping:
        return "*(none recorded)*\n"
    lines = ["| field | value |", "|---|---|"]
    lines += [f"| {escape_text(k)} | {_cell(mapping[k])} |" for k in sorted(mapping)]
    return "\n".join(lines) + "\n"


def _samples_table(doc: dict[str, Any]) -> tuple[str, int]:
    # plain rows, not samples_frame: a DataFrame per page and itertuples cost ~2 ms a page (bench/render.py)
    columns, cells = tables.samples_columns(doc)
    if not columns:
        return "*(no samples)*\n", 0
    lines = ["| " + " | ".join(escape_text(c) for c in columns) + " |", "|" + "---|" * len(columns)]
    for row in cells[:MAX_ROWS]:
        lines.append("| " + " | ".join(_cell(None if _missing(v) else v) for v in row) + " |")
    if len(cells) > MAX_ROWS:
        lines.append(f"\n*{len(cells) - MAX_ROWS} more rows in the CSV download.*")
    return "\n".join(lines) + "\n", len(cells)


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def page_markdown(ident: str, doc: dict[str, Any], cited_by: list[tuple[str, str]]) -> str:
    """The evidence page; ``cited_by`` lists (tree path, title) of pages that use it."""
    rel = evidence_page(ident)
    hexpart = ident.split(":", 1)[1]
    origin = doc.get("origin") or {}
    code = doc.get("code") or {}
    envelope = {
        "id": ident,
        "schema": doc.get("schema"),
        "probe": doc.get("probe"),
        "probe_version": doc.get("probe_version"),
        "created_at": doc.get("created_at"),
        "status": doc.get("status"),
        "origin": origin.get("kind"),
    }
    if origin.get("kind") == "imported":
        envelope["source"] = origin.get("source")
    if doc.get("error") is not None:
        envelope["error"] = doc["error"]
    if doc.get("notes") is not None:
        envelope["notes"] = doc["notes"]
    out = [f"# Evidence {escape_text(short_id(ident))} ({escape_text(doc.get('probe'))})", ""]
    out.append(f"Downloads: [JSON, as archived]({hexpart}.json) · [samples as CSV]({hexpart}.csv)")
    out.append("")
    out += ["## Envelope", "", _fields_table(envelope)]
    out += ["## Cited by", ""]
    if cited_by:
        out += [f"- [{escape_text(title)}]({relative_link(rel, path)})" for path, title in cited_by]
    else:
        out.append("*No page cites this evidence yet.*")
    out.append("")
    out += ["## Code", "", _fields_table(code)]
    out += ["## Machine", "", _fields_table(doc.get("machine") or {})]
    out += ["## Params", "", _fields_table(doc.get("params") or {})]
    table, n = _samples_table(doc)
    out += [f"## Raw samples ({n})", "", table]
    other = {k: v for k, v in (doc.get("data") or {}).items() if k != "samples"}
    if other:
        # ensure_ascii and indent keep every line starting with whitespace or a bracket: no fence can close early
        out += [
            "## Other data",
            "",
            "```json",
            json.dumps(other, indent=2, sort_keys=True, ensure_ascii=True),
            "```",
            "",
        ]
    return "\n".join(out)


def page_files(ident: str, doc: dict[str, Any], raw: bytes, cited_by: list[tuple[str, str]]) -> dict[str, bytes]:
    """The page and its two downloads, by tree path."""
    hexpart = ident.split(":", 1)[1]
    return {
        evidence_page(ident): page_markdown(ident, doc, cited_by).encode("utf-8"),
        f"evidence/{hexpart}.json": raw,
        f"evidence/{hexpart}.csv": tables.samples_csv(doc).encode("utf-8"),
    }
