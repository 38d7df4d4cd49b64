"""Model FLOPs and model FLOPs utilisation (MFU).

Model FLOPs per token follow Chowdhery et al., "PaLM: Scaling Language Modeling with
Pathways" (2022, arXiv:2204.02311), Appendix B: ``6N + 12·L·H·Q·T`` for a forward and backward
pass, with N parameters, L layers, H attention heads, Q head dimension, T sequence length.
``6N`` is the matmuls of the parameters (2 FLOPs per multiply-add, forward 1×, backward 2×);
``12·L·H·Q·T`` is self-attention's two T×T matmuls, not halved for a causal mask. Model FLOPs
exclude recomputation, so MFU compares hardware across implementations (Appendix B's point).
Which parameter count N a record uses (with or without embeddings) is the caller's choice and
must be stated next to the number.
"""

from __future__ import annotations

import math

from measure.errors import ProbebookError


def _positive(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ProbebookError(f"{name} must be a positive number, got {value!r}")
    return value


def model_flops_per_token(n_params: float, n_layers: int, n_heads: int, head_dim: int, seq_len: int) -> float:
    """Training FLOPs per token (forward + backward), ``6N + 12·L·H·Q·T`` (PaLM, Appendix B)."""
    for name, value in (
        ("n_params", n_params),
        ("n_layers", n_layers),
        ("n_heads", n_heads),
        ("head_dim", head_dim),
        ("seq_len", seq_len),
    ):
        _positive(name, value)
    return 6 * n_params + 12 * n_layers * n_heads * head_dim * seq_len


def achieved_model_flop_s(tok_s: float, flops_per_token: float) -> float:
    """Achieved model FLOP/s: tokens/s × model FLOPs per token."""
    return _positive("tok_s", tok_s) * _positive("flops_per_token", flops_per_token)


def mfu(model_flop_s: float, peak_flop_s: float) -> float:
    """Model FLOPs utilisation: achieved model FLOP/s / peak FLOP/s (dimensionless, 0..1 if sane)."""
    if isinstance(model_flop_s, bool) or not math.isfinite(model_flop_s) or model_flop_s < 0:
        raise ProbebookError(f"model FLOP/s must be a non-negative number, got {model_flop_s!r}")
    return model_flop_s / _positive("peak_flop_s", peak_flop_s)
