"""The evidence envelope: one JSON document per probe run or import (ARCHITECTURE.md §Evidence).

A document's bytes are canonical JSON (sorted keys, ``,``/``:`` separators, UTF-8, no
NaN/Infinity) and its name is the SHA-256 of those bytes, written ``sha256:<64 hex>``.
Tabular measurements live in ``data["samples"]``, a list of flat objects (one per sample),
never positional arrays. Older schema versions are migrated by the functions in
``MIGRATIONS`` beside the loader; the loader itself refuses them and says what to run.

The fields (``schema/evidence-1.schema.json`` holds the same): ``schema`` (``probebook.evidence/1``);
``probe`` and ``probe_version`` (the instrument and the version of its measurement design); ``created_at``
(UTC ISO-8601); ``machine`` (the fingerprint: GPU, driver, CUDA, torch, clocks, power limit, MIG, ECC,
PCIe, CPU; a CPU-only machine says so); ``code`` (probebook version, git commit and ``dirty``, both
``null`` without a commit, the SHA-256 of the probe's source and of the ``measure`` package,
``measure_source_sha256``); ``params`` (every input that shaped the run); ``data`` (the raw
measurements: ``samples``, windows, failures; aggregates may be added, never replace samples);
``status`` (``complete``; ``unstable``: every point measured, but some point's windows stayed above the CV
threshold after the extra windows, its rows flagged ``unstable``; ``partial``: stopped early, what it has is
valid; or ``failed`` with ``error``); ``origin`` (``measured``, or ``imported`` with a ``source`` text). The
id abbreviates to a unique prefix of at least 12 hex. A probe whose ``data`` layout changes bumps its
``probe_version``, and ``measure.evidence.reading.for_reading`` presents older versions in the current layout when
render loads them
(observations older versions kept in ``params`` move to ``data["observed"]``; ``ddp``'s positional bucket arrays get
their field names); the archived bytes never change.
"""

from __future__ import annotations

import datetime as _dt
import functools
import hashlib
import itertools
import json
import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from measure.errors import EvidenceError

SCHEMA_PREFIX = "probebook.evidence/"
SCHEMA_VERSION = 1
SCHEMA = f"{SCHEMA_PREFIX}{SCHEMA_VERSION}"
STATUSES = ("complete", "unstable", "partial", "failed")
MEASURED = ("complete", "unstable")
"""The statuses of a run that measured every point it planned (``unstable``: some of them noisily)."""
ORIGINS = ("measured", "imported")

_ISO_UTC = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|\+00:00)$")
_TIME_FIELD = re.compile(r"(^|_)(s|ms|us)$")
_PROBE_NAME = re.compile(r"^[a-z][a-z0-9-]{0,63}$")
_VERSION = re.compile(r"0|[1-9][0-9]*")  # ASCII digits, no leading zeros: one spelling per version
_SCALAR = (str, int, float, bool, type(None))
_SCALAR_TYPES = frozenset(_SCALAR)  # exact types, for the fast check of rows a JSON parser made
_NUMBER_TYPES = frozenset((int, float))
_NOT_NONE = functools.partial(operator.is_not, None)
# One nesting limit for every document probebook reads (evidence, imports, ledgers, front matter),
# checked where each is loaded: the deepest archived evidence nests 5 levels, and a limit far below
# Python's recursion limit keeps every later stage (canonical JSON, render, diff) from overflowing.
MAX_DEPTH = 32


def utc_now() -> str:
    """The current time as UTC ISO-8601 with a ``Z`` suffix, to the second."""
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def canonical_bytes(doc: dict[str, Any]) -> bytes:
    """Canonical JSON bytes: sorted keys, compact separators, UTF-8, NaN refused."""
    try:
        text = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except ValueError as exc:  # NaN/Infinity: a missing value must be written as null
        raise EvidenceError(f"evidence holds a non-finite number ({exc}); write a missing value as null") from None
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate (e.g. from a "\ud800" escape) has no UTF-8 form
        raise EvidenceError(f"evidence holds text that is not valid Unicode (character {exc.start})") from None


def digest(raw: bytes) -> str:
    """The evidence id of some bytes: ``sha256:<64 hex>``."""
    return "sha256:" + hashlib.sha256(raw).hexdigest()


@dataclass(frozen=True)
class Evidence:
    """One probe run (or import), as written to the archive."""

    probe: str
    """Which instrument produced it, e.g. ``step-scaling``."""
    probe_version: int
    """Version of that instrument's measurement design."""
    params: dict[str, Any]
    """Every input that shaped the run."""
    data: dict[str, Any]
    """Raw measurements; tabular ones as a list of objects under ``samples``."""
    machine: dict[str, Any] = field(default_factory=dict)
    """Fingerprint of the machine it ran on (``measure.machine.fingerprint``)."""
    code: dict[str, Any] = field(default_factory=dict)
    """Fingerprint of the code that ran (``measure.machine.code_fingerprint``)."""
    status: str = "complete"
    """``complete``, ``partial`` (stopped early, what it has is valid) or ``failed``."""
    error: str | None = None
    """Why a ``failed`` or ``partial`` run stopped."""
    origin: dict[str, Any] = field(default_factory=lambda: {"kind": "measured"})
    """``{"kind": "measured"}`` or ``{"kind": "imported", "source": text}``."""
    created_at: str = field(default_factory=utc_now)
    """UTC ISO-8601 time the document was made."""
    notes: str | None = None
    """Free text from the person who ran it."""

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "schema": SCHEMA,
            "probe": self.probe,
            "probe_version": self.probe_version,
            "created_at": self.created_at,
            "machine": self.machine,
            "code": self.code,
            "params": self.params,
            "data": self.data,
            "status": self.status,
            "origin": self.origin,
        }
        if self.error is not None:
            doc["error"] = self.error
        if self.notes is not None:
            doc["notes"] = self.notes
        return doc

    def to_bytes(self) -> bytes:
        doc = self.to_dict()
        validate(doc, "evidence")
        return canonical_bytes(doc)

    @property
    def id(self) -> str:
        return digest(self.to_bytes())

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> Evidence:
        validate(doc, "evidence")
        return cls(
            probe=doc["probe"],
            probe_version=doc["probe_version"],
            params=doc["params"],
            data=doc["data"],
            machine=doc["machine"],
            code=doc["code"],
            status=doc["status"],
            error=doc.get("error"),
            origin=doc["origin"],
            created_at=doc["created_at"],
            notes=doc.get("notes"),
        )


def is_time_field(name: str) -> bool:
    """Whether a sample field holds a time (its name ends in ``_s``, ``_ms`` or ``_us``)."""
    return bool(_TIME_FIELD.search(name))


def _json_kind(kind: type) -> str:
    """A Python type named the way JSON users know it."""
    names = {
        dict: "an object",
        list: "an array",
        str: "text",
        int: "an integer",
        float: "a number",
        bool: "true/false",
        type(None): "null",
    }
    return names.get(kind, kind.__name__)


def _fail(where: str, what: str) -> EvidenceError:
    return EvidenceError(f"{where}: {what}")


# ``is_time_field`` remembered per name: the same few column names recur in every document (bounded, as an
# archive from elsewhere may hold any number of names)
_time_field_cached = functools.lru_cache(maxsize=4096)(is_time_field)


def _flat_good_rows(samples: list[Any]) -> bool:
    """True when every row is an object of plain scalars whose time fields are positive finite numbers or null.

    The fast form of ``_check_times`` for rows a JSON parser made: exact types, and every loop in C
    (``map``, ``filter``, ``set``), one pass over all values and one over the time values. False sends
    the rows to ``_check_times``, which accepts what this cannot prove (subclasses of the scalar types)
    and names the first problem.
    """
    try:
        values = itertools.chain.from_iterable(map(dict.values, samples))
        if not _SCALAR_TYPES.issuperset(map(type, values)):
            return False
        timed = list(filter(_time_field_cached, set().union(*samples)))
    except TypeError:  # a row that is not an object
        return False
    if not timed:
        return True
    if len(timed) == 1:  # a column read down the rows
        found: Any = map(dict.get, samples, itertools.repeat(timed[0]))
    elif len(samples) == 1:  # one row: its time fields
        found = map(dict.get, itertools.repeat(samples[0]), timed)
    else:
        found = itertools.chain.from_iterable(map(dict.get, samples, itertools.repeat(key)) for key in timed)
    times: list[Any] = list(filter(_NOT_NONE, found))
    return not times or (
        _NUMBER_TYPES.issuperset(map(type, times)) and all(map(math.isfinite, times)) and min(times) > 0
    )


def _check_times(where: str, samples: Any) -> None:
    """Samples are flat objects; time fields (names ending ``_s``/``_ms``/``_us``) positive finite or null."""
    if not isinstance(samples, list):
        raise _fail(where, "field 'data.samples' must be a list of objects")
    for i, row in enumerate(samples):
        if not isinstance(row, dict):
            raise _fail(where, f"data.samples[{i}] must be an object (positional arrays are not accepted)")
        for key, value in row.items():
            if not isinstance(value, _SCALAR):
                raise _fail(
                    where,
                    f"data.samples[{i}].{key} must be a number, text, true/false or null "
                    f"(samples are flat objects), got {type(value).__name__}",
                )
            if value is None or not is_time_field(key):
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise _fail(where, f"data.samples[{i}].{key} is not a number: {value!r}")
            if not math.isfinite(value) or value <= 0:
                raise _fail(where, f"data.samples[{i}].{key} must be a positive time, got {value!r}")


_REQUIRED: dict[str, type] = {
    "probe": str,
    "probe_version": int,
    "created_at": str,
    "machine": dict,
    "code": dict,
    "params": dict,
    "data": dict,
    "status": str,
    "origin": dict,
}
"""The envelope's required fields and their JSON kinds."""
_ALLOWED = frozenset(_REQUIRED) | {"schema", "error", "notes"}


def validate(doc: Any, where: str, depth_checked: bool = False, containers: int | None = None) -> dict[str, Any]:
    """Check a current-schema document's envelope and return it, typed; raise ``EvidenceError`` naming the field.

    ``depth_checked``: the caller already measured the nesting (``loads`` does), so it is not walked twice.
    ``containers``: at most this many lists and objects are in ``doc`` (``parse_archived`` counts the ``{``
    and ``[`` of the JSON text it was read from); no chain of nested ones is longer than that count, so a
    document with few of them needs no walk to prove it shallow.
    """
    if not isinstance(doc, dict):
        raise _fail(where, "evidence must be a JSON object")
    data = doc.get("data")
    samples = data.get("samples") if isinstance(data, dict) else None
    # Rows that are flat with good times (nearly all) need neither the walk below nor _check_times.
    flat = isinstance(samples, list) and _flat_good_rows(samples)
    if not depth_checked:
        if flat:
            assert isinstance(data, dict) and isinstance(samples, list)
            # The rows sit at depth 4 and nest no further; a deeper chain runs through the other containers
            # only, of which there are at most ``containers`` less one per row.
            if containers is None or containers - len(samples) > MAX_DEPTH:
                rest = {k: v for k, v in data.items() if k != "samples"}
                check_depth({**doc, "data": rest}, where)
        elif containers is None or containers > MAX_DEPTH:
            check_depth(doc, where)
    version = schema_version(doc, where)
    if version != SCHEMA_VERSION:
        raise _version_error(version, where)
    for name, kind in _REQUIRED.items():
        if name not in doc:
            raise _fail(where, f"missing field '{name}'")
        value = doc[name]
        if isinstance(value, bool) or not isinstance(value, kind):
            raise _fail(where, f"field '{name}' must be {_json_kind(kind)}, got {_json_kind(type(value))}")
    if not _ALLOWED.issuperset(doc):
        extra = sorted(set(doc) - _ALLOWED)
        raise _fail(where, f"unknown field '{extra[0]}' (the envelope holds {', '.join(sorted(_ALLOWED))})")
    if not _PROBE_NAME.fullmatch(doc["probe"]):
        raise _fail(where, f"field 'probe' must be a lower-case name like 'step-scaling', got {doc['probe']!r}")
    if doc["probe_version"] < 1:
        raise _fail(where, "field 'probe_version' must be >= 1")
    if not _ISO_UTC.fullmatch(doc["created_at"]):
        raise _fail(
            where, f"field 'created_at' must be UTC ISO-8601 like 2026-11-29T08:00:00Z, got {doc['created_at']!r}"
        )
    if doc["status"] not in STATUSES:
        raise _fail(where, f"field 'status' must be one of {', '.join(STATUSES)}, got {doc['status']!r}")
    if doc["status"] == "failed" and not isinstance(doc.get("error"), str):
        raise _fail(where, "a failed run needs a text field 'error' saying why")
    for name in ("error", "notes"):
        if name in doc and not isinstance(doc[name], (str, type(None))):
            raise _fail(where, f"field '{name}' must be text")
    origin = doc["origin"]
    if origin.get("kind") not in ORIGINS:
        raise _fail(where, f"field 'origin.kind' must be one of {', '.join(ORIGINS)}")
    if origin["kind"] == "imported" and "source" not in origin:
        raise _fail(where, "imported evidence needs 'origin.source' saying where the numbers came from")
    if "source" in origin and not (isinstance(origin["source"], str) and origin["source"].strip()):
        raise _fail(where, "field 'origin.source' must be non-blank text saying where the numbers came from")
    if "samples" in doc["data"] and not flat:
        _check_times(where, doc["data"]["samples"])
    return doc


def schema_version(doc: dict[str, Any], where: str) -> int:
    """The integer version in a document's ``schema`` field."""
    schema = doc.get("schema")
    if not isinstance(schema, str) or not schema.startswith(SCHEMA_PREFIX):
        raise _fail(where, f"field 'schema' must be '{SCHEMA}', got {schema!r}")
    tail = schema[len(SCHEMA_PREFIX) :]
    if not _VERSION.fullmatch(tail):
        raise _fail(where, f"field 'schema' must end in an integer version like '{SCHEMA}', got {schema!r}")
    return int(tail)


def _version_error(version: int, where: str) -> EvidenceError:
    if version < SCHEMA_VERSION:
        return _fail(
            where,
            f"evidence schema {version} is older than {SCHEMA_VERSION}; "
            f"run `probebook archive migrate {where}` to archive an upgraded copy",
        )
    return _fail(
        where, f"evidence schema {version} is newer than this probebook reads ({SCHEMA_VERSION}); upgrade probebook"
    )


def nesting_depth(value: Any, limit: int = MAX_DEPTH) -> int:
    """How deeply lists and objects nest in ``value`` (a scalar is 0), counting no further than ``limit + 1``.

    Iterative, so a document nested 100,000 deep is measured without recursion.
    """
    if not isinstance(value, (dict, list, tuple)):
        return 0
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > deepest:
            deepest = depth
            if deepest > limit:
                return deepest
        for child in item.values() if isinstance(item, dict) else item:
            if isinstance(child, (dict, list, tuple)):
                stack.append((child, depth + 1))
    return deepest


def check_depth(value: Any, where: str, limit: int = MAX_DEPTH) -> None:
    """Refuse a document that nests lists and objects more than ``limit`` deep (one line naming ``where``)."""
    if nesting_depth(value, limit) > limit:
        raise EvidenceError(f"{where}: nested more than {limit} levels deep; probebook reads at most {limit}")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object whose keys are all different: JSON parsers disagree on which of two equal keys wins."""
    doc = dict(pairs)
    if len(doc) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"key {key[:60]!r} appears twice in one object; each key may appear once")
            seen.add(key)
    return doc


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON; write a missing value as null")


def _finite_float(text: str) -> float:
    """JSON numbers that overflow a double (``1e400``) would load as infinity: refuse them too."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text} is out of range (not finite); write a missing value as null")
    return value


def loads(text: str) -> Any:
    """Strict JSON: NaN, Infinity, overflowing numbers, a key given twice in one object and nesting deeper
    than ``MAX_DEPTH`` raise ``ValueError``. Integers stay exact Python integers."""
    try:
        doc = json.loads(
            text, parse_constant=_reject_constant, parse_float=_finite_float, object_pairs_hook=_unique_keys
        )
    except RecursionError:
        raise ValueError(
            f"JSON is nested more than {MAX_DEPTH} levels deep; probebook reads at most {MAX_DEPTH}"
        ) from None
    if nesting_depth(doc) > MAX_DEPTH:
        raise ValueError(f"JSON is nested more than {MAX_DEPTH} levels deep; probebook reads at most {MAX_DEPTH}")
    if _SURROGATE_ESCAPE.search(text):  # UTF-8 text holds no surrogates: only an escape can make a lone one
        _refuse_lone_surrogates(doc)
    return doc


# A \uD800-\uDFFF escape. A valid pair is joined into one character by the reader; one left alone has no UTF-8
# form, so the document could be read but never written, archived or published.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _refuse_lone_surrogates(value: Any) -> None:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise ValueError(f"text {item[:40]!r} holds a lone surrogate escape, which has no UTF-8 form") from None


def parse(raw: bytes, where: str) -> dict[str, Any]:
    """Bytes -> validated current-schema document. Every failure is one ``EvidenceError`` line."""
    if not raw.strip():
        raise _fail(where, "file is empty")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _fail(where, f"not UTF-8 text (byte {exc.start})") from None
    try:
        doc = loads(text)
    except json.JSONDecodeError as exc:
        raise _fail(where, f"malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except ValueError as exc:
        raise _fail(where, str(exc)) from None
    return validate(doc, where, depth_checked=True)  # loads measured the nesting


# --- migrations: version N -> N+1, applied in order by ``migrate`` -------------------


def _v0_to_v1(doc: dict[str, Any]) -> dict[str, Any]:
    """Schema 0 (pre-release) kept rows in ``samples`` at the top level and had no origin or code."""
    out = {k: v for k, v in doc.items() if k not in ("samples", "schema")}
    out["schema"] = f"{SCHEMA_PREFIX}1"
    data = doc.get("data", {})
    if not isinstance(data, dict):
        raise EvidenceError(f"schema 0 field 'data' must be an object, got {type(data).__name__}")
    out["data"] = {"samples": doc.get("samples", []), **data}
    out.setdefault("code", {})
    out.setdefault("machine", {})
    out.setdefault("params", {})
    out.setdefault("probe_version", 1)
    out.setdefault("status", "complete")
    out.setdefault("origin", {"kind": "measured"})
    return out


MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {0: _v0_to_v1}


def migrate(raw: bytes, where: str) -> dict[str, Any]:
    """Bytes of any known schema version -> a validated current-schema document."""
    if not raw.strip():
        raise _fail(where, "cannot migrate: file is empty")
    try:
        doc = loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise _fail(where, f"cannot migrate: not UTF-8 text (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise _fail(
            where, f"cannot migrate: malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    except ValueError as exc:
        raise _fail(where, f"cannot migrate: {exc}") from None
    if not isinstance(doc, dict):
        raise _fail(where, "evidence must be a JSON object")
    version = schema_version(doc, where)
    if version > SCHEMA_VERSION:
        raise _version_error(version, where)
    while version < SCHEMA_VERSION:
        if version not in MIGRATIONS:
            raise _fail(where, f"no migration from evidence schema {version}")
        try:
            doc = MIGRATIONS[version](doc)
        except EvidenceError as exc:
            raise _fail(where, str(exc)) from None
        version += 1
    return validate(doc, where)
