"""The Evidence index: every archived document, grouped by probe, machine and date, on pages of bounded size.

Evidence pages are not in the site's navigation (ARCHITECTURE.md §Pages): a navigation listing every
document is printed into every page, so each page grew with the archive and the site with its square
(issue 15: about 400 KB a page and 429 MB in all at 1,000 documents). The navigation holds one
*Evidence* entry, ``evidence/index.md``: one line per (probe, machine) group with its count, its
dates and a link to the group's first listing page. A listing page (``evidence/list/<probe>/<n>.md``)
holds at most ``PAGE_SIZE`` documents, newest first under a heading per machine and date, each with
its one-line description, and links to its neighbours. No page's size depends on how many documents
the archive holds: a listing is bounded by ``PAGE_SIZE``, the index by the number of probes and machines.
"""

from __future__ import annotations

import re
from typing import Any

from render.numbers.links import escape_text, evidence_page, relative_link, short_id

PAGE_SIZE = 200
"""Documents per listing page: about 40 KB of Markdown, well under a 100 KB page (issue 15)."""
INDEX = "evidence/index.md"
LIST_FOLDER = "evidence/list"
HISTORY = "evidence/history/index.md"
"""The index of the configuration keys' history pages (``render.evidence.historypage``)."""
NO_GPU = "CPU only"
UNRECORDED = "machine not recorded (imported)"
"""Where imported evidence that names no GPU is listed: its numbers were taken elsewhere, on a machine nobody
recorded, which is not a CPU-only run (issue 29)."""


def machine_name(doc: dict[str, Any]) -> str:
    """The machine a document was measured on, as the index groups it: the GPU's name, else ``CPU only`` for a
    measured run and ``UNRECORDED`` for imported numbers."""
    machine = doc.get("machine") or {}
    gpu = machine.get("gpu") if isinstance(machine, dict) else None
    if gpu:
        return " ".join(str(gpu).split())
    origin = doc.get("origin")
    return UNRECORDED if isinstance(origin, dict) and origin.get("kind") == "imported" else NO_GPU


def date_of(doc: dict[str, Any]) -> str:
    """The UTC date (``YYYY-MM-DD``) of a document's ``created_at``; ``undated`` when it has none."""
    created = str(doc.get("created_at") or "")
    return created[:10] if re.fullmatch(r"\d{4}-\d{2}-\d{2}", created[:10]) else "undated"


def describe(doc: dict[str, Any]) -> str:
    """One line saying what a document measured: probe, preset, the shape inputs it names, status, origin."""
    params = doc.get("params") or {}
    parts = [str(doc.get("probe"))]
    for key in ("preset", "dtype", "batch", "seq_len", "seq_lens", "contexts"):
        value = params.get(key) if isinstance(params, dict) else None
        if value is not None and value != [] and value != ():
            shown = ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)
            parts.append(f"{key.replace('_', ' ')} {shown}")
    n = len((doc.get("data") or {}).get("samples") or [])
    parts.append(f"{n} sample{'s' if n != 1 else ''}")
    status = doc.get("status")
    if status and status != "complete":
        parts.append(str(status))
    origin = doc.get("origin") or {}
    if origin.get("kind") == "imported":
        parts.append("imported")
    return "; ".join(parts)


def _slug(text: str) -> str:
    """A file-name-safe form of a probe name (probe names are already ``[a-z0-9-]``; anything else is folded)."""
    return re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-") or "unnamed"


def _groups(docs: dict[str, dict[str, Any]]) -> dict[str, list[str]]:
    """Probe -> ids, each list ordered by machine, then newest date first, then id (deterministic)."""
    by_probe: dict[str, list[str]] = {}
    for ident, doc in docs.items():
        by_probe.setdefault(str(doc.get("probe")), []).append(ident)
    for ids in by_probe.values():
        # stable sorts, last key first: by id, then newest first, then by machine
        ids.sort()
        ids.sort(key=lambda i: str(docs[i].get("created_at") or ""), reverse=True)
        ids.sort(key=lambda i: machine_name(docs[i]))
    return dict(sorted(by_probe.items()))


def list_page(probe: str, n: int) -> str:
    """The tree path of a probe's ``n``-th listing page (from 1)."""
    return f"{LIST_FOLDER}/{_slug(probe)}/{n}.md"


def _listing(
    probe: str, n: int, pages: int, ids: list[str], docs: dict[str, dict[str, Any]], cited: dict[str, Any]
) -> str:
    here = list_page(probe, n)
    out = [f"# Evidence: {escape_text(probe)} ({n} of {pages})", ""]
    links = [f"[all evidence]({relative_link(here, INDEX)})"]
    if n > 1:
        links.append(f"[← page {n - 1}]({relative_link(here, list_page(probe, n - 1))})")
    if n < pages:
        links.append(f"[page {n + 1} →]({relative_link(here, list_page(probe, n + 1))})")
    out += [" · ".join(links), ""]
    machine = date = None
    for ident in ids:
        doc = docs[ident]
        if machine_name(doc) != machine:
            machine, date = machine_name(doc), None
            out += [f"## {escape_text(machine)}", ""]
        if date_of(doc) != date:
            date = date_of(doc)
            out += [f"### {escape_text(date)}", ""]
        uses = len(cited.get(ident, []))
        cite = f"; cited by {uses} page{'s' if uses != 1 else ''}" if uses else ""
        link = relative_link(here, evidence_page(ident))
        out.append(f"- [`{short_id(ident)}`]({link}): {escape_text(describe(doc))}{cite}")
    return "\n".join(out) + "\n"


def pages(docs: dict[str, dict[str, Any]], cited: dict[str, Any], page_size: int = PAGE_SIZE) -> dict[str, bytes]:
    """The index and every listing page (at most ``page_size`` documents each), by tree path."""
    out: dict[str, bytes] = {}
    head = ["# Evidence", ""]
    if not docs:
        head.append("No evidence is archived yet. `probebook archive import` or `probebook measure` adds some.")
        out[INDEX] = ("\n".join(head) + "\n").encode("utf-8")
        return out
    head += [
        f"{len(docs)} archived evidence document{'s' if len(docs) != 1 else ''}, by probe and machine. Each "
        f"listing shows at most {page_size} documents, newest first; each document's page shows its raw "
        "measurements and links to the pages that publish numbers derived from it. "
        f"[History]({relative_link(INDEX, HISTORY)}) gathers the runs of each configuration across sessions.",
        "",
        "| probe | machine | documents | dates | listing |",
        "|---|---|---:|---|---|",
    ]
    for probe, ids in _groups(docs).items():
        chunks = [ids[i : i + page_size] for i in range(0, len(ids), page_size)]
        for n, chunk in enumerate(chunks, start=1):
            out[list_page(probe, n)] = _listing(probe, n, len(chunks), chunk, docs, cited).encode("utf-8")
        first: dict[str, int] = {}
        members: dict[str, list[str]] = {}
        for k, ident in enumerate(ids):
            m = machine_name(docs[ident])
            first.setdefault(m, k // page_size + 1)
            members.setdefault(m, []).append(date_of(docs[ident]))
        for m, dates in members.items():
            span = min(dates) if min(dates) == max(dates) else f"{min(dates)} to {max(dates)}"
            link = relative_link(INDEX, list_page(probe, first[m]))
            head.append(
                f"| {escape_text(probe)} | {escape_text(m)} | {len(dates)} | {escape_text(span)} | "
                f"[page {first[m]} of {len(chunks)}]({link}) |"
            )
    out[INDEX] = ("\n".join(head) + "\n").encode("utf-8")
    return out
