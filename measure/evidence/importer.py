"""Turn measurements taken elsewhere (CSV or JSON rows) into imported evidence (ARCHITECTURE.md §Evidence).

Each importable probe has a column contract: required columns with a kind each. Extra
columns are kept. Every rejected value is reported as ``FILE row N column C: why``.
"""

from __future__ import annotations

import csv
import decimal
import io
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from measure.errors import EvidenceError, StoreError
from measure.evidence.contracts import CONTRACTS, STATUSES, Contract, importable
from measure.evidence.envelope import Evidence, is_time_field, loads
from measure.evidence.reading import read_regular
from measure.evidence.store import Store

# the column contracts and their kinds live in measure/evidence/contracts.py, shared with render


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


# Plain ASCII decimal numbers only: Python's int() and float() also take "1_000", full-width digits
# ("１２３") and other scripts' digits, which no spreadsheet writes on purpose.
_INT_TEXT = re.compile(r"[+-]?[0-9]+")
_DECIMAL_TEXT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
# int() refuses longer digit strings (CPython's limit on int/str conversion is 4300 digits).
_MAX_DIGITS = 4300


def _clip(value: Any, limit: int = 40) -> str:
    """A value as it appears in an error line: repr, cut to ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _number(value: Any) -> int | float | None:
    """A JSON number as it is; text only when it is a plain ASCII decimal: integer text -> exact int,
    other decimal text -> float. None when it is not a number (``1_000``, ``1,5``, ``１２``, ``NaN``)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    text = str(value).strip()
    if len(text) > _MAX_DIGITS:
        return None
    if _INT_TEXT.fullmatch(text):
        return int(text)
    if _DECIMAL_TEXT.fullmatch(text):
        return float(text)  # 1e400 becomes inf, refused as not finite by the caller
    return None


def _not_a_number(where: str, column: str, value: Any) -> EvidenceError:
    text = str(value)
    if text.strip().lower().lstrip("+-") in ("inf", "infinity", "nan"):
        return EvidenceError(f"{where} column '{column}': must be finite, got {_clip(value)}")
    hint = ""
    if any(c in text for c in "_,") or any(c.isdigit() and not c.isascii() for c in text):
        hint = " (write plain ASCII digits without separators, like 1024 or 1.5e-3)"
    return EvidenceError(f"{where} column '{column}': not a number: {_clip(value)}{hint}")


def _whole(where: str, column: str, value: Any) -> int | None:
    """A whole number, exactly: integer text or an integral JSON/decimal value. None when not whole."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float):
        return int(value) if math.isfinite(value) and value.is_integer() else None
    text = str(value).strip()
    if _number(text) is None:
        raise _not_a_number(where, column, value)
    if _INT_TEXT.fullmatch(text):
        return int(text)
    exact = decimal.Decimal(text)  # "1024.0" and "1.5e3" are whole; decimal keeps every digit
    if exact.adjusted() > 40:
        raise EvidenceError(f"{where} column '{column}': out of range: {_clip(value)}")
    return int(exact) if exact == exact.to_integral_value() else None


def _cell(where: str, column: str, kind: str, value: Any, row: dict[str, Any], contract: Contract) -> Any:
    blank = value is None or (isinstance(value, str) and not value.strip())
    if blank:
        if column in contract.nullable_on_oom and str(row.get("status", "")).strip().lower() == "oom":
            return None
        raise EvidenceError(f"{where} column '{column}': empty value")
    if kind in ("text", "status"):
        if isinstance(value, (dict, list)):
            raise EvidenceError(f"{where} column '{column}': must be text, got {type(value).__name__}")
        text = str(value).strip()
        if kind == "status" and text.lower() not in STATUSES:
            raise EvidenceError(f"{where} column '{column}': must be ok or oom, got {_clip(text)}")
        allowed = contract.values.get(column)
        if allowed is not None and text not in allowed:
            raise EvidenceError(
                f"{where} column '{column}': must be one of {', '.join(allowed)} (what the derivations read), "
                f"got {_clip(text)}"
            )
        return text.lower() if kind == "status" else text
    if kind in ("count", "bytes"):
        whole = _whole(where, column, value)
        if whole is None or whole < (1 if kind == "count" else 0):
            bound = "a positive integer" if kind == "count" else "a non-negative integer"
            raise EvidenceError(f"{where} column '{column}': must be {bound}, got {_clip(value)}")
        return whole
    num = _number(value)
    if num is None:
        raise _not_a_number(where, column, value)
    try:
        num = float(num)
    except OverflowError:  # an integer too large for a double
        num = math.inf
    if not math.isfinite(num):
        raise EvidenceError(f"{where} column '{column}': must be finite, got {_clip(value)}")
    if kind in ("time", "rate") and num <= 0:
        raise EvidenceError(f"{where} column '{column}': must be positive, got {_clip(value)}")
    return num


def _extra(where: str, column: str, value: Any) -> Any:
    """Extra columns are kept exactly: text stays the text it was, unless it reads back as the same number.

    ``"12"`` becomes 12 and ``"0.5"`` 0.5, but ``"007"``, ``"1.50"``, ``"1e3"`` and a 21-digit run id
    written with a leading zero keep their text. An extra column named like a time (``*_s``, ``*_ms``,
    ``*_us``) must hold a positive finite number or be blank (null), as every evidence time must.
    """
    if isinstance(value, (dict, list)):  # samples are flat objects (DESIGN §2): no nested values
        raise EvidenceError(f"{where} column '{column}': must be a number, text or null, got {type(value).__name__}")
    if is_time_field(column):
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        num = _number(value)
        if num is None:
            raise _not_a_number(where, column, value)
        try:
            num = float(num)
        except OverflowError:
            num = math.inf
        if not math.isfinite(num) or num <= 0:
            raise EvidenceError(f"{where} column '{column}': a time must be positive and finite, got {_clip(value)}")
        return num
    if isinstance(value, str):
        num = _number(value)
        if isinstance(num, int) and str(num) == value:
            return num
        if isinstance(num, float) and math.isfinite(num) and repr(num) == value:
            return num
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
    for i, r in enumerate(doc):
        blank = [k for k in r if not k.strip()]
        if blank:
            raise EvidenceError(f"{path} row {i + 1}: a column has no name ({_clip(blank[0])})")
        columns += [k for k in r if k not in columns]
    return columns, doc, 1


def read_rows(probe: str, path: Path) -> list[dict[str, Any]]:
    """Read and check one file against ``probe``'s column contract; return typed rows."""
    if probe not in importable():
        raise EvidenceError(f"--probe {probe!r} cannot be imported; choose one of {', '.join(importable())}")
    try:
        raw = read_regular(path)  # a FIFO, a device or a file over the size cap is refused, not read
    except StoreError as exc:
        raise EvidenceError(str(exc)) from None
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
    missing = [c for c in contract.required if c not in columns]
    if missing:
        needs = ", ".join(contract.required)
        raise EvidenceError(f"{path}: missing required column(s) {', '.join(missing)} for {probe} (needs {needs})")
    if not rows:
        raise EvidenceError(f"{path}: no data rows")
    kinds = contract.kinds
    out = []
    for i, row in enumerate(rows):
        where = f"{path} row {i + first}"
        absent = [c for c in contract.required if c not in row]
        if absent:
            raise EvidenceError(f"{where}: missing required column '{absent[0]}' for {probe}")
        typed: dict[str, Any] = {}
        for column, value in row.items():
            if column in kinds:
                if column in contract.optional and (value is None or str(value).strip() == ""):
                    typed[column] = None
                    continue
                typed[column] = _cell(where, column, kinds[column], value, row, contract)
            else:
                typed[column] = _extra(where, column, value)
        out.append(typed)
    return out


def already_archived(store: Store, evidence: Evidence) -> str | None:
    """The id of an imported document in ``store`` with the same probe, file name, rows and source as ``evidence``
    (the same file imported again), or None. Its creation time differs, so it would be stored under a new id,
    a second copy nobody asked for (issue 29)."""
    for ident in store.ids():
        try:
            doc = store.get(ident)
        except EvidenceError:  # a damaged document is `archive verify`'s to report
            continue
        if (
            doc.get("probe") == evidence.probe
            and doc.get("origin") == evidence.origin
            and doc.get("params", {}).get("imported_from") == evidence.params["imported_from"]
            and doc.get("data") == evidence.data
            and doc.get("machine", {}).get("gpu") == evidence.machine["gpu"]
        ):
            return ident
    return None


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
