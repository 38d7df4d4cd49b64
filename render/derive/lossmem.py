"""Loss-kernel memory: what each extra microbatch costs in peak memory, per loss arm.

Rows are loss-memory evidence samples (ARCHITECTURE.md §Evidence): ``arm`` (the loss implementation),
``microbatch``, ``tokens_per_step``, ``peak_bytes``, optional ``tok_s`` and ``vocab``.
The marginal bytes per microbatch is a least-squares slope; the difference of two arms'
slopes, divided by the logits one microbatch adds (``tokens_per_step × vocab``), is the bytes
each logit element costs in the heavier arm (e.g. an fp32 logits tensor plus its gradient).
The largest usable microbatch follows ARCHITECTURE.md §Lessons: a peak above the card's total memory
proves a spill, and a throughput collapse against the neighbouring point is the reliable sign of
one; a peak below the card does not prove a fit. The card's total is a row's ``device_bytes``
(imported CSVs) or ``device_total_bytes`` (the probes), else the evidence machine's memory.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from measure.constants import CV_THRESHOLD
from measure.errors import ProbebookError
from render.derive.windows import median_ci, rate_interval, recorded_windows

COLLAPSE = 0.5
"""A point collapses when its throughput is below this fraction of the previous point's."""
CV_LIMIT = CV_THRESHOLD
"""A point whose windows' CV is above this is unstable: the probes' own threshold (``measure.constants``)."""


def step_tokens(microbatch: int, tokens_per_sequence: int) -> int:
    """Tokens one step processes (tokens): ``microbatch × tokens_per_sequence``.

    A loss-memory row's ``tokens_per_step`` field is the per-sequence increment (the context: what one
    more microbatch unit adds, as ``bytes_per_logit_element`` reads it), not the tokens of the step; a
    table column headed tokens/step shows this product (issue 23, item 2)."""
    for name, n in (("microbatch", microbatch), ("tokens per sequence", tokens_per_sequence)):
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ProbebookError(f"tokens per step needs a whole {name} >= 1, got {n!r}")
    return microbatch * tokens_per_sequence


def tok_s_interval(row: dict[str, Any], windows: Sequence[Any]) -> tuple[float, float] | None:
    """95% bootstrap interval of a row's tokens/s from its timed windows (the document's ``data.windows``, each
    ``arm``, ``microbatch``, ``step_s``): the rate is ``step_tokens`` over the windows' median, so the interval is
    the median's (``render.derive.windows``). None when the document keeps no windows of the row (imported rows)
    or fewer than 3."""
    times = recorded_windows(windows, row, ("arm", "microbatch"))
    if times is None:
        return None
    return rate_interval(step_tokens(int(row["microbatch"]), int(row["tokens_per_step"])), median_ci(times))


def spilled(peak_bytes: float | None, device_bytes: float | None) -> bool:
    """Whether a peak above the card's total memory proves a spill; an unknown peak or total proves nothing."""
    return peak_bytes is not None and bool(device_bytes) and peak_bytes > device_bytes  # type: ignore[operator]


def row_device_bytes(row: dict[str, Any], machine_bytes: float | None = None) -> float | None:
    """The card's total memory for a row, bytes: ``device_bytes`` or ``device_total_bytes``, else the machine's."""
    for column in ("device_bytes", "device_total_bytes"):
        value = row.get(column)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            return float(value)
    return machine_bytes


def machine_bytes(docs: Sequence[dict[str, Any]]) -> float | None:
    """The card's total memory when every evidence document's machine names the same one, bytes; else None."""
    totals = {(d.get("machine") or {}).get("gpu_memory_bytes") for d in docs}
    total = totals.pop() if len(totals) == 1 else None
    return float(total) if isinstance(total, (int, float)) and not isinstance(total, bool) and total > 0 else None


def unstable(row: dict[str, Any]) -> bool:
    """Whether a point was flagged unstable at measure time, or (imported rows) its ``cv`` is above ``CV_LIMIT``."""
    if row.get("unstable") is not None:
        return bool(row["unstable"])
    cv = row.get("cv")
    return isinstance(cv, (int, float)) and not isinstance(cv, bool) and cv > CV_LIMIT


@dataclass(frozen=True)
class Slope:
    """A straight-line fit of peak memory against microbatch."""

    bytes_per_microbatch: float
    """Marginal peak bytes per extra microbatch (the slope), bytes."""
    intercept_bytes: float
    """Peak bytes extrapolated to microbatch 0 (weights, optimizer state, workspace), bytes."""
    max_abs_residual_bytes: float
    """Largest distance of a measured peak from the line, bytes."""

    def to_json(self) -> dict[str, float]:
        return {
            "bytes_per_microbatch": self.bytes_per_microbatch,
            "intercept_bytes": self.intercept_bytes,
            "max_abs_residual_bytes": self.max_abs_residual_bytes,
        }


def arms(rows: Iterable[dict[str, Any]]) -> list[str]:
    """The arms present, in order of first appearance."""
    seen: list[str] = []
    for r in rows:
        if r.get("arm") is not None and str(r["arm"]) not in seen:
            seen.append(str(r["arm"]))
    return seen


def _arm_rows(rows: Sequence[dict[str, Any]], arm: str) -> list[dict[str, Any]]:
    picked = [r for r in rows if str(r.get("arm")) == arm]
    if not picked:
        raise ProbebookError(f"no loss-memory rows for arm {arm!r} (arms present: {', '.join(arms(rows)) or 'none'})")
    for i, r in enumerate(picked):
        mb = r.get("microbatch")
        if not isinstance(mb, (int, float)) or isinstance(mb, bool) or not mb > 0:
            raise ProbebookError(f"arm {arm!r} row {i}: microbatch must be a positive number, got {mb!r}")
    return picked


def linear_fit(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float, float]:
    """Ordinary least squares ``y = slope·x + intercept`` -> (slope, intercept, max |residual|)."""
    n = len(xs)
    mean_x, mean_y = math.fsum(xs) / n, math.fsum(ys) / n
    sxx = math.fsum((x - mean_x) ** 2 for x in xs)
    sxy = math.fsum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True))
    slope = sxy / sxx
    intercept = mean_y - slope * mean_x
    worst = max(abs(y - (slope * x + intercept)) for x, y in zip(xs, ys, strict=True))
    return slope, intercept, worst


def marginal_bytes_per_microbatch(rows: Sequence[dict[str, Any]], arm: str) -> Slope:
    """Peak bytes per extra microbatch for one arm: the least-squares slope over its rows."""
    picked = [r for r in _arm_rows(rows, arm) if r.get("peak_bytes") is not None]
    sizes = sorted({float(r["microbatch"]) for r in picked})
    if len(sizes) < 2:
        raise ProbebookError(
            f"arm {arm!r} needs peak_bytes at 2 or more distinct microbatch sizes for a slope; it has {len(sizes)}"
        )
    slope, intercept, worst = linear_fit(
        [float(r["microbatch"]) for r in picked], [float(r["peak_bytes"]) for r in picked]
    )
    return Slope(slope, intercept, worst)


def _single(rows: Sequence[dict[str, Any]], column: str, what: str) -> float | None:
    values = sorted({float(r[column]) for r in rows if r.get(column) is not None})
    if len(values) > 1:
        shown = ", ".join(f"{v:g}" for v in values)
        raise ProbebookError(f"{what} have different {column} values ({shown}); compare arms at one {column}")
    return values[0] if values else None


def bytes_per_logit_element(
    rows: Sequence[dict[str, Any]], arm_a: str, arm_b: str, *, vocab: int | None = None
) -> float:
    """Bytes per logit element: ``(slope_a − slope_b) / (tokens_per_step × vocab)``.

    ``arm_a`` is the arm that holds more logit memory (e.g. the unfused loss), ``arm_b`` the
    lighter one; ``tokens_per_step`` must be one value on every row of both arms, and
    ``vocab`` comes from the rows unless given.
    """
    both = _arm_rows(rows, arm_a) + _arm_rows(rows, arm_b)
    what = f"arms {arm_a!r} and {arm_b!r}"
    tokens = _single(both, "tokens_per_step", what)
    if tokens is None or tokens <= 0:
        raise ProbebookError(f"{what} need a positive tokens_per_step column")
    if vocab is None:
        found = _single(both, "vocab", what)
        if found is None:
            raise ProbebookError(f"{what} have no vocab column; give the vocabulary size")
        vocab_size = found
    else:
        vocab_size = float(vocab)
    if not vocab_size > 0:
        raise ProbebookError(f"vocab must be positive, got {vocab_size:g}")
    delta = (
        marginal_bytes_per_microbatch(rows, arm_a).bytes_per_microbatch
        - marginal_bytes_per_microbatch(rows, arm_b).bytes_per_microbatch
    )
    return delta / (tokens * vocab_size)


def stable_prefix(
    points: Sequence[tuple[float, float | None]], collapse: float = COLLAPSE, spilled_sizes: Iterable[float] = ()
) -> list[tuple[float, float]]:
    """The ``(size, tok_s)`` points, ascending by size, up to the first failure, spill or collapse.

    A point with no throughput (None) ends the prefix; so does a size in ``spilled_sizes`` (its
    peak was above the card), and one whose throughput is below ``collapse`` × the previous
    point's. Several rows at one size count by their median.
    """
    if not 0 < collapse < 1:
        raise ProbebookError(f"collapse threshold must be between 0 and 1, got {collapse!r}")
    spills = set(spilled_sizes)
    by_size: dict[float, list[float | None]] = {}
    for size, tok_s in points:
        by_size.setdefault(size, []).append(tok_s)
    kept: list[tuple[float, float]] = []
    for size in sorted(by_size):
        values = by_size[size]
        if any(v is None for v in values) or size in spills:
            break
        rate = statistics.median([v for v in values if v is not None])
        if kept and rate < collapse * kept[-1][1]:
            break
        kept.append((size, float(rate)))
    return kept


def largest_usable_microbatch(
    rows: Sequence[dict[str, Any]], arm: str, collapse: float = COLLAPSE, device_bytes: float | None = None
) -> int:
    """The largest microbatch of ``arm`` before its peak spills past the card or its throughput collapses.

    ``device_bytes`` is the card's total memory when the rows do not say (the evidence's machine).
    """
    picked = _arm_rows(rows, arm)
    if all(r.get("tok_s") is None for r in picked):
        raise ProbebookError(f"arm {arm!r} has no tok_s values; the largest usable microbatch needs throughput")
    spills = [float(r["microbatch"]) for r in picked if spilled(r.get("peak_bytes"), row_device_bytes(r, device_bytes))]
    kept = stable_prefix([(float(r["microbatch"]), r.get("tok_s")) for r in picked], collapse, spills)
    if not kept:
        raise ProbebookError(
            f"arm {arm!r} has no usable microbatch: the smallest one spilled past the card or has no throughput"
        )
    return int(kept[-1][0])


def fraction_of_asymptote(tok_s: float, asymptote_tok_s: float) -> float:
    """Throughput as a fraction of an asymptotic tokens/s (dimensionless)."""
    if not (math.isfinite(asymptote_tok_s) and asymptote_tok_s > 0):
        raise ProbebookError(f"asymptote must be a positive tokens/s, got {asymptote_tok_s!r}")
    if not (math.isfinite(tok_s) and tok_s >= 0):
        raise ProbebookError(f"throughput must be a non-negative tokens/s, got {tok_s!r}")
    return tok_s / asymptote_tok_s


def phase_peak_bytes(rows: Sequence[dict[str, Any]], phase: str, where: dict[str, Any]) -> tuple[int, int]:
    """(bytes, rows) of the largest ``<phase>_peak_bytes`` over the rows matching ``where`` (column -> value).

    The phases before a measurement (``setup``, ``warmup``, ``capture``: ``measure.peakmem.PHASES``) keep their
    own peaks (issue 27); a row without the phase's reading (an OOM point, older evidence) is left out.
    """
    column = f"{phase}_peak_bytes"
    chosen = [r for r in rows if all(r.get(k) == v for k, v in where.items())]
    values = [r[column] for r in chosen if isinstance(r.get(column), int) and not isinstance(r.get(column), bool)]
    if not values:
        said = ", ".join(f"{k}={v}" for k, v in where.items()) or "any row"
        raise ProbebookError(f"no row ({said}) records {column}")
    return max(values), len(values)
