"""Column contracts: the one table of what each probe's ``data.samples`` rows hold (ARCHITECTURE.md §Evidence).

A contract names a probe's required columns and its optional ones, each with a kind, and the order
its columns are shown in on an evidence page. The importer checks (and types) imported rows against
it; render checks stored rows against it before deriving from them, and orders evidence-page columns
by it. Kinds:

* ``time``: positive finite seconds; ``rate``: positive finite (tokens/s, GB/s ...)
* ``count``: positive integer; ``bytes``: non-negative integer
* ``text``: non-empty string (a column in ``values`` only one of those); ``status``: ``ok`` or ``oom``

A batch-sweep row that ran out of memory has no throughput or peak: ``tok_s`` and ``peak_bytes`` may
be null on an ``oom`` row, and an ``ok`` row needs ``tok_s`` (``status_problem``, the rule's one home).
Nothing here imports torch or render: render may import this module (ARCHITECTURE.md §Invariants).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

STATUSES = ("ok", "oom")
"""A batch-sweep point either ran (``ok``) or ran out of memory (``oom``)."""
STEP_MODES = ("fixed_batch", "fixed_tokens")
"""A step-scaling row's ``mode``: the batch held fixed while S grows, or the tokens per step. The step-scaling probe
measures these and the fit reads them (render.derive.fit), so an import with any other mode would be archived for
good and then refused by every derivation (issue 29): the importer refuses it first."""


@dataclass(frozen=True)
class Contract:
    """The columns of one probe's sample rows."""

    required: dict[str, str]
    """Column -> kind; every row has each (an import without one is refused)."""
    optional: dict[str, str] = field(default_factory=dict)
    """Column -> kind; a row may leave each out or null."""
    shown: tuple[str, ...] = ()
    """Columns first on the evidence page, in this order, besides the required and optional ones."""
    importable: bool = True
    """Whether ``probebook archive import --probe`` accepts rows of this probe."""
    nullable_on_oom: frozenset[str] = frozenset()
    """Required columns that are null on a row whose ``status`` is ``oom``."""
    values: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Text column -> the only values the derivations accept in it."""

    @property
    def kinds(self) -> dict[str, str]:
        return {**self.required, **self.optional}

    @property
    def order(self) -> tuple[str, ...]:
        """The evidence-page column order: ``shown``, then required, then optional columns."""
        return tuple(dict.fromkeys((*self.shown, *self.required, *self.optional)))


CONTRACTS: dict[str, Contract] = {
    "step-scaling": Contract(
        required={"tokens": "count", "step_s": "time"},
        optional={"batch": "count", "mode": "text"},
        shown=("mode", "batch", "tokens", "window", "step_s"),
        values={"mode": STEP_MODES},
    ),
    "loss-memory": Contract(
        required={"arm": "text", "microbatch": "count", "tokens_per_step": "count", "peak_bytes": "bytes"},
        # device_bytes: the card's total memory, so render can tell a spill (a peak above it, ARCHITECTURE.md §Lessons)
        optional={"tok_s": "rate", "vocab": "count", "device_bytes": "count"},
        shown=("arm", "microbatch", "tokens_per_step", "vocab", "peak_bytes", "tok_s"),
    ),
    "batch-sweep": Contract(
        required={
            "model": "text",
            "params": "count",
            "context": "count",
            "batch": "count",
            "tok_s": "rate",
            "peak_bytes": "bytes",
            "status": "status",
        },
        optional={"device_bytes": "count"},
        shown=("model", "params", "context", "batch", "status", "tok_s", "peak_bytes"),
        nullable_on_oom=frozenset({"tok_s", "peak_bytes"}),
    ),
    "gemm": Contract(required={}, shown=("shape", "m", "n", "k", "window", "time_s", "tflop_s"), importable=False),
    "kernels": Contract(required={}, shown=("kernel", "category", "calls", "device_time_s"), importable=False),
    # one row per timed phase; a steady row's tok_s is training only, an interval row's includes eval + checkpoint
    # (its label says which), so the two are never one column of like values read as comparable
    "eval-boundary": Contract(
        required={"phase": "text", "label": "text", "seconds": "time"},
        optional={"tokens": "count", "tok_s": "rate", "bytes": "bytes", "gb_per_s": "rate", "steps": "count"},
        shown=("phase", "label", "window", "repeat", "seconds", "tokens", "tok_s", "bytes", "gb_per_s"),
        importable=False,
    ),
}


def importable() -> list[str]:
    """The probes ``probebook archive import`` accepts."""
    return [probe for probe, contract in CONTRACTS.items() if contract.importable]


def column_order(probe: str) -> tuple[str, ...]:
    """Columns shown first on a probe's evidence page, in order (none for a probe without a contract)."""
    contract = CONTRACTS.get(probe)
    return contract.order if contract is not None else ()


def status_problem(row: dict[str, Any]) -> str | None:
    """Why a row's ``status`` breaks the rule (``ok`` or ``oom``; an ``ok`` row has ``tok_s``), or None."""
    status = row.get("status")
    if status not in STATUSES:
        return f"status must be ok or oom, got {status!r}"
    if status == "ok" and row.get("tok_s") is None:
        return "an ok row needs tok_s"
    return None


def value_problem(kind: str, value: Any) -> str | None:
    """Why a stored (already typed) value is not of ``kind``, or None."""
    if kind in ("text", "status"):
        return None if isinstance(value, str) and value.strip() else f"must be non-empty text, got {value!r}"
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return f"must be a finite number, got {value!r}"
    if kind in ("time", "rate") and value <= 0:
        return f"must be positive, got {value!r}"
    if kind in ("count", "bytes") and (value != int(value) or value < (1 if kind == "count" else 0)):
        return f"must be {'a positive' if kind == 'count' else 'a non-negative'} integer, got {value!r}"
    return None


def row_problem(probe: str, row: Any) -> str | None:
    """Why a stored sample row breaks its probe's contract (``column: why``), or None.

    Required columns must be present and of their kind (null only where ``nullable_on_oom`` allows it on
    an ``oom`` row); optional ones may be absent or null; other columns are not checked.
    """
    if not isinstance(row, dict):
        return "is not an object"
    contract = CONTRACTS[probe]
    oom = row.get("status") == "oom"
    for column, kind in contract.kinds.items():
        value = row.get(column)
        if value is None:
            if column in contract.required and not (oom and column in contract.nullable_on_oom):
                return f"{column}: missing"
            continue
        why = value_problem(kind, value)
        if why is not None:
            return f"{column}: {why}"
    if "status" in contract.required:
        why = status_problem(row)
        if why is not None:
            return f"status: {why}"
    return None


def tokens_per_second(tokens_per_step: float, step_s: float) -> float:
    """The ``tok_s`` column: throughput in tokens/s of a step that processes ``tokens_per_step`` tokens in
    ``step_s`` seconds (the probes that store it and render's tables that recompute it read this one rule)."""
    return tokens_per_step / step_s
