"""Training-time projections: ``T = k·P / R`` (ARCHITECTURE.md §Derivations).

``P`` parameters trained on ``k`` tokens per parameter (default 20, the compute-optimal
ratio of Hoffmann et al., "Training Compute-Optimal Large Language Models", 2022, Table 3)
at ``R`` tokens/s. With a batch size in tokens the token count rounds up to whole optimizer
updates, since a run cannot stop part-way through one.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from measure.errors import ProbebookError

TOKENS_PER_PARAM = 20.0
"""Default k: Chinchilla's compute-optimal ~20 tokens per parameter (Hoffmann et al. 2022)."""
_SUFFIX = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}
_THOUSANDS = re.compile(r"^[0-9]{1,3}(,[0-9]{3})+(\.[0-9]+)?[kKmMbBgGtT]?$")


@dataclass(frozen=True)
class Projection:
    """How long training takes at a measured throughput."""

    params: float
    """Parameters trained, P."""
    tok_s: float
    """Throughput of the whole run (all its GPUs together), tokens/s, R."""
    tokens_per_param: float
    """Training tokens per parameter, k."""
    gpus: int
    """GPUs the run uses (for GPU-hours)."""
    batch_tokens: int | None
    """Tokens per optimizer update, if rounding to whole updates."""
    tokens: float
    """Training tokens: k·P, rounded up to whole updates when ``batch_tokens`` is given."""
    seconds: float
    """Wall-clock training time, seconds: tokens / R."""
    gpu_hours: float
    """seconds / 3600 × gpus."""
    seconds_per_billion_tokens: float
    """Wall-clock seconds per 1e9 tokens: 1e9 / R."""
    optimizer_updates: int | None
    """Whole optimizer updates, ceil(k·P / batch_tokens); None without ``batch_tokens``."""

    def to_json(self) -> dict[str, Any]:
        return {
            "params": self.params,
            "tok_s": self.tok_s,
            "tokens_per_param": self.tokens_per_param,
            "gpus": self.gpus,
            "batch_tokens": self.batch_tokens,
            "tokens": self.tokens,
            "seconds": self.seconds,
            "gpu_hours": self.gpu_hours,
            "seconds_per_billion_tokens": self.seconds_per_billion_tokens,
            "optimizer_updates": self.optimizer_updates,
        }


def _positive(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ProbebookError(f"{name} must be a positive number, got {value!r}")
    return float(value)


def _whole(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ProbebookError(f"{name} must be a positive whole number, got {value!r}")
    return value


def project(
    params: float,
    tok_s: float,
    tokens_per_param: float = TOKENS_PER_PARAM,
    batch_tokens: int | None = None,
    gpus: int = 1,
) -> Projection:
    """Training time, GPU-hours and optimizer updates for P params at R tokens/s (see module doc)."""
    p = _positive("params", params)
    r = _positive("tok_s", tok_s)
    k = _positive("tokens_per_param", tokens_per_param)
    gpus = _whole("gpus", gpus)
    tokens = k * p
    if not math.isfinite(tokens / r * gpus) or not math.isfinite(1e9 / r):
        raise ProbebookError(
            f"the projection of {p:g} params at {r:g} tokens/s does not fit in a double; check params and tok_s"
        )
    updates = None
    if batch_tokens is not None:
        batch_tokens = _whole("batch_tokens", batch_tokens)
        updates = math.ceil(tokens / batch_tokens)
        tokens = float(updates * batch_tokens)
    seconds = tokens / r
    return Projection(
        params=p,
        tok_s=r,
        tokens_per_param=k,
        gpus=gpus,
        batch_tokens=batch_tokens,
        tokens=tokens,
        seconds=seconds,
        gpu_hours=seconds / 3600.0 * gpus,
        seconds_per_billion_tokens=1e9 / r,
        optimizer_updates=updates,
    )


def parse_count(text: str, name: str = "value") -> float:
    """A count written as ``250e6``, ``250000000``, ``250,000,000`` or ``250M`` (k, M, B/G, T suffixes) -> float.

    A comma only groups thousands: ``1,5B`` (a decimal comma) is refused, not read as 15e9.
    """
    stripped = text.strip()
    if not stripped.isascii() or ("," in stripped and not _THOUSANDS.match(stripped)):
        raise ProbebookError(
            f"{name} {text[:40]!r} is not a number (e.g. 250e6, 250M or 1.5B; a comma only groups thousands)"
        )
    raw = stripped.replace("_", "").replace(",", "")
    scale = 1.0
    if raw and raw[-1].lower() in _SUFFIX:
        scale, raw = _SUFFIX[raw[-1].lower()], raw[:-1]
    try:
        value = float(raw) * scale
    except ValueError:
        raise ProbebookError(f"{name} {text!r} is not a number (e.g. 250e6 or 250M)") from None
    return _positive(name, value)
