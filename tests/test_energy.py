"""Energy per window (issue 43), measured side: joules from NVML's total-energy counter or the power trapezoid, kept
with every timed window as joules per call (absent on CPU: ``test_run_metadata``'s CPU run), and the counter's
resolution.

NVML is reached through the same seam the SM clock is (a clock whose ``last_energy_j`` says what its window
used, as ``CudaEventClock`` sets it) and through ``EnergyMeter``'s two readers, given literal values here.
"""

from __future__ import annotations

import pytest

from measure.timing import HostClock, WindowPlan, energy_field, time_interleaved, time_windows, window_energy
from measure.utilisation import (
    ENERGY_COUNTER,
    ENERGY_POWER,
    EnergyMeter,
    counter_joules,
    counter_resolution,
    trapezoid_joules,
)


def test_counter_difference_is_joules_and_a_reset_counter_is_unknown() -> None:
    assert counter_joules(1_000_000, 1_250_500) == 250.5
    assert counter_joules(5, 5) == 0.0
    assert counter_joules(2_000, 1_000) is None  # a driver reload reset it: never a negative energy
    assert counter_joules(None, 1_000) is None


def test_power_trapezoid_is_mean_power_times_seconds() -> None:
    assert trapezoid_joules(600.0, 700.0, 0.5) == 325.0
    assert trapezoid_joules(600.0, None, 0.5) is None
    assert trapezoid_joules(600.0, 700.0, 0.0) is None


def readings(*values: float):  # type: ignore[no-untyped-def]
    """A reader that returns ``values`` in turn (an NVML counter or power reading, given literally)."""
    it = iter(values)
    return lambda: next(it)


def test_meter_prefers_the_counter_and_falls_back_to_power_labelled_as_such() -> None:
    counter = EnergyMeter(read_counter_mj=readings(10_000, 10_400), read_power_w=readings(1.0, 1.0))
    assert counter.source == ENERGY_COUNTER
    assert counter.joules(counter.mark(), 9.0) == 0.4  # the counter's difference; the seconds do not enter
    power = EnergyMeter(read_power_w=readings(500.0, 700.0))
    assert power.source == ENERGY_POWER
    assert power.joules(power.mark(), 0.25) == 150.0
    blank = EnergyMeter()
    assert blank.source is None and blank.joules(blank.mark(), 1.0) is None


def test_a_failed_read_gives_no_energy_and_never_raises() -> None:
    def broken() -> float:
        raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")

    meter = EnergyMeter(read_counter_mj=broken)
    assert meter.joules(meter.mark(), 1.0) is None
    half = EnergyMeter(read_counter_mj=readings(100.0))  # the end read fails (the reader is spent)
    assert half.joules(half.mark(), 1.0) is None


def test_counter_resolution_reports_its_update_interval_and_smallest_step() -> None:
    # the counter changes at host times 0.1, 0.2, 0.3 (seconds), by 70, 80 and 75 mJ
    times = iter([0.0, 0.05, 0.1, 0.1, 0.15, 0.2, 0.2, 0.25, 0.3, 0.3, 0.6])
    counts = iter([1000, 1000, 1070, 1070, 1150, 1150, 1225, 1225])
    out = counter_resolution(lambda: next(counts), clock=lambda: next(times), budget_s=0.5)
    assert out["unit_j"] == 0.001 and out["min_step_j"] == pytest.approx(0.07)
    assert out["update_interval_s"] == pytest.approx(0.1)
    still = counter_resolution(lambda: 5.0, clock=readings(0.0, 0.2, 0.4, 0.6), budget_s=0.5)
    assert still == {"unit_j": 0.001, "update_interval_s": None, "min_step_j": None}


def test_window_energy_is_per_call_and_a_cpu_row_has_no_energy_column() -> None:
    class Used:
        last_energy_j = 12.0

    assert window_energy(Used(), 4) == 3.0
    assert window_energy(HostClock(), 4) is None
    assert energy_field(3.0) == {"energy_j": 3.0} and energy_field(None) == {}


class MeteredHost(HostClock):
    """A host clock that says what energy each window used, as ``CudaEventClock`` does after its end event."""

    def __init__(self) -> None:
        super().__init__()
        self.used = 0.0

    def time(self, fn, iters):  # type: ignore[no-untyped-def]
        self.used += 2.0
        self.last_energy_j = self.used
        return super().time(fn, iters)


def test_every_window_and_round_keeps_its_joules_per_call() -> None:
    plan = WindowPlan(warmup=0, windows=3, iters=2, extra=0)
    assert time_windows(lambda: None, MeteredHost(), plan).energy_j == [1.0, 2.0, 3.0]
    assert time_windows(lambda: None, HostClock(), plan).energy_j == [None, None, None]
    seen: list[dict] = []
    result = time_interleaved(
        {"a": lambda: None, "b": lambda: None}, MeteredHost(), plan, on_round=lambda r, t, c, e: seen.append(e)
    )
    assert seen == [{"a": 1.0, "b": 2.0}, {"a": 3.0, "b": 4.0}, {"a": 5.0, "b": 6.0}]
    assert result.arms["a"].energy_j == [1.0, 3.0, 5.0]
