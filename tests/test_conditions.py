"""The clock and host marks (throttled, clock sag, host-bound) read from a run's evidence, the cycle-space check of a
comparison between runs, and the rule that a claim across runs of different configurations names the difference
(issue 38, items 4 and 5): literal inputs with exact values, and documents laid out as the archive's are."""

from __future__ import annotations

import pytest

from render.derive import conditions, replication
from render.evidence import series
from render.numbers import directions
from render.numbers.quantity import Comparison, Quantity

A, B = "sha256:" + "a" * 64, "sha256:" + "b" * 64


def test_sagged_takes_the_worst_point_against_its_own_median() -> None:
    # point 1: 1800/1980 = 0.909 (no sag); point 2: 1500/1700 = 0.882 (sag); a point of one clock says nothing
    assert replication.sagged([[1980, 1980, 1800], [1700, 1700, 1500], [900]]) == pytest.approx(1500 / 1700)
    assert replication.sagged([[1980, 1980, 1800], [1400, 1400, 1400]]) is None  # two steady clocks, no sag
    assert replication.sagged([[None, 0, 1980], []]) is None


def test_host_bound_below_the_share_and_in_cycles_scales_by_the_clock() -> None:
    assert replication.host_bound(0.53) == 0.53
    assert replication.host_bound(0.8) is None and replication.host_bound(None) is None
    assert replication.host_bound(True) is None
    assert replication.in_cycles(0.5, (0.4, 0.6), 2000.0, rate=False) == (1000.0, (800.0, 1200.0))
    assert replication.in_cycles(1000.0, None, 2000.0, rate=True) == (0.5, None)
    with pytest.raises(Exception, match="a clock must be positive"):
        replication.in_cycles(1.0, None, 0.0, rate=False)


def _sampled_run(util: list[float], low: list[int], top: int = 1980) -> dict:
    """A step-scaling run as older runs lay it out: the utilisation sampler's per-window readings, no window clock."""
    rows = [
        {"mode": "fixed_batch", "batch": 4, "tokens": 1024, "window": i, "step_s": 0.08, "sm_clock_mhz_min": c,
         "sm_clock_mhz_median": 1980.0, "sm_util_pct_median": u}
        for i, (u, c) in enumerate(zip(util, low, strict=True))
    ]  # fmt: skip
    data = {"samples": rows, "clocks": {"sm_mhz_before": 345}}
    machine = {"sm_clock_max_mhz": top, "sm_clock_mhz": 345}
    return {"probe": "step-scaling", "machine": machine, "params": {"preset": "250m", "windows": 3}, "data": data}


def test_a_run_reads_its_window_clocks_and_busy_share() -> None:
    run = _sampled_run([44.0, 42.0, 60.0, 0.0], [1980, 1980, 1400, 345])
    # the 0%-busy window read another card (its 345 MHz is not read); data.clocks' idle 345 is not a window's
    assert conditions.window_clocks(run) == [[1980.0, 1980.0, 1400.0]]
    assert conditions.busy_share(run) == pytest.approx(0.44)
    new = {"probe": "kernels", "machine": {"sm_clock_max_mhz": 1980},
           "data": {"event_step": {"sm_clock_mhz": [1980, 1200, 1965]}, "consistency": {"ratio": 0.25},
                    "samples": [{"kernel": "k", "device_time_s": 0.1}]}}  # fmt: skip
    assert conditions.window_clocks(new) == [[1980.0, 1200.0, 1965.0]]
    assert conditions.busy_share(new) == 0.25 and conditions.median_clock(new) == 1965.0
    marks = dict(conditions.run_marks(new))
    assert list(marks) == ["throttled", "clock sag", "host-bound"]
    assert marks["throttled"] == (
        "throttled: its lowest window SM clock was 61% of the card's top 1980 MHz (below 75%)"
    )
    assert marks["host-bound"].startswith("host-bound: the GPU was busy 25% of the step (below 80%)")
    windows = [{"model": "m", "batch": 8, "sm_clock_mhz": c} for c in (1980, 1965)]
    window_rows = {"probe": "batch-sweep", "machine": {"sm_clock_max_mhz": 1980}, "data": {"windows": windows}}
    assert conditions.run_marks(window_rows) == []


def test_across_marks_the_numbers_of_a_throttled_host_bound_run_and_says_how_in_the_title() -> None:
    docs = {A: _sampled_run([44.0, 42.0, 45.0], [1980, 1980, 1300]), B: _sampled_run([95.0] * 3, [1980] * 3)}
    apply = series.across(docs, {})
    step = apply(Quantity(0.08, "s", uncertainty=(0.079, 0.081), evidence=(A,), derivation="median", key="t"))
    assert step.mark == "throttled, clock sag, host-bound"
    assert "throttled: its lowest window SM clock was 66% of the card" in step.title and "top 1980 MHz" in step.title
    assert "host-bound: the GPU was busy 44% of the step (below 80%)" in step.title
    assert "*(throttled, clock sag, host-bound)*" in step.markdown("records/x/v1.md")
    assert step.clock_mhz == 1980.0
    clean = apply(Quantity(0.08, "s", uncertainty=(0.079, 0.081), evidence=(B,), derivation="median", key="u"))
    assert clean.mark is None and clean.clock_mhz == 1980.0
    param = apply(Quantity(4.0, "", evidence=(A,), derivation="evidence field params.batch", key="b"))
    assert param.mark is None  # a run's input is not moved by its clock


def _timed(value: float, interval: tuple[float, float], ev: str, clock: float | None) -> Quantity:
    return Quantity(value, "s", uncertainty=interval, evidence=(ev,), key=ev[7:9], band=0.05, clock_mhz=clock)


def test_a_difference_between_runs_that_is_the_clocks_is_not_resolved_in_cycles() -> None:
    fast, slow = _timed(0.80, (0.79, 0.81), A, 1980.0), _timed(1.00, (0.99, 1.01), B, 1500.0)
    assert directions.unresolved(Comparison.of("<", fast, slow)) is not None  # 1584 against 1500 cycles: slower
    why = directions.unresolved(Comparison.of("<", fast, slow))
    assert why is not None and "resolves in time, but in cycles" in why and "1980 against 1500 MHz" in why
    same_clock = _timed(1.00, (0.99, 1.01), B, 1980.0)
    assert directions.unresolved(Comparison.of("<", fast, same_clock)) is None
    unknown = _timed(1.00, (0.99, 1.01), B, None)
    assert directions.unresolved(Comparison.of("<", fast, unknown)) is None  # no clock: judged in time only


def test_a_claim_across_configurations_names_the_param_or_a_value() -> None:
    params = {A: {"preset": "250m", "eval_batches": 8}, B: {"preset": "250m", "eval_batches": 16}}
    c = Comparison.of("<", _timed(0.8, (0.79, 0.81), A, None), _timed(1.0, (0.99, 1.01), B, None))
    token = directions.CONFIGS.set(params.get)
    try:
        why = directions.unnamed_difference(c, "the boundary is cheaper")
        assert why is not None and "eval_batches differs (8 against 16)" in why
        assert directions.unnamed_difference(c, "with fewer eval batches the boundary is cheaper") is None
        assert directions.unnamed_difference(c, "at 8 batches the boundary is cheaper") is None
        assert directions.unnamed_difference(c, "with one eval batch the boundary is cheaper") is None  # a stem
        params[B] = {**params[B], "probe": "gemm"}  # another probe: its params are another configuration's
        assert directions.unnamed_difference(c, "the boundary is cheaper") is None
        one_run = Comparison.of("<", _timed(0.8, (0.79, 0.81), A, None), _timed(1.0, (0.99, 1.01), A, None))
        assert directions.unnamed_difference(one_run, "cheaper") is None
    finally:
        directions.CONFIGS.reset(token)
    assert directions.unnamed_difference(c, "cheaper") is None  # no archive at hand: nothing to compare
