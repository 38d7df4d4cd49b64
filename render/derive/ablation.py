"""Ablations: what removing one part of the step saves, from interleaved arm timings."""

from __future__ import annotations

from measure.errors import ProbebookError


def saving_fraction(arm_s: float, baseline_s: float) -> float:
    """Share of the baseline's time an ablation arm removes: ``1 − arm / baseline`` (negative: it costs time)."""
    if not baseline_s > 0:
        raise ProbebookError(f"the baseline's median must be a positive time, got {baseline_s!r}")
    return 1.0 - arm_s / baseline_s
