"""Turn measurements taken elsewhere (CSV or JSON rows) into imported evidence (ARCHITECTURE.md §4.3).

Each importable probe has a column contract: required columns with a kind each. Extra
columns are kept. Every rejected value is reported as ``FILE row N column C: why``.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from measure.errors import EvidenceError
from measure.evidence import Evidence, is_time_field, loads

# kinds: "time" (positive finite seconds), "count" (positive integer), "bytes" (non-negative
# integer), "rate" (positive finite), "text" (non-empty string), "status" (ok|oom)
CONTRACTS: dict[str, dict[str, str]] = {
    "step-scaling": {"tokens": "count", "step_s": "time"},
    "loss-memory": {"arm": "text", "microbatch": "count", "tokens_per_step": "count", "peak_bytes": "bytes"},
    "batch-sweep": {
        "model": "text",
        "params": "count",
        "context": "count",
        "batch": "count",
        "tok_s": "rate",
        "peak_bytes": "bytes",
        "status": "status",
    },
}
OPTIONAL: dict[str, dict[str, str]] = {
    "step-scaling": {"batch": "count", "mode": "text"},
    "loss-memory": {"tok_s": "rate", "vocab": "count"},
    "batch-sweep": {},
}
# an OOM row of a batch sweep has no throughput or peak to report
NULLABLE_ON_OOM = {"tok_s", "peak_bytes"}


@dataclass(frozen=True)
class ImportRequest:
    """What ``probebook archive import`` was asked to do."""

    probe: str
    """Probe whose column contract the file follows."""
    path: Path
    """The CSV or JSON file."""
    source: str
    """Where the numbers came from (a paper, a log, a colleague's run)."""
    gpu: str | None = None
    """GPU the numbers were measured on, if known."""
    notes: str | None = None
    """Free text kept with the evidence."""


def _number(text: Any) -> float | None:
    if isinstance(text, bool):
        return None
    if isinstance(text, (int, float)):
        try:
            return float(text)
        except OverflowError:  # an integer too large for a double
            return math.inf
    try:
        return float(str(text).strip())
    except ValueError:
        return None


def _cell(where: str, column: str, kind: str, value: Any, row: dict[str, Any]) -> Any:
    blank = value is None or (isinstance(value, str) and not value.strip())
    if blank:
        if column in NULLABLE_ON_OOM and str(row.get("status", "")).strip().lower() == "oom":
            return None
        raise EvidenceError(f"{where} column '{column}': empty value")
    if kind in ("text", "status"):
        text = str(value).strip()
        if kind == "status" and text.lower() not in ("ok", "oom"):
            raise EvidenceError(f"{where} column '{column}': must be ok or oom, got {text!r}")
        return text.lower() if kind == "status" else text
    num = _number(value)
    if num is None:
        raise EvidenceError(f"{where} column '{column}': not a number: {value!r}")
    if not math.isfinite(num):
        raise EvidenceError(f"{where} column '{column}': must be finite, got {value!r}")
    if kind in ("time", "rate") and num <= 0:
        raise EvidenceError(f"{where} column '{column}': must be positive, got {value!r}")
    if kind in ("count", "bytes"):
        if num != int(num) or num < (1 if kind == "count" else 0):
            bound = "a positive integer" if kind == "count" else "a non-negative integer"
            raise EvidenceError(f"{where} column '{column}': must be {bound}, got {value!r}")
        return int(num)
    return num


def _extra(where: str, column: str, value: Any) -> Any:
    """Extra columns are kept; numeric text becomes a number, NaN-like text stays text.

    An extra column named like a time (``*_s``, ``*_ms``, ``*_us``) must hold a positive finite
    number or be blank (null), as every evidence time must (ARCHITECTURE.md §4.1).
    """
    if isinstance(value, (dict, list)):  # samples are flat objects (ARCHITECTURE.md §4.1): no nested values
        raise EvidenceError(f"{where} column '{column}': must be a number, text or null, got {type(value).__name__}")
    if is_time_field(column):
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        num = _number(value)
        if num is None:
            raise EvidenceError(f"{where} column '{column}': not a number: {value!r}")
        if not math.isfinite(num) or num <= 0:
            raise EvidenceError(f"{where} column '{column}': a time must be positive and finite, got {value!r}")
        return num
    if isinstance(value, str):
        num = _number(value)
        if num is not None and math.isfinite(num):
            return int(num) if num == int(num) and "." not in value and "e" not in value.lower() else num
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _rows_from_csv(path: Path, text: str) -> tuple[list[str], list[dict[str, Any]], int]:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        header = reader.fieldnames
        if not header:
            raise EvidenceError(f"{path}: no header row")
        columns = [c.strip() for c in header]
        blank = [i + 1 for i, c in enumerate(columns) if not c]
        if blank:
            raise EvidenceError(f"{path} row 1: header column {blank[0]} has no name")
        dupes = sorted({c for c in columns if columns.count(c) > 1})
        if dupes:
            raise EvidenceError(f"{path} row 1: column '{dupes[0]}' appears more than once in the header")
        rows = []
        for row in reader:
            if None in row:
                raise EvidenceError(f"{path} row {reader.line_num}: more cells than header columns")
            if any(v is None for v in row.values()):
                raise EvidenceError(f"{path} row {reader.line_num}: fewer cells than header columns")
            rows.append({k.strip(): v for k, v in row.items()})
    except csv.Error as exc:
        raise EvidenceError(f"{path} row {reader.line_num}: malformed CSV: {exc}") from None
    return columns, rows, 2


def _rows_from_json(path: Path, text: str) -> tuple[list[str], list[dict[str, Any]], int]:
    try:
        doc = loads(text)
    except json.JSONDecodeError as exc:
        raise EvidenceError(f"{path}: malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except ValueError as exc:
        raise EvidenceError(f"{path}: {exc}") from None
    if isinstance(doc, dict) and "schema" in doc:
        raise EvidenceError(
            f"{path}: this is already an evidence document, not rows of measurements; "
            f"add it with `probebook archive add {path}`"
        )
    if isinstance(doc, dict) and "samples" in doc:
        doc = doc["samples"]
    if not isinstance(doc, list):
        raise EvidenceError(f'{path}: expected a list of row objects (or {{"samples": [...]}})')
    for i, r in enumerate(doc):
        if not isinstance(r, dict):
            raise EvidenceError(f"{path} row {i + 1}: expected an object of column: value, got {type(r).__name__}")
    columns: list[str] = []
    for r in doc:
        columns += [k for k in r if k not in columns]
    return columns, doc, 1


def read_rows(probe: str, path: Path) -> list[dict[str, Any]]:
    """Read and check one file against ``probe``'s column contract; return typed rows."""
    if probe not in CONTRACTS:
        raise EvidenceError(f"--probe {probe!r} cannot be imported; choose one of {', '.join(CONTRACTS)}")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise EvidenceError(f"{path}: cannot read ({exc.strerror})") from None
    if not raw.strip():
        raise EvidenceError(f"{path}: file is empty")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise EvidenceError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    if path.suffix.lower() == ".json":
        columns, rows, first = _rows_from_json(path, text)
    elif path.suffix.lower() == ".csv":
        columns, rows, first = _rows_from_csv(path, text)
    else:
        raise EvidenceError(f"{path}: give a .csv or .json file")
    contract = CONTRACTS[probe]
    missing = [c for c in contract if c not in columns]
    if missing:
        raise EvidenceError(
            f"{path}: missing required column(s) {', '.join(missing)} for {probe} (needs {', '.join(contract)})"
        )
    if not rows:
        raise EvidenceError(f"{path}: no data rows")
    kinds = {**contract, **OPTIONAL[probe]}
    out = []
    for i, row in enumerate(rows):
        where = f"{path} row {i + first}"
        absent = [c for c in contract if c not in row]
        if absent:
            raise EvidenceError(f"{where}: missing required column '{absent[0]}' for {probe}")
        typed = {}
        for column, value in row.items():
            if column in kinds:
                if column in OPTIONAL[probe] and (value is None or str(value).strip() == ""):
                    typed[column] = None
                    continue
                typed[column] = _cell(where, column, kinds[column], value, row)
            else:
                typed[column] = _extra(where, column, value)
        out.append(typed)
    return out


def build(request: ImportRequest, code: dict[str, Any]) -> Evidence:
    """The imported evidence document for a request (not yet stored)."""
    if not request.source.strip():
        raise EvidenceError("--source must say where the numbers came from")
    rows = read_rows(request.probe, request.path)
    machine = {"gpu": request.gpu, "note": "imported: machine fingerprint not recorded at the source"}
    return Evidence(
        probe=request.probe,
        probe_version=1,
        params={"imported_from": request.path.name, "columns": list(dict.fromkeys(c for r in rows for c in r))},
        data={"samples": rows},
        machine=machine,
        code=code,
        origin={"kind": "imported", "source": request.source.strip()},
        notes=request.notes,
    )
