"""Which interval a number combined from others carries (render.numbers.leases): one lease's windows for a ratio,
widened across sessions once for an absolute time or rate, the operands' across-sessions intervals for numbers of
different leases (an MFU against a measured ceiling too); and what its derivation, title and ledger row say of
it. Literal inputs, exact values."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from scipy.stats import t

from render.derive import replication
from render.evidence import series
from render.functions.rates import _mfu_interval
from render.numbers import ledger
from render.numbers.quantity import Quantity

A = "sha256:" + "a" * 64
B = "sha256:" + "b" * 64
C = "sha256:" + "c" * 64
POOL = ("step", replication.Spread(0.2, 12, 10, "class"))
"""A class pool: 20% between-session SD on the log scale, 12 degrees of freedom."""
HALF = t.ppf(0.975, 12) * 0.2 * math.sqrt(2)
"""The log half-width of one session's prediction interval from ``POOL``."""
T0 = 1_764_000_000.0


def across(value: float, within_half: float, ev: str, key: str, written: float, host: str = "h1") -> Quantity:
    """A step time as a page reads it (``render.evidence.series.across``): its across-sessions interval from
    ``POOL``, its windows' interval ``value ± within_half`` kept as ``within``, and its run's lease."""
    return Quantity(
        value=value,
        unit="s",
        uncertainty=(value * math.exp(-HALF), value * math.exp(HALF)),
        within=(value - within_half, value + within_half),
        evidence=(ev,),
        key=key,
        derivation=key,
        lease=(host, written),
        pool=POOL,
        band=0.05,
    )


def rel_half(q: Quantity) -> float:
    """The relative half-width of a first-order (symmetric) interval."""
    assert q.uncertainty is not None and q.value is not None
    lo, hi = q.uncertainty
    assert (lo + hi) / 2 == pytest.approx(q.value, rel=1e-12)
    return (hi - lo) / 2 / q.value


def test_a_ratio_of_one_lease_keeps_the_windows_interval_propagated() -> None:
    eager = across(0.2, 0.004, A, "eager", T0)  # 2% relative half-width
    compiled = across(0.1, 0.0015, B, "compiled", T0 + 120)  # 1.5%, two minutes later on one host: one lease
    speedup = eager / compiled
    assert speedup.value == pytest.approx(2.0, rel=1e-15)
    assert rel_half(speedup) == pytest.approx(math.hypot(0.02, 0.015), rel=1e-12)  # 2.5%: (1.95, 2.05)
    assert speedup.uncertainty == pytest.approx((1.95, 2.05), rel=1e-12)
    assert speedup.within is None  # a ratio's published interval is this lease's own
    assert "from this lease's windows (ratio within one lease)" in speedup.derivation
    assert "this lease’s windows (ratio within one lease); 95% interval 1.950–2.050" in speedup.title  # typeset
    assert speedup.lease == ("h1", T0) and speedup.pool == POOL
    row = ledger.number_row(speedup, "p.md", "k")
    assert "within" not in row and row["uncertainty"] == pytest.approx([1.95, 2.05], rel=1e-12)
    # the same two numbers of one run (one evidence document) are one lease too, whatever their written times
    same_run = across(0.2, 0.004, A, "eager", T0) / across(0.1, 0.0015, A, "compiled", T0 + 10_000)
    assert same_run.value == pytest.approx(2.0, rel=1e-15)


def test_a_ratio_of_two_leases_propagates_the_across_sessions_intervals() -> None:
    eager = across(0.2, 0.004, A, "eager", T0)
    later = across(0.1, 0.0015, B, "compiled", T0 + replication.LEASE_S + 1)  # past the lease: another session
    other_host = across(0.1, 0.0015, C, "compiled", T0 + 60, host="h2")
    # each side's across interval, read as symmetric (its half-width is the mean of the two halves), in quadrature
    side = (math.exp(HALF) - math.exp(-HALF)) / 2
    for compiled in (later, other_host):
        speedup = eager / compiled
        assert speedup.value == pytest.approx(2.0, rel=1e-15)
        assert rel_half(speedup) == pytest.approx(math.hypot(side, side), rel=1e-12)
        assert rel_half(speedup) > 0.8  # wide: 2.0 (0.3–3.7)
        assert speedup.within is None and speedup.lease is None and speedup.pool is None
        assert "lease" not in speedup.derivation


def test_an_absolute_product_of_one_lease_is_widened_once_not_twice() -> None:
    tokens = Quantity(value=8192, unit="tok", exact=True, evidence=(A,), key="tokens", derivation="tokens")
    step = across(0.1, 0.002, A, "step", T0)  # 2% within
    rate = tokens / step  # an absolute rate of one run: the step's 2% within, then one session's prediction
    assert (rate.unit, rate.value) == ("tok/s", pytest.approx(81920.0, rel=1e-15))
    assert rate.within == pytest.approx((81920 * 0.98, 81920 * 1.02), rel=1e-12)
    assert rate.uncertainty == pytest.approx((81920 * math.exp(-HALF), 81920 * math.exp(HALF)), rel=1e-12)
    assert "across sessions 44–152 ktok/s; this run’s windows 80–84 ktok/s" in rate.title
    other = across(0.2, 0.002, C, "other", T0 + 600)  # another run of the lease (two runs of one document's windows
    total = step + other  # would need resampling jointly): within half-widths in quadrature, then one prediction
    assert total.value == pytest.approx(0.3, rel=1e-15)
    assert total.within == pytest.approx((0.3 - math.hypot(0.002, 0.002), 0.3 + math.hypot(0.002, 0.002)), rel=1e-12)
    assert total.uncertainty == pytest.approx((0.3 * math.exp(-HALF), 0.3 * math.exp(HALF)), rel=1e-12)
    # a product of a one-lease time and a one-lease ratio (unitless): the time's within, widened once
    ratio = across(0.2, 0.004, A, "eager", T0) / across(0.1, 0.002, B, "compiled", T0 + 60)  # 2.0 ± 2.83%
    scaled = across(0.1, 0.002, C, "step", T0 + 300) * ratio  # a third run of the lease: disjoint evidence
    assert scaled.value == pytest.approx(0.2, rel=1e-15)
    within_rel = math.hypot(0.02, math.hypot(0.02, 0.02))
    assert scaled.within == pytest.approx((0.2 * (1 - within_rel), 0.2 * (1 + within_rel)), rel=1e-12)
    assert scaled.uncertainty == pytest.approx((0.2 * math.exp(-HALF), 0.2 * math.exp(HALF)), rel=1e-12)
    assert "this lease's windows, then widened once; 95% interval across sessions" in scaled.derivation
    assert "this lease’s windows" in scaled.title and "across sessions" in scaled.title
    row = ledger.number_row(scaled, "p.md", "k")
    assert row["within"] == pytest.approx([0.2 * (1 - within_rel), 0.2 * (1 + within_rel)], rel=1e-12)
    assert row["uncertainty"] == pytest.approx([0.2 * math.exp(-HALF), 0.2 * math.exp(HALF)], rel=1e-12)


def test_numbers_without_a_class_pool_combine_as_before() -> None:
    bare = [
        Quantity(value=v, unit="s", uncertainty=(v * 0.98, v * 1.02), evidence=(e,), key=k, derivation=k)
        for v, e, k in ((0.2, A, "a"), (0.1, B, "b"))
    ]
    ratio = bare[0] / bare[1]
    assert rel_half(ratio) == pytest.approx(math.hypot(0.02, 0.02), rel=1e-12)
    assert ratio.derivation == "a / b; 95% interval propagated to first order (GUM §5.1.2)"
    assert ratio.within is None and ratio.pool is None


def _run(written: str) -> dict:
    """A step-scaling run of host ``h1`` written at ``written``, as the archive lays one out."""
    rows = [{"mode": "fixed_batch", "batch": 4, "tokens": 1024, "window": i, "step_s": 0.1} for i in range(3)]
    return {
        "probe": "step-scaling",
        "created_at": written,
        "machine": {"hostname_hash": "h1", "sm_clock_max_mhz": 1980},
        "params": {"preset": "250m", "windows": 3},
        "data": {"samples": rows},
    }


def test_a_page_reads_a_one_lease_product_widened_once_through_the_across_function() -> None:
    docs = {A: _run("2026-11-29T09:51:17Z"), B: _run("2026-11-29T09:53:15Z")}
    apply = series.across(docs, {"step": POOL[1]})  # as a page build applies it to every number a template reads
    eager = apply(Quantity(0.2, "s", uncertainty=(0.196, 0.204), evidence=(A,), derivation="median", key="e"))
    compiled = apply(Quantity(0.1, "s", uncertainty=(0.0985, 0.1015), evidence=(B,), derivation="median", key="c"))
    assert eager.within == (0.196, 0.204) and eager.pool == POOL
    assert eager.uncertainty == pytest.approx((0.2 * math.exp(-HALF), 0.2 * math.exp(HALF)), rel=1e-12)
    speedup = apply(eager / compiled)  # ``(a / b).format(...)`` passes the result through once more
    assert speedup.uncertainty == pytest.approx((1.95, 2.05), rel=1e-12)
    total = apply(eager + compiled)
    assert total.within == pytest.approx((0.3 - math.hypot(0.004, 0.0015), 0.3 + math.hypot(0.004, 0.0015)))
    assert total.uncertainty == pytest.approx((0.3 * math.exp(-HALF), 0.3 * math.exp(HALF)), rel=1e-12)
    assert total.lease == eager.lease and total.band == 0.05  # the lease its operands share, kept


def test_a_ratio_of_one_lease_and_one_class_is_a_ratio_of_the_windows() -> None:
    rate = across(100.0, 2.0, A, "rate", T0)  # a rate as a template reads it: across sessions, 2% within
    rate = replace(rate, unit="tok/s")
    peak = replace(across(1e15, 1.5e13, B, "peak", T0 - 200), unit="FLOP/s")  # measured in the lease, 1.5% within
    interval, within, said = _mfu_interval(rate, peak, 0.5)
    assert interval == pytest.approx((0.5 * (1 - 0.025), 0.5 * (1 + 0.025)), rel=1e-12) and within is None
    assert said.endswith("from this lease's windows (ratio within one lease)")
    elsewhere = replace(peak, lease=("h1", T0 + 2 * replication.LEASE_S))
    wide, _, said = _mfu_interval(rate, elsewhere, 0.5)
    assert wide is not None and (wide[1] - wide[0]) / 2 / 0.5 > 0.8 and said == ""  # the across intervals, as before
    sheet, kept, _ = _mfu_interval(rate, None, 0.5)  # a datasheet peak is no session's: the rate's, scaled
    assert sheet == pytest.approx((0.5 * math.exp(-HALF), 0.5 * math.exp(HALF)), rel=1e-12)
    assert kept == pytest.approx((0.49, 0.51), rel=1e-12)


def test_mfu_of_a_step_against_a_kernel_ceiling_of_its_lease_is_widened_by_the_widest_class() -> None:
    """A session moves a host-bound step (20% here) far more than a GEMM (2.7%): in their ratio the movement does not
    cancel, so MFU of one lease is widened once by the step's SD, its windows' interval kept as ``within``."""
    kernel = ("kernel", replication.Spread(0.027, 204, 71, "class"))
    rate = replace(across(100.0, 2.0, A, "rate", T0), unit="tok/s")
    peak = replace(across(1e15, 1.5e13, B, "peak", T0 - 200), unit="FLOP/s", pool=kernel)
    interval, within, said = _mfu_interval(rate, peak, 0.5)
    assert interval == pytest.approx((0.5 * math.exp(-HALF), 0.5 * math.exp(HALF)), rel=1e-12)  # the step's pool
    assert within == pytest.approx((0.5 * (1 - 0.025), 0.5 * (1 + 0.025)), rel=1e-12)
    assert "then widened once; a ratio of numbers of different probe classes" in said
    assert said.startswith("; 95% interval propagated to first order (GUM §5.1.2), from this lease's windows, then")
