"""An optimizer-timing follow-up campaign's points (issue 26): the optimizer's share of the step per context and batch.

A follow-up (``campaign plan --optimizer-timing-from``) pairs, in one job per point, an uninstrumented baseline
worker with the ``optimizer`` probe at the same batch and context; each receipt's result names both evidence
documents (``baseline_evidence``, ``instrumented_evidence``) and carries the probe's figures. The rows here are
read from the collected campaign's points and the instrumented documents' params (pure: no files read).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from measure.errors import ProbebookError

KIND = "optimizer-timing"
"""``data.kind`` of a follow-up's manifest (``campaign-plan``)."""


@dataclass(frozen=True)
class OptimizerPoint:
    """One measured point of the follow-up."""

    preset: str
    context: int
    """Sequence length, tokens."""
    batch: int
    """Sequences per step."""
    optimizer_share: float
    """The timed optimizer update (clip and step) over the instrumented step's median (a fraction)."""
    optimizer_median_s: float
    """Median seconds of the optimizer update."""
    tok_s: float
    """Tokens/s of the instrumented run."""
    instrumentation_overhead: float
    """Instrumented median step over the baseline's, minus one (a fraction)."""
    device_busy: int
    """1 when the instrumented run's idle check found the device busy (other processes, utilisation), else 0."""
    baseline_evidence: str
    instrumented_evidence: str


def optimizer_points(points: list[dict[str, Any]], docs: dict[str, dict[str, Any]]) -> list[OptimizerPoint]:
    """The follow-up's measured points, by preset, context and batch; ``docs``: the instrumented documents by id.

    A point counts when its state is ``ok`` and its last attempt's result names both documents; one whose
    instrumented document is not in ``docs`` is refused, naming the point.
    """
    out = []
    for point in points:
        if point.get("state") != "ok":
            continue
        result = ((point.get("attempts") or [{}])[-1]).get("result") or {}
        ident = result.get("instrumented_evidence")
        if not ident or not result.get("baseline_evidence"):
            raise ProbebookError(f"follow-up point {point.get('point')!r} names no baseline and instrumented evidence")
        if ident not in docs:
            raise ProbebookError(f"follow-up point {point.get('point')!r}: its evidence {ident} is not in the archive")
        p = docs[ident].get("params") or {}
        check = (docs[ident].get("data") or {}).get("device_check") or {}
        out.append(
            OptimizerPoint(
                str(p["preset"]),
                int(p["seq_len"]),
                int(p["batch"]),
                float(result["optimizer_share"]),
                float(result["optimizer_median_s"]),
                float(result["tok_s"]),
                float(result["instrumentation_overhead"]),
                1 if check.get("busy") else 0,
                str(result["baseline_evidence"]),
                str(ident),
            )
        )
    return sorted(out, key=lambda r: (r.preset, r.context, r.batch))


def busy_points(rows: list[OptimizerPoint]) -> int:
    """How many of ``rows`` ran on a device the idle check found busy (a count)."""
    return sum(r.device_busy for r in rows)


def share_range(rows: list[OptimizerPoint]) -> tuple[float, float]:
    """(smallest, largest) optimizer share over ``rows`` (fractions); no rows is refused."""
    if not rows:
        raise ProbebookError("the follow-up has no measured points")
    shares = [r.optimizer_share for r in rows]
    return min(shares), max(shares)
