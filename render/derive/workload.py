"""What a run's workload counts for model FLOPs: total, trainable and (MoE) active parameters (pure, no torch).

Evidence records ``params.n_params_total`` and ``params.n_params_trainable`` (issue 27: a frozen-base harness
trains a small part of its weights) and, for a mixture-of-experts preset, ``params.n_params_active`` (what one
token's forward uses). Model FLOPs per token of the dense matmuls are ``measure.evidence.flops``'s
``4·P_all + 2·P_trainable``, the formula's one place; here is only which counts go into it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from measure.errors import ProbebookError
from measure.evidence.flops import dense_flops_per_token


@dataclass(frozen=True)
class ParamCounts:
    """A run's parameter counts (counts) and the dense matmul FLOPs per token they give."""

    total: int
    trainable: int
    active: int | None
    """Parameters one token's forward uses (MoE); None for a dense model."""
    dense_flops: int
    """``4·P_all + 2·P_trainable`` FLOPs per token, with P_all the active count for MoE."""
    trainable_only_flops: int
    """``6·P_trainable``: what counting only trainable parameters would give (FLOPs per token)."""


def param_counts(params: dict[str, Any], where: str) -> ParamCounts:
    """The counts in ``params`` and their FLOPs; older evidence (``n_params`` only) counts every weight as trainable.

    For MoE, the inactive experts do no work for a token: the active count stands for P_all, and for
    P_trainable too when every weight trains (``measure.evidence.flops.moe_active_params``).
    """
    total = _count(params.get("n_params_total", params.get("n_params")), "n_params_total", where)
    trainable = _count(params.get("n_params_trainable", total), "n_params_trainable", where)
    active = params.get("n_params_active")
    if active is not None and (isinstance(active, bool) or not isinstance(active, int) or not 0 <= active <= total):
        raise ProbebookError(f"{where}: params.n_params_active is {active!r}, not a count up to n_params_total")
    used = total if active is None else active
    used_trainable = trainable if active is None or trainable < total else active
    return ParamCounts(total, trainable, active, dense_flops_per_token(used, min(used_trainable, used)), 6 * trainable)


def _count(value: Any, name: str, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ProbebookError(f"{where}: params.{name} is {value!r}, not a parameter count")
    return value
