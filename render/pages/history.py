"""The published history: one dated entry per ``probebook publish``, appended, never rewritten.

See ARCHITECTURE.md §Numbers.

``archive/published/history.jsonl`` (beside the published ledger) holds one JSON object per line. Each
entry records what a publish accepted: its date, the ledger's SHA-256 and size, the numbers that moved
against the ledger it replaced (old and new text, relative change), the counts added and removed, the
current version of every record and every erratum at that moment. The *Changes* page is built from it:
each publish with the records versioned and the errata added since the one before.

Write-once in spirit: ``append`` only adds a line at the end (and fsyncs it); each entry names the
SHA-256 of every byte before it (``previous``), so ``read`` refuses a history whose earlier entries were
edited, reordered or cut, naming the file and line.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from measure.errors import ProbebookError
from measure.evidence.envelope import loads
from measure.evidence.files import append_regular
from measure.evidence.reading import read_regular
from render.numbers import ledger
from render.pages.sources import Sources

NAME = "history.jsonl"
FIELDS = {"date", "ledger_sha256", "numbers", "added", "removed", "changed", "records", "errata", "previous", "source"}


class HistoryError(ProbebookError):
    """The published history is malformed or was rewritten."""


def path_beside(published_ledger: Path) -> Path:
    """Where the history of a published ledger lives: the same folder, ``history.jsonl``."""
    return published_ledger.parent / NAME


def entry(
    date: str,
    rows: list[dict[str, Any]],
    before: list[dict[str, Any]],
    sources: Sources,
    source: str | None = None,
) -> dict[str, Any]:
    """The history entry of publishing ``rows`` over ``before`` on ``date`` (YYYY-MM-DD), from ``sources``."""
    d = ledger.diff(before, rows)
    changed = [
        {
            "page": c.page,
            "key": c.key,
            "old": c.old["text"],
            "new": c.new["text"],
            "relative": c.relative,
        }
        for c in d.changed
    ]
    out: dict[str, Any] = {
        "date": date,
        "ledger_sha256": hashlib.sha256(ledger.to_bytes(rows)).hexdigest(),
        "numbers": len(rows),
        "added": len(d.added),
        "removed": len(d.removed),
        "changed": changed,
        **snapshot(sources),
    }
    if source:
        out["source"] = source
    return out


def snapshot(sources: Sources) -> dict[str, Any]:
    """``{"records": {slug: current version, date, title, page}, "errata": [{page, date, text}]}`` of the sources."""
    records = {
        r.slug: {"version": r.current.version, "date": r.current.date, "title": r.current.title, "page": r.current.rel}
        for r in sources.records
    }
    errata = [
        {"page": p.rel, "date": e.date, "text": e.text} for r in sources.records for p in r.versions for e in p.errata
    ]
    return {"records": records, "errata": errata}


def _line(doc: dict[str, Any]) -> bytes:
    return (json.dumps(doc, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")


def read(path: Path) -> list[dict[str, Any]]:
    """Every entry, oldest first; [] when there is no history. A broken chain or line names the file and line."""
    if not os.path.lexists(path):
        return []
    raw = read_regular(path)  # a link, FIFO or device: refused in one line, never followed or waited on
    out = []
    offset = 0
    for number, line in enumerate(raw.splitlines(keepends=True), start=1):
        where = f"{path} line {number}"
        try:
            doc = loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise HistoryError(f"{where}: not a JSON history entry ({str(exc)[:120]})") from None
        if not isinstance(doc, dict) or not {"date", "ledger_sha256", "previous"} <= set(doc) <= FIELDS:
            raise HistoryError(f"{where}: an entry needs date, ledger_sha256 and previous, and no other fields")
        expected = hashlib.sha256(raw[:offset]).hexdigest()
        if doc["previous"] != expected:
            raise HistoryError(
                f"{where}: 'previous' does not match the entries before it; earlier entries were edited or cut "
                "(the history is append-only: restore it from git)"
            )
        out.append(doc)
        offset += len(line)
    return out


def append(path: Path, new: dict[str, Any]) -> dict[str, Any]:
    """Append ``new`` to the history at ``path`` (created if absent), chained to every byte before it."""
    read(path)  # refuse to extend a history that was rewritten
    path.parent.mkdir(parents=True, exist_ok=True)
    before = read_regular(path) if os.path.lexists(path) else b""
    doc = {**new, "previous": hashlib.sha256(before).hexdigest()}
    append_regular(path, _line(doc))  # never through a link: a dangling one made a file outside the archive
    return doc
