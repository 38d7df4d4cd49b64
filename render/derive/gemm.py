"""GEMM throughput: FLOP/s of a matrix product from its shape and a measured time.

An (m×k)·(k×n) product is m·n·k multiply-adds, 2·m·n·k FLOPs. The same-session ceiling of a
shape is its FLOP/s at the median of its timed windows (``gemm`` evidence, one row a window). The
workload's ceiling weighs each shape by how often one training step runs it: Σ count·FLOPs over
Σ count·median time, the rate the step's matrix products would reach back to back at each shape's
own median (the ``gemm`` probe's rule, ``measure/probes/gemm.py``; the counts are its ``data.points``).
"""

from __future__ import annotations

import functools
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from measure.errors import ProbebookError
from measure.evidence.clocks import window_clock_mhz
from render.derive import intervals
from render.derive.windows import median_ci


def gemm_tflop_s(m: int, n: int, k: int, time_s: float) -> float:
    """TFLOP/s of an (m×k)·(k×n) matrix product taking ``time_s``: m·n·k multiply-adds are 2·m·n·k FLOPs."""
    return 2.0 * m * n * k / time_s / 1e12


@dataclass(frozen=True)
class GemmShape:
    """The timed windows of one GEMM shape and what they give."""

    shape: str
    """The shape's name as the probe wrote it (``square-8192``, ``wkv.fwd``)."""
    m: int
    """Rows of the left operand."""
    n: int
    """Columns of the right operand."""
    k: int
    """The shared (reduced) dimension."""
    windows: int
    """Timed windows of this shape."""
    median_time_s: float
    """Median window time, seconds."""
    median_tflop_s: float
    """TFLOP/s at the median window: the same-session ceiling."""
    best_tflop_s: float
    """TFLOP/s of the fastest window."""
    times_s: tuple[float, ...] = ()
    """The shape's window times, seconds, in row order (what its intervals resample)."""

    @property
    def flops(self) -> float:
        """FLOPs of one product: 2·m·n·k."""
        return 2.0 * self.m * self.n * self.k


def gemm_shapes(rows: Sequence[dict[str, Any]]) -> list[GemmShape]:
    """Rows (``shape``, ``m``, ``n``, ``k``, ``time_s``) grouped per shape, in order of first appearance."""
    groups: dict[tuple[str, int, int, int], list[float]] = {}
    for r in rows:
        groups.setdefault((r["shape"], r["m"], r["n"], r["k"]), []).append(r["time_s"])
    out = []
    for (shape, m, n, k), times in groups.items():
        median = statistics.median(times)
        out.append(
            GemmShape(
                shape,
                m,
                n,
                k,
                len(times),
                median,
                gemm_tflop_s(m, n, k, median),
                gemm_tflop_s(m, n, k, min(times)),
                tuple(float(t) for t in times),
            )
        )
    return out


def gemm_ceiling_flop_s(rows: Sequence[dict[str, Any]], shape: str | None = None) -> tuple[GemmShape, float]:
    """The shape (the only one when ``shape`` is None) and its FLOP/s at the median window."""
    shapes = gemm_shapes(rows)
    names = sorted({g.shape for g in shapes})
    chosen = names[0] if shape is None and len(names) == 1 else shape
    picked = [g for g in shapes if g.shape == chosen]
    if not picked:
        raise ProbebookError(f"give shape= one of {', '.join(names)}")
    if len(picked) > 1:
        dims = "; ".join(f"{g.m}×{g.n}×{g.k}" for g in picked)
        raise ProbebookError(f"shape {chosen!r} has rows of several sizes ({dims}); the evidence is inconsistent")
    return picked[0], picked[0].median_tflop_s * 1e12


def workload_ceiling_flop_s(shapes: Sequence[GemmShape], counts: dict[str, int]) -> float:
    """FLOP/s of a step's GEMM mix: Σ count·2·m·n·k / Σ count·median time over the shapes a step runs (count > 0).

    ``counts``: shape name -> how many times one training step runs it; a shape absent or at 0 (the square
    reference) does not weigh in.
    """
    flops = seconds = 0.0
    for g in shapes:
        n = counts.get(g.shape, 0)
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ProbebookError(f"shape {g.shape!r}: its count must be a whole number >= 0, got {n!r}")
        flops += n * 2.0 * g.m * g.n * g.k
        seconds += n * g.median_time_s
    if seconds <= 0:
        raise ProbebookError("no shape the step runs (count > 0) has timed windows")
    return flops / seconds


def shape_clock_mhz(rows: Sequence[dict[str, Any]], shape: str | None = None) -> tuple[float, int]:
    """(SM clock in MHz, windows sampled) the windows of ``shape`` (every shape when None) ran at: the median of
    the windows' own medians (``measure.evidence.clocks``, gemm v2); refused when no window sampled the clock."""
    chosen = [r for r in rows if shape is None or r.get("shape") == shape]
    if not chosen:
        raise ProbebookError(f"no windows of shape {shape!r}")
    clock = window_clock_mhz(list(chosen))
    if clock is None:
        raise ProbebookError(
            "no window sampled the SM clock (gemm before version 2, a CPU run or no NVML: data.clock_sampling)"
        )
    return clock, sum(1 for r in chosen if r.get("sm_clock_mhz_median") is not None)


def gemm_shape_intervals(
    rows: Sequence[dict[str, Any]],
) -> dict[tuple[str, int, int, int], tuple[tuple[float, float] | None, tuple[float, float] | None]]:
    """Per shape (``shape``, ``m``, ``n``, ``k``), the 95% bootstrap intervals of ``GemmShape.median_time_s``
    (seconds) and of ``median_tflop_s`` (TFLOP/s) from the same windows; None with fewer than 3 windows.

    TFLOP/s is 2·m·n·k over the median time, a decreasing map of it, so its interval is the time's mapped: the
    slower end of the time gives the lower rate. The best window's TFLOP/s is a reading and has none."""
    groups: dict[tuple[str, int, int, int], list[float]] = {}
    for r in rows:
        groups.setdefault((r["shape"], r["m"], r["n"], r["k"]), []).append(r["time_s"])
    out = {}
    for (shape, m, n, k), times in groups.items():
        ci = median_ci(times)
        rate = None if ci is None else (gemm_tflop_s(m, n, k, ci[1]), gemm_tflop_s(m, n, k, ci[0]))
        out[(shape, m, n, k)] = (ci, rate)
    return out


# -- 95% intervals (issue 23): the windows of each shape resampled (render.derive.intervals) ----------------------


def ceiling_recipe(g: GemmShape, key: str) -> intervals.Recipe | None:
    """How to redraw a shape's ceiling (FLOP/s): its FLOPs over the median of its windows, resampled as the rows
    ``key`` names; None below ``MIN_SAMPLES`` windows."""
    median = intervals.median_recipe(g.times_s, key)
    return None if median is None else ("reciprocal", g.flops, median)


@functools.lru_cache(maxsize=256)  # pages cite one shape's ceiling many times; its windows resample once
def ceiling_interval(g: GemmShape) -> tuple[float, float] | None:
    """95% interval of a shape's ceiling (FLOP/s): 2·m·n·k over the bootstrap interval of its median window."""
    return intervals.reciprocal(intervals.median_interval(g.times_s), g.flops)


def workload_interval(shapes: Sequence[GemmShape], counts: dict[str, int], key: str) -> tuple[float, float] | None:
    """95% interval of ``workload_ceiling_flop_s`` (FLOP/s): each counted shape's windows resampled on their own
    (independent samples, seeded by ``key`` and the shape), Σ count·FLOPs over Σ count·median, replicate by
    replicate; None when a counted shape has fewer than ``MIN_SAMPLES`` windows."""
    used = [(g, counts.get(g.shape, 0)) for g in shapes if counts.get(g.shape, 0)]
    recipes = [intervals.median_recipe(g.times_s, f"{key}|{g.shape}") for g, _ in used]
    if not used or any(r is None for r in recipes):
        return None
    flops = sum(n * g.flops for g, n in used)
    seconds = sum(n * intervals.draws(r) for (_, n), r in zip(used, recipes, strict=True))
    low, high = np.percentile(flops / seconds, [100 * (1 - intervals.LEVEL) / 2, 100 * (1 + intervals.LEVEL) / 2])
    return float(low), float(high)


def clock_interval(rows: Sequence[dict[str, Any]], shape: str | None = None) -> tuple[float, float] | None:
    """95% interval (MHz) of ``shape_clock_mhz``: the median of the windows' own median clocks, bootstrapped over
    the windows; None below ``MIN_SAMPLES`` sampled windows."""
    values = [
        float(r["sm_clock_mhz_median"])
        for r in rows
        if (shape is None or r.get("shape") == shape) and r.get("sm_clock_mhz_median") is not None
    ]
    return intervals.median_interval(values)
