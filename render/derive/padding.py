"""Padding and mask derivations: padding share, diversity and its knee, the epoch saving, the mask slowdown.

Inputs are the raw counts the ``padding`` probe stores per batching (tokens, slots, rows, distinct
roots over the full accumulation windows) and the ``mask`` probe's step times and padded lengths.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

from measure.errors import ProbebookError
from render.derive.intervals import ratio_interval
from render.derive.windows import median_ci

KNEE_DROP = 0.05
"""Diversity has fallen once it is more than 5% below the sweep's best (a drop well clear of ties)."""


def padding_share(tokens: int, slots: int) -> float:
    """Fraction of the slots (row positions, tokens of width) that hold padding: ``1 − tokens / slots``."""
    if slots <= 0 or tokens < 0 or tokens > slots:
        raise ProbebookError(f"padding share needs 0 <= tokens <= slots and slots > 0, got {tokens} and {slots}")
    return 1.0 - tokens / slots


def diversity(distinct_roots: int, full_windows: int) -> float | None:
    """Mean distinct roots (documents or folders) per full accumulation window; None without a full window."""
    if full_windows < 0 or distinct_roots < 0:
        raise ProbebookError(f"diversity needs non-negative counts, got {distinct_roots} and {full_windows}")
    return distinct_roots / full_windows if full_windows else None


def diversity_knee(sizes: Sequence[int], values: Sequence[float | None], drop: float = KNEE_DROP) -> int | None:
    """The smallest bucket size (tokens), above the sweep's most diverse one, whose diversity is more than
    ``drop`` below that best; None when diversity never falls that far.

    ``diversity_knee([8, 16, 32], [10.0, 9.8, 9.0])`` is 32 (9.0 < 0.95 × 10.0).
    """
    pairs = sorted((s, v) for s, v in zip(sizes, values, strict=True) if v is not None)
    if not pairs:
        return None
    best_at = max(range(len(pairs)), key=lambda i: (pairs[i][1], -i))
    best = pairs[best_at][1]
    for size, value in pairs[best_at + 1 :]:
        if value < (1.0 - drop) * best:
            return size
    return None


def step_time_s(c_s: float, a_s_per_token: float, b_s_per_token2: float, width: float) -> float:
    """A fitted step's time in seconds at sequence length ``width``: ``c + a·W + b·W²``."""
    return c_s + a_s_per_token * width + b_s_per_token2 * width * width


def epoch_saving_s(rows_before: int, rows_after: int, rows_per_step: float, step_s: float) -> float:
    """Seconds per epoch saved by needing fewer rows: ``(rows_before − rows_after) / rows_per_step × step_s``.

    Every row is one sequence of the fixed width, so a step of ``rows_per_step`` rows takes ``step_s``
    seconds whatever the rows hold (padding costs as much as tokens).
    """
    if rows_per_step <= 0 or step_s < 0:
        raise ProbebookError(f"epoch saving needs rows per step > 0 and a step time >= 0, got {rows_per_step}")
    return (rows_before - rows_after) / rows_per_step * step_s


def mask_step_samples(rows: Sequence[dict[str, Any]]) -> dict[str, list[float]]:
    """``step_s`` (s) per mask kind over its interleaved rounds; rows without a kind or a finite numeric
    ``step_s`` are not rounds (the mask table and ``mask_cost`` both read them through this)."""
    steps: dict[str, list[float]] = {}
    for r in rows:
        value = r.get("step_s")
        if isinstance(r.get("kind"), str) and isinstance(value, (int, float)) and math.isfinite(value):
            steps.setdefault(r["kind"], []).append(float(value))
    return steps


def mask_step_medians(rows: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Median ``step_s`` (s) per mask kind over its interleaved rounds (``mask_step_samples``)."""
    return {kind: statistics.median(values) for kind, values in mask_step_samples(rows).items()}


def mask_step_intervals(
    rows: Sequence[dict[str, Any]],
) -> dict[str, tuple[tuple[float, float] | None, tuple[float, float] | None]]:
    """Per mask kind, the 95% bootstrap intervals of its median ``step_s`` (s) and of its ``slowdown`` against
    ``causal`` (fraction), from the same rounds as ``mask_step_medians``; None with fewer than 3 rounds, and for
    ``causal`` itself, whose slowdown is 0 by definition. The kinds' rounds are resampled apart, as the page's
    ``mask_cost`` does, so a number shown on a page and in the table carries one interval."""
    samples = mask_step_samples(rows)
    causal = samples.get("causal")
    out = {}
    for kind, values in samples.items():
        ratio = None if causal is None or kind == "causal" else ratio_interval(values, causal)
        out[kind] = (median_ci(values), None if ratio is None else (ratio[0] - 1.0, ratio[1] - 1.0))
    return out


def slowdown(masked_s: float, causal_s: float) -> float:
    """How much slower a masked step is than the ``is_causal`` one, as a fraction: ``masked / causal − 1``."""
    if causal_s <= 0:
        raise ProbebookError(f"slowdown needs a positive is_causal step time, got {causal_s}")
    return masked_s / causal_s - 1.0


def padded_batch_share(lengths: Sequence[int], width: int) -> float:
    """Share of a right-padded batch's positions that are padding (loss positions dropped): ``1 − Σ L / (B·W)``."""
    if width <= 0 or not lengths or any(not 0 <= n <= width for n in lengths):
        raise ProbebookError(f"padded batch share needs lengths within 0..{width}, got {list(lengths)}")
    return padding_share(sum(lengths), len(lengths) * width)
