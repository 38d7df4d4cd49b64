"""Energy per step and per token from a run's windows (issue 43), torch-free.

Every timed window on a GPU keeps ``energy_j``: the joules its calls used, per call (``measure.timing``), read from
NVML's total-energy counter or, where the card has none, the trapezoid of the power at the window's ends; the
machine fingerprint says which (``machine.energy.source``) and how often the counter changes
(``machine.energy.update_interval_s``). A step's energy is the median of its windows' joules per call; a token's is
that over the tokens a step processes. A projection's energy is its tokens times the joules per token.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from measure.errors import ProbebookError

COUNTER = "nvml_total_energy_counter"
"""``machine.energy.source`` of the counter (``measure.utilisation.ENERGY_COUNTER``; render never imports measure's
NVML module, so the name is repeated here and held equal by the tests)."""
POWER = "nvml_power_trapezoid"
"""``machine.energy.source`` of the fallback: two power readings per window (``measure.utilisation.ENERGY_POWER``)."""
J_PER_KWH = 3.6e6
"""Joules in a kilowatt-hour."""


@dataclass(frozen=True)
class Energy:
    """A run's energy per step and per token, from its windows' joules per call."""

    per_step_j: float
    """Median of the windows' joules per call (one call is one step)."""
    per_token_j: float | None
    """``per_step_j / tokens_per_step``; None without a token count."""
    windows: int
    """How many windows had a reading."""


def energy_values(rows: Sequence[dict[str, Any]]) -> list[float]:
    """The rows' ``energy_j`` readings (finite non-negative numbers; a row without one is left out)."""
    out = []
    for row in rows:
        value = row.get("energy_j")
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0 and value == value:
            out.append(float(value))
    return out


def per_step(values: Sequence[float], tokens_per_step: float | None = None) -> Energy:
    """Joules per step (the median of the windows' joules per call) and per token (over ``tokens_per_step``)."""
    if not values:
        raise ProbebookError("no window recorded energy_j (a CPU run, a card NVML cannot read, or a run before it)")
    step = float(statistics.median(values))
    if tokens_per_step is not None and not tokens_per_step > 0:
        raise ProbebookError(f"tokens_per_step must be positive, got {tokens_per_step!r}")
    return Energy(step, None if tokens_per_step is None else step / tokens_per_step, len(values))


def source_text(facts: Any) -> str:
    """One phrase naming what a run's energy was read from, for a derivation (``machine.energy``)."""
    if not isinstance(facts, dict):
        return "source not recorded"
    source = facts.get("source")
    if source == COUNTER:
        interval = facts.get("update_interval_s")
        every = f", which changed every {interval * 1e3:.3g} ms" if isinstance(interval, (int, float)) else ""
        return f"NVML's total-energy counter (mJ){every}"
    if source == POWER:
        return "the trapezoid of NVML's power reading at each window's ends (no energy counter on this card)"
    return f"source {source!r}"


def projected_energy(tokens: float, joules_per_token: float) -> dict[str, float]:
    """The energy of training on ``tokens`` tokens at ``joules_per_token``: joules and kilowatt-hours."""
    joules = tokens * joules_per_token
    return {"joules": joules, "kwh": joules / J_PER_KWH}
