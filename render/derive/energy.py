"""Energy per step and per token from a run's windows (issue 43), torch-free.

Every timed window on a GPU keeps ``energy_j``: the joules its calls used, per call (``measure.timing``), read from
NVML's total-energy counter or, where the card has none, the trapezoid of the power at the window's ends; the
machine fingerprint says which (``machine.energy.source``) and how often the counter changes
(``machine.energy.update_interval_s``). A token's energy is a step's over the tokens a step processes; a
projection's energy is its tokens times the joules per token.

A step's energy is the *mean* of the windows' joules per call where they come from the counter, the median where
they come from the power trapezoid. Why: the counter changes in steps (about every 100 ms on an H100 or H200, each
step the energy since the last), so a window reads the whole steps that fell inside it, not its own energy. Over
windows whose starts fall at random against the counter's updates, a window of length T sees T / interval steps
on average, so the mean is the window's energy; the median is not: on one H100 (evidence sha256:7a4832027e2c), 18
of 42 one-call windows of about 59 ms read 0 J and the others 44 to 61 J, a median of 45 J against a mean of 28 J
(about 480 W over the step, where the median would mean 760 W on a 700 W card). The session design's windows of
one call made this bite; Zeus and Megatron's ``EnergyMonitor`` read the counter over a whole window of many steps
for the same reason.
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


MEAN = "mean"
"""``Energy.statistic`` over counter readings (quantised: the mean is their expectation)."""
MEDIAN = "median"
"""``Energy.statistic`` over power-trapezoid readings (not quantised)."""


@dataclass(frozen=True)
class Energy:
    """A run's energy per step and per token, from its windows' joules per call."""

    per_step_j: float
    """The windows' joules per call (one call is one step), by ``statistic``."""
    per_token_j: float | None
    """``per_step_j / tokens_per_step``; None without a token count."""
    windows: int
    """How many windows had a reading."""
    statistic: str = MEDIAN
    """``MEAN`` or ``MEDIAN`` of the windows (``statistic_for``)."""


def statistic_for(facts: Any) -> str:
    """``MEAN`` for readings of the total-energy counter (``machine.energy.source``), else ``MEDIAN``."""
    return MEAN if isinstance(facts, dict) and facts.get("source") == COUNTER else MEDIAN


def energy_values(rows: Sequence[dict[str, Any]]) -> list[float]:
    """The rows' ``energy_j`` readings (finite non-negative numbers; a row without one is left out)."""
    out = []
    for row in rows:
        value = row.get("energy_j")
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0 and value == value:
            out.append(float(value))
    return out


def per_step(values: Sequence[float], tokens_per_step: float | None = None, statistic: str = MEDIAN) -> Energy:
    """Joules per step (the ``statistic``, mean or median, of the windows' joules per call) and per token (over
    ``tokens_per_step``)."""
    if not values:
        raise ProbebookError("no window recorded energy_j (a CPU run, a card NVML cannot read, or a run before it)")
    step = float(statistics.fmean(values) if statistic == MEAN else statistics.median(values))
    if tokens_per_step is not None and not tokens_per_step > 0:
        raise ProbebookError(f"tokens_per_step must be positive, got {tokens_per_step!r}")
    return Energy(step, None if tokens_per_step is None else step / tokens_per_step, len(values), statistic)


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
