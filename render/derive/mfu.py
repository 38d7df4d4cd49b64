"""Model FLOPs utilisation (MFU): achieved model FLOP/s over a peak FLOP/s.

Model FLOPs per token are the model's own figure, computed where its shapes are: the
step-scaling probe records PaLM's ``6N + 12·L·H·Q·T`` (Chowdhery et al., "PaLM", 2022,
arXiv:2204.02311, Appendix B) per sequence length in ``params.model_flops_per_token``, from
``measure.workload.presets.model_flops_per_token``. Model FLOPs exclude recomputation, so MFU
compares hardware across implementations (Appendix B's point).
"""

from __future__ import annotations

import math

from measure.errors import ProbebookError


def _positive(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ProbebookError(f"{name} must be a positive number, got {value!r}")
    return value


def achieved_model_flop_s(tok_s: float, flops_per_token: float) -> float:
    """Achieved model FLOP/s: tokens/s × model FLOPs per token."""
    return _positive("tok_s", tok_s) * _positive("flops_per_token", flops_per_token)


def mfu(model_flop_s: float, peak_flop_s: float) -> float:
    """Model FLOPs utilisation: achieved model FLOP/s / peak FLOP/s (dimensionless, 0..1 if sane)."""
    if isinstance(model_flop_s, bool) or not math.isfinite(model_flop_s) or model_flop_s < 0:
        raise ProbebookError(f"model FLOP/s must be a non-negative number, got {model_flop_s!r}")
    return model_flop_s / _positive("peak_flop_s", peak_flop_s)
