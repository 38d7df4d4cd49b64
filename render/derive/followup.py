"""An optimizer-timing follow-up campaign's points (issue 26): the optimizer's share of the step per context and batch.

A follow-up (``campaign plan --optimizer-timing-from``) pairs, in one job per point, an uninstrumented baseline
worker with the ``optimizer`` probe at the same batch and context; each receipt's result names both evidence
documents (``baseline_evidence``, ``instrumented_evidence``) and carries the probe's figures. The rows here are
read from the collected campaign's points and the instrumented documents' params (pure: no files read).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any

import numpy as np

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


# -- 95% intervals of a point's figures (issue 23): the instrumented run's rounds resampled ----------------------

FIGURES = ("optimizer_median_s", "optimizer_share", "instrumentation_overhead")
"""A point's figures that its instrumented run's rounds can redraw; ``tok_s`` is the baseline worker's, whose
windows the archive does not hold."""


def point_intervals(
    samples: list[dict[str, Any]], point: OptimizerPoint, key: str
) -> dict[str, tuple[float, float] | None]:
    """95% intervals of ``FIGURES`` from the instrumented document's ``samples`` (its interleaved rounds: an
    ``instrumented`` row with ``step_s`` and ``optimizer_s``, a ``baseline`` row with ``step_s``), each the
    percentile interval of its statistic over rounds resampled jointly (``render.derive.intervals.draws``, seeded
    by ``key``): one set of indices draws a round's optimizer time with its own step, and its instrumented step
    with the same round's baseline step, so the pairing the probe built stays.

    A figure gets None where the rounds are fewer than ``MIN_SAMPLES`` or their statistic is not the figure the
    receipt reports (relative 1e-9): an interval of other numbers would not be the shown number's."""
    from render.derive import intervals  # numpy loads only where a figure needs it

    rounds: dict[Any, dict[str, dict[str, Any]]] = {}
    for r in samples:
        if isinstance(r, dict) and r.get("arm") in ("instrumented", "baseline") and isinstance(r.get("round"), int):
            rounds.setdefault(r["round"], {})[str(r["arm"])] = r
    paired = [
        (a["instrumented"], a["baseline"])
        for _, a in sorted(rounds.items())
        if _timed(a.get("instrumented"), "optimizer_s") and _timed(a.get("baseline"), "step_s")
    ]
    out: dict[str, tuple[float, float] | None] = dict.fromkeys(FIGURES)
    if len(paired) < intervals.MIN_SAMPLES:
        return out
    columns = {
        "optimizer": [float(i["optimizer_s"]) for i, _ in paired],
        "step": [float(i["step_s"]) for i, _ in paired],
        "baseline": [float(b["step_s"]) for _, b in paired],
    }
    drawn = {name: intervals.draws(("median", tuple(v), key)) for name, v in columns.items()}
    median = {name: statistics.median(v) for name, v in columns.items()}
    figures = {
        "optimizer_median_s": (median["optimizer"], drawn["optimizer"]),
        "optimizer_share": (median["optimizer"] / median["step"], drawn["optimizer"] / drawn["step"]),
        "instrumentation_overhead": (median["step"] / median["baseline"] - 1, drawn["step"] / drawn["baseline"] - 1),
    }
    for name, (value, replicates) in figures.items():
        if math.isclose(value, getattr(point, name), rel_tol=1e-9, abs_tol=1e-15):
            low, high = np.percentile(replicates, [100 * (1 - intervals.LEVEL) / 2, 100 * (1 + intervals.LEVEL) / 2])
            out[name] = (float(low), float(high))
    return out


def _timed(row: dict[str, Any] | None, field: str) -> bool:
    """Whether ``row`` has a positive ``step_s`` and ``field``."""
    return row is not None and all(
        isinstance(row.get(f), (int, float)) and not isinstance(row.get(f), bool) and row[f] > 0
        for f in ("step_s", field)
    )
