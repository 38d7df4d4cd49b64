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

from measure.constants import OVERHEAD_LIMIT, overhead_verdict
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
        if result.get("instrumentation_overhead") is None:  # captured mode: paired replay, no hooks to cost
            raise ProbebookError(
                f"follow-up point {point.get('point')!r} ran the captured update (--optimizer-mode captured): it has "
                "no instrumentation overhead, and these tables read eager follow-ups; read its share from its evidence"
            )
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
    return round_intervals(samples, {name: getattr(point, name) for name in FIGURES}, key)


def round_intervals(
    samples: list[dict[str, Any]], reported: dict[str, float], key: str
) -> dict[str, tuple[float, float] | None]:
    """``point_intervals`` for figures as reported anywhere (a receipt, an ``optimizer`` run's ``data.summary``):
    ``reported`` maps each of ``FIGURES`` to its reported value; one missing gets None."""
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
        shown = reported.get(name)
        if isinstance(shown, (int, float)) and math.isclose(value, shown, rel_tol=1e-9, abs_tol=1e-15):
            low, high = np.percentile(replicates, [100 * (1 - intervals.LEVEL) / 2, 100 * (1 + intervals.LEVEL) / 2])
            out[name] = (float(low), float(high))
    return out


def _timed(row: dict[str, Any] | None, field: str) -> bool:
    """Whether ``row`` has a positive ``step_s`` and ``field``."""
    return row is not None and all(
        isinstance(row.get(f), (int, float)) and not isinstance(row.get(f), bool) and row[f] > 0
        for f in ("step_s", field)
    )


# -- the instrumentation-overhead flag (measure.constants.OVERHEAD_LIMIT) -----------------------------------------

FLAGGED = "instrumentation overhead"
"""The mark on a point's optimizer figures when its hooks' cost is resolved above ``OVERHEAD_LIMIT``: the
instrumented step is then not the step it times, so its share is not trusted."""
UNRESOLVED = "overhead not resolved"
"""The mark when the overhead's interval reaches the limit: the figures may or may not be trusted."""
MARKS = {"above": FLAGGED, "not resolved": UNRESOLVED}


def overhead_check(overhead: float, interval: tuple[float, float] | None, limit: float = OVERHEAD_LIMIT) -> str:
    """``above``, ``below`` or ``not resolved``: the overhead (a fraction) judged against ``limit`` by its 95%
    ``interval`` (``measure.constants.overhead_verdict``, the rule the probe records by); without an interval the
    figure is judged as a line, by its value."""
    return overhead_verdict(*(interval or (overhead, overhead)), limit)


def overhead_title(verdict: str, limit: float = OVERHEAD_LIMIT) -> str:
    """What a flagged or unresolved point's mark says in its title ("" for ``below``)."""
    if verdict == "above":
        return (
            f"the instrumented step's hooks cost more than {limit:.0%} of the step (its 95% interval is above the "
            "limit), so the timed optimizer share is not trusted"
        )
    if verdict == "not resolved":
        return f"the instrumentation overhead's 95% interval reaches the {limit:.0%} limit: not resolved against it"
    return ""


@dataclass(frozen=True)
class Overhead:
    """One instrumented timing's overhead as judged: what it names (a point, or "" for a run's own)."""

    label: str
    overhead: float
    interval: tuple[float, float] | None
    verdict: str


def run_overhead(ident: str, doc: dict[str, Any]) -> Overhead | None:
    """An eager ``optimizer`` run's overhead as judged from its rounds (the key the follow-up's points use, so the
    interval is theirs); None for another document or one without the figure (captured mode)."""
    summary = (doc.get("data") or {}).get("summary") or {}
    overhead = summary.get("instrumentation_overhead")
    if doc.get("probe") != "optimizer" or isinstance(overhead, bool) or not isinstance(overhead, (int, float)):
        return None
    samples = (doc.get("data") or {}).get("samples") or []
    span = round_intervals(samples, dict(summary), f"{ident}|optimizer rounds")["instrumentation_overhead"]
    return Overhead("", float(overhead), span, overhead_check(float(overhead), span))


def followup_overheads(doc: dict[str, Any], docs: dict[str, dict[str, Any]]) -> list[Overhead]:
    """Each measured point's overhead as judged, of a collected follow-up (``campaign`` evidence whose manifest is
    of ``KIND``); empty for any other document or one whose points' evidence is missing."""
    manifest = docs.get(str((doc.get("params") or {}).get("manifest"))) or {}
    if doc.get("probe") != "campaign" or (manifest.get("data") or {}).get("kind") != KIND:
        return []
    try:
        rows = optimizer_points((doc.get("data") or {}).get("points") or [], docs)
    except (ProbebookError, KeyError, TypeError, ValueError):
        return []  # a follow-up its page function refuses: that refusal names it
    out = []
    for r in rows:
        samples = (docs[r.instrumented_evidence].get("data") or {}).get("samples") or []
        span = point_intervals(samples, r, f"{r.instrumented_evidence}|optimizer rounds")["instrumentation_overhead"]
        label = f"{r.preset}, context {r.context}, batch {r.batch}"
        out.append(Overhead(label, r.instrumentation_overhead, span, overhead_check(r.instrumentation_overhead, span)))
    return out
