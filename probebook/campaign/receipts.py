"""One receipt per point: its state, every attempt (job id, times, outcome) and its evidence id.

A receipt is the runner's own record, rewritten atomically (temp file, fsync, rename) at each
change, so a runner killed at any moment leaves each receipt as it was before or after a change.
Only the runner writes receipts; ``audit`` checks them against the evidence they name.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from measure.errors import ProbebookError
from measure.evidence import contracts
from measure.evidence.reading import read_given

IN_FLIGHT = ("submitting", "submitted")
"""A job may exist for the latest attempt: resume asks the scheduler before anything is submitted."""
MEASURED = contracts.STATUSES
"""The point's job finished and its evidence holds its row (a batch-sweep row's status: ok or oom)."""
FAILED = ("failed", "timeout", "lost")
"""No usable result: the curve blocks here until ``--retry-failed``."""
STATES = IN_FLIGHT + MEASURED + FAILED


def path(folder: Path, key: str) -> Path:
    return Path(folder) / "receipts" / f"{key}.json"


def write(folder: Path, receipt: dict[str, Any]) -> None:
    """Replace a point's receipt atomically."""
    final = path(folder, receipt["point"])
    tmp = final.with_name(f".tmp-{final.name}")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(receipt, fh, sort_keys=True, indent=1, allow_nan=False)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, final)
    fd = os.open(final.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


RECEIPT_BYTES = 1 << 20
"""The largest receipt read (one is a few hundred bytes)."""


def load_all(folder: Path) -> dict[str, dict[str, Any]]:
    """Every receipt of a campaign folder, by point key."""
    out = {}
    for file in sorted((Path(folder) / "receipts").glob("*.json")):
        if file.name.startswith(".tmp-"):
            continue
        try:
            receipt = json.loads(read_given(file, RECEIPT_BYTES))  # a FIFO or device there is refused, not read
        except (ProbebookError, json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ProbebookError(f"{file}: not a readable receipt ({exc})") from None
        if not isinstance(receipt, dict) or receipt.get("point") != file.stem or receipt.get("state") not in STATES:
            raise ProbebookError(f"{file}: not a receipt of point {file.stem} with a known state")
        out[file.stem] = receipt
    return out


def new(point: dict[str, Any]) -> dict[str, Any]:
    """A receipt for a point not yet submitted."""
    return {
        "point": point["key"],
        "curve": point["curve"],
        "batch": point["batch"],
        "state": "submitting",
        "attempts": [],
        "evidence": None,
        "result": None,
    }


def curve_state(keys: list[str], receipts: dict[str, dict[str, Any]]) -> tuple[str, str | None]:
    """Where a curve stands and its point in question.

    ``ready`` (that point is next), ``running`` (it is in flight), ``blocked`` (it failed),
    ``oom`` (it ran out of memory: the curve is done at a confirmed boundary), ``cap`` (every
    planned point fit: done, no OOM).
    """
    for key in keys:
        r = receipts.get(key)
        if r is None or r.get("retry"):
            return "ready", key
        if r["state"] in IN_FLIGHT:
            return "running", key
        if r["state"] in FAILED:
            return "blocked", key
        if r["state"] == "oom":
            return "oom", key
    return "cap", None
