"""Host-wait and launch attribution of a profiled trace (``measure.evidence.attribution``) and the two-profile trace
diff (``render.derive.kernels.trace_diff``): hand-made event lists and kernel rows with exact values."""

from __future__ import annotations

import pytest

from measure.errors import ProbebookError
from measure.evidence.attribution import SHORT_KERNEL_S, attribute
from render.derive.kernels import trace_diff


def _k(c: int, start: float, end: float) -> dict:
    return {"correlation": c, "name": f"k{c}", "start_us": start, "end_us": end}


def _l(c: int, start: float) -> dict:
    return {"correlation": c, "name": "cudaLaunchKernel", "start_us": start, "end_us": start + 2}


# Timeline (µs), two profiled steps:
#   k1 [10, 50)   launched at 0            busy 10–50
#   k2 [55, 60)   launched at 20           gap 50–55 (5 µs): launched before 50 -> other idle
#   k3 [58, 100)  on a second stream       overlaps k2: the stretch runs 55–100
#   k4 [130, 135) launched at 110          gap 100–130 (30 µs): launched after 100 -> host wait
#   k5 [140, 148) no launch call found     gap 135–140 (5 µs): other idle
KERNELS = [_k(3, 58, 100), _k(1, 10, 50), _k(2, 55, 60), _k(4, 130, 135), _k(5, 140, 148)]
LAUNCHES = [_l(1, 0), _l(2, 20), _l(3, 30), _l(4, 110)]


def test_busy_host_wait_and_other_idle_split_the_span_per_step() -> None:
    got = attribute(KERNELS, LAUNCHES, steps=2)
    assert got is not None
    # span 10–148 = 138 µs; busy 40 + 45 + 5 + 8 = 98; host wait 30; other 5 + 5 = 10
    assert got["span_s"] == pytest.approx(138e-6 / 2)
    assert got["busy_s"] == pytest.approx(98e-6 / 2)
    assert got["host_wait_s"] == pytest.approx(30e-6 / 2)
    assert got["other_idle_s"] == pytest.approx(10e-6 / 2)
    assert got["busy_share"] == pytest.approx(98 / 138)
    assert got["host_wait_share"] == pytest.approx(30 / 138)
    assert got["other_idle_share"] == pytest.approx(10 / 138)
    assert got["busy_share"] + got["host_wait_share"] + got["other_idle_share"] == pytest.approx(1.0)
    assert got["idle_gaps"] == {"host_wait": 1, "other": 2}
    assert (got["kernels"], got["unlaunched_kernels"], got["steps"]) == (5, 1, 2)


def test_launch_delay_median_and_p90_and_short_kernels() -> None:
    got = attribute(KERNELS, LAUNCHES, steps=2)
    assert got is not None
    # delays (µs): k1 10, k2 35, k3 28, k4 20 -> sorted 10 20 28 35; median 24; p90 at rank 0.9·3 = 2.7: 28 + 0.7·7
    assert got["launch_delay"]["median_s"] == pytest.approx(24e-6)
    assert got["launch_delay"]["p90_s"] == pytest.approx(32.9e-6)
    assert got["launch_delay"]["kernels"] == 4
    # under 10 µs: k2 (5), k4 (5), k5 (8)
    assert got["short_kernels"] == {"threshold_s": SHORT_KERNEL_S, "count": 3, "per_step": 1.5, "share": 0.6}


def test_a_kernel_launched_exactly_when_the_gpu_went_idle_is_not_a_host_wait() -> None:
    # HolisticTraceAnalysis: host wait only where the launch began strictly after the previous kernel's end
    got = attribute([_k(1, 0, 10), _k(2, 20, 30)], [_l(1, -5), _l(2, 10)], steps=1)
    assert got is not None and got["host_wait_s"] == 0 and got["other_idle_s"] == pytest.approx(10e-6)
    later = attribute([_k(1, 0, 10), _k(2, 20, 30)], [_l(1, -5), _l(2, 10.5)], steps=1)
    assert later is not None and later["host_wait_share"] == pytest.approx(10 / 30)


def test_no_kernel_is_no_attribution_and_steps_are_checked() -> None:
    assert attribute([], LAUNCHES, steps=2) is None
    with pytest.raises(ValueError, match="steps must be a whole number >= 1, got 0"):
        attribute(KERNELS, LAUNCHES, steps=0)
    one = attribute([_k(1, 0, 4)], [], steps=1)
    assert one is not None and one["busy_share"] == 1.0 and one["launch_delay"]["median_s"] is None


def _row(kernel: str, category: str, seconds: float) -> dict:
    return {"kernel": kernel, "category": category, "calls": 1, "device_time_s": seconds}


def test_trace_diff_per_category_then_the_kernels_that_moved_most() -> None:
    a = [_row("gemm1", "gemm", 0.6), _row("soft", "attention", 0.2), _row("old", "other", 0.1)]
    b = [_row("gemm1", "gemm", 0.45), _row("soft", "attention", 0.3), _row("new", "other", 0.05)]
    b.append(_row("ProfilerStep#1", "other", 9.0))  # an annotation row: never counted
    rows = trace_diff(a, 2, b, 3, top=2)  # a: 2 steps, b: 3 steps
    got = [(r["category"], r["kernel"], round(r["a_s"], 9), round(r["b_s"], 9)) for r in rows]
    assert got == [
        ("gemm", "", 0.3, 0.15),
        ("attention", "", 0.1, 0.1),
        ("other", "", 0.05, 0.016666667),
        ("all", "", 0.45, 0.266666667),
        ("gemm", "gemm1", 0.3, 0.15),  # moved 0.15 s per step
        ("other", "old", 0.05, 0.0),  # moved 0.05 (new moved 0.0167, soft 0)
    ]
    assert rows[0]["change_s"] == pytest.approx(-0.15) and rows[0]["change"] == pytest.approx(-0.5)
    assert rows[1]["change"] == pytest.approx(0.0)
    grown = trace_diff([_row("x", "gemm", 0.1)], 1, [_row("x", "gemm", 0.1), _row("y", "loss", 0.1)], 1)
    assert [r["change"] for r in grown if r["category"] == "loss"] == [None, None]  # absent in a: no ratio
    with pytest.raises(ProbebookError, match="trace_diff\\(\\): b needs the number of profiled steps >= 1"):
        trace_diff(a, 2, b, None, top=2)  # type: ignore[arg-type]
