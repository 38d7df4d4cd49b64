"""Where a campaign's wall time went, from its collected document (``probebook campaign collect``).

The document lists every point's attempts (the runner's receipts: submission and end times, the
job's start and import seconds, the runner's start) and the measured rows (the phases a
batch-sweep point records: device wait, setup, warm-up, timed windows, the observe step, and the
trace parse after the device was given back). All times in seconds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

ROW_PHASES = ("device_wait_s", "setup_s", "warmup_s", "timed_s", "observe_s", "trace_s")
"""Phases a batch-sweep row records, each summed over the measured points."""


@dataclass(frozen=True)
class CampaignTime:
    """A campaign's wall time and where it went (seconds; phase fields are sums over measured points)."""

    wall_s: float | None
    """First submission to the last attempt's end (None before any attempt ended); gaps between runner calls count."""
    device_busy_s: float | None
    """Union of the spans in which a point held the device."""
    points: int
    """Points measured (a row each, ok or oom)."""
    attempts: int
    """Attempts over all points (one per point when nothing failed or was retried)."""
    runs: int | None
    """Runner calls that submitted an attempt (the first run and its resumes); None when receipts predate the field."""
    job_start_s: float
    """Submission to the job's function starting (the executor's and the job's interpreter start)."""
    imports_s: float
    """The job's imports before it asks for the device."""
    phases: dict[str, float]
    """``ROW_PHASES`` summed over the measured rows; a phase no row records (an older probe version) is absent."""
    counts: dict[str, int] | None = None
    """How many points each sum above is over: ``job_start_s``, ``imports_s`` and each phase of ``phases``
    (an out-of-memory point records no warm-up, timed or observe phase, so it is not one of them)."""


def union_s(spans: Sequence[tuple[float, float]]) -> float:
    """Seconds covered by the union of ``(start, end)`` spans."""
    total, last = 0.0, None
    for a, b in sorted(spans):
        if last is None or a > last:
            total += b - a
            last = b
        elif b > last:
            total += b - last
            last = b
    return total


def _recorded(rows: Sequence[dict[str, Any]], key: str) -> bool:
    return any(r.get(key) is not None for r in rows)


def wall_time(points: Sequence[dict[str, Any]], rows: Sequence[dict[str, Any]]) -> CampaignTime:
    """The breakdown of a campaign: ``points`` as the collected document lists them (each with its receipt's
    ``attempts``), ``rows`` its measured samples (each with ``point``)."""
    attempts = [a for p in points for a in p.get("attempts") or []]
    spans = [
        (a["submitted_unix"], a["ended_unix"]) for a in attempts if a.get("submitted_unix") and a.get("ended_unix")
    ]
    started = [a.get("run_started_unix") for a in attempts]
    measured = {r["point"] for r in rows}
    job_start = imports = 0.0
    n_start = n_imports = 0
    for p in points:
        if p["point"] not in measured or not p.get("attempts"):
            continue
        a = p["attempts"][-1]
        result = a.get("result") or {}
        if result.get("job_started_unix") is not None:
            job_start += result["job_started_unix"] - a["submitted_unix"]
            n_start += 1
        if result.get("imports_s") is not None:
            imports += result["imports_s"]
            n_imports += 1
    held = [
        (r["device_acquired_unix"], r["device_released_unix"])
        for r in rows
        if r.get("device_acquired_unix") is not None and r.get("device_released_unix") is not None
    ]
    return CampaignTime(
        wall_s=max(b for _, b in spans) - min(a for a, _ in spans) if spans else None,
        device_busy_s=union_s(held) if held else None,
        points=len(measured),
        attempts=len(attempts),
        runs=len(set(started)) if started and None not in started else None,
        job_start_s=job_start,
        imports_s=imports,
        phases={k: sum(r[k] for r in rows if r.get(k) is not None) for k in ROW_PHASES if _recorded(rows, k)},
        counts={
            "job_start_s": n_start,
            "imports_s": n_imports,
            **{k: sum(1 for r in rows if r.get(k) is not None) for k in ROW_PHASES if _recorded(rows, k)},
        },
    )


def per_point(t: CampaignTime) -> dict[str, float | None]:
    """Mean seconds of the job start, the imports and each row phase, each over the points that record it.

    A phase an out-of-memory point never reached (warm-up, timed windows, observe) is averaged over the
    points that ran it, not over every point with the missing ones as zero, like every other row of the
    same table (issue 23, item 10). None for a phase no point recorded. ``counts`` absent (a breakdown made
    by hand): every sum is over all ``points``."""
    sums: dict[str, float | None] = {"job_start_s": t.job_start_s, "imports_s": t.imports_s}
    sums.update({k: t.phases.get(k) for k in ROW_PHASES})
    counts = t.counts if t.counts is not None else dict.fromkeys(sums, t.points)
    return {k: (v / counts[k] if counts.get(k) and v is not None else None) for k, v in sums.items()}
