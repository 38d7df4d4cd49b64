"""Per-window integrity (finite losses, one update per step), the utilisation sampler, CUDA-graph capture's refusals."""

from __future__ import annotations

import os
import time

import pytest

from measure.integrity import judge_window
from measure.utilisation import Sampler, summarize, within

torch = pytest.importorskip("torch")


def test_judge_window():
    assert judge_window(3, 3, 0) is None
    assert judge_window(3, None, None) is None  # nothing to check: not a failure
    assert judge_window(3, 3, 1) == "1 of 3 losses were not finite"
    assert judge_window(3, 2, 0) == "the optimizer applied 2 updates in a window of 3 steps"


def _tiny_training(nan_at: int | None = None, skip_at: int | None = None):
    """A real linear model and AdamW; the step returns NaN or skips the update on the given call."""
    gen = torch.Generator().manual_seed(0)
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x, y = torch.randn(8, 4, generator=gen), torch.randn(8, 1, generator=gen)
    calls = {"n": 0}

    def step():
        calls["n"] += 1
        loss = torch.nn.functional.mse_loss(model(x), y)
        if calls["n"] == nan_at:
            loss = loss * float("nan")
        loss.backward()
        if calls["n"] != skip_at:
            opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    return step, opt


@pytest.mark.parametrize(
    ("nan_at", "skip_at", "failure"),
    [
        (None, None, None),
        (5, None, "3 of 3 losses were not finite"),  # a NaN loss makes NaN weights: every later loss is NaN
        (None, 4, "the optimizer applied 2 updates in a window of 3 steps"),
    ],
)
def test_integrity_counts_losses_and_updates_per_window(nan_at, skip_at, failure):
    from measure.integrity import Integrity

    step, opt = _tiny_training(nan_at, skip_at)
    check = Integrity(opt, "cpu")
    checked = check.wrap(step)
    checked()  # a warm-up call, outside every window
    windows = []
    for _ in range(2):
        check.begin()
        for _ in range(3):
            checked()
        windows.append(check.end(3))
    assert windows[0]["counter"] == "optimizer state step"
    # window 0 runs calls 2..4 (the skipped update), window 1 calls 5..7 (the NaN)
    assert [w["failure"] for w in windows] == ([failure, None] if skip_at else [None, failure])
    assert [w["updates"] for w in windows] == ([2, 3] if skip_at else [3, 3])


def test_integrity_hook_counter_for_an_optimizer_without_a_step_state():
    from measure.integrity import Integrity

    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)  # keeps no "step" in its state
    check = Integrity(opt, "cpu")

    def step():
        loss = model(torch.ones(1, 2)).sum()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    checked = check.wrap(step)
    check.begin()
    checked()
    checked()
    window = check.end(2)
    assert (window["counter"], window["updates"], window["failure"]) == ("step post-hook", 2, None)
    check.close()


def test_summarize_and_window_selection():
    readings = [
        {"t": 1.0, "sm_clock_mhz": 1980, "power_w": 500.0},
        {"t": 2.0, "sm_clock_mhz": 1755, "power_w": 690.0},
        {"t": 3.0, "sm_clock_mhz": 1830, "power_w": None},
        {"t": 9.0, "sm_clock_mhz": 600, "power_w": 100.0},
    ]
    inside = within(readings, 1.0, 3.0)
    assert [r["t"] for r in inside] == [1.0, 2.0, 3.0]
    s = summarize(inside, ("sm_clock_mhz", "power_w", "temperature_c"))
    assert s["readings"] == 3
    assert s["sm_clock_mhz"] == {"min": 1755, "median": 1830.0, "max": 1980, "n": 3}
    assert s["power_w"] == {"min": 500.0, "median": 595.0, "max": 690.0, "n": 2}
    assert s["temperature_c"] is None


def test_sampler_thread_reads_pauses_and_stops():
    """The sampler thread on a real reading (this process's CPU time), paused and resumed."""

    def read():
        return {"cpu_s": time.process_time(), "pid": os.getpid()}

    with Sampler(read, interval_s=0.005) as sampler:
        time.sleep(0.1)
        sampler.pause()
        time.sleep(0.05)  # let a read in flight land
        paused_at = len(sampler.readings)
        time.sleep(0.1)
        assert len(sampler.readings) == paused_at
        sampler.resume()
        time.sleep(0.1)
    assert paused_at >= 2 and len(sampler.readings) > paused_at
    times = [r["t"] for r in sampler.readings]
    assert times == sorted(times)
    assert sampler.window_summary(times[0], times[1])["readings"] == 2
    assert not sampler._thread.is_alive()


def test_nvml_reader_says_why_it_cannot_read():
    from measure.utilisation import nvml_reader

    read, why = nvml_reader()
    if read is None:
        assert why and ("nvidia-ml-py" in why or "NVML" in why)
    else:  # a machine with a GPU: one real reading
        assert set(read()) >= {"sm_clock_mhz", "power_w", "sm_util_pct"}


def test_graph_capture_says_why_not_on_cpu():
    from measure.graphs import capture

    replay, info = capture(lambda: None, None, "cpu")
    assert replay is None and info["captured"] is False and "CUDA" in info["reason"]


def test_a_failed_window_is_recorded_as_a_failure_never_a_timing():
    """Through the timing core: the NaN window and the skipped-update window are failures, the rest timings."""
    from measure.integrity import Integrity, WindowWatch
    from measure.timing import HostClock, WindowPlan, WindowsFailed, time_interleaved, time_windows

    plan = WindowPlan(warmup=1, windows=3, iters=2, extra=0)
    step, opt = _tiny_training(skip_at=4)  # call 1 warms up; window 1 holds calls 4 and 5
    check = Integrity(opt, "cpu")
    result = time_windows(check.wrap(step), HostClock(), plan, watch=WindowWatch(check))
    assert len(result.times_s) == 2 and len(result.checks) == 2
    assert [f["window"] for f in result.failures] == [1]
    assert result.failures[0]["failure"] == "the optimizer applied 1 updates in a window of 2 steps"
    assert all(c["failure"] is None and c["updates"] == 2 for c in result.checks)
    assert result.median_s is not None

    step, opt = _tiny_training(nan_at=2)  # the first window's first call: every window after is NaN too
    check = Integrity(opt, "cpu")
    result = time_windows(check.wrap(step), HostClock(), plan, watch=WindowWatch(check))
    assert result.times_s == [] and result.median_s is None and len(result.failures) == 3

    good, good_opt = _tiny_training()
    bad, bad_opt = _tiny_training(nan_at=2)  # its first timed round
    checks = {"good": Integrity(good_opt, "cpu"), "bad": Integrity(bad_opt, "cpu")}
    seen: list[dict[str, float]] = []

    class PerArm:  # one watch per arm: each arm's own optimizer and losses
        current = "good"

        def begin(self):
            checks[self.current].begin()

        def end(self, calls):
            out = checks[self.current].end(calls)
            self.current = "bad" if self.current == "good" else "good"
            return out

    arms = {"good": checks["good"].wrap(good), "bad": checks["bad"].wrap(bad)}
    plan = WindowPlan(warmup=1, windows=2, iters=1, extra=0)
    with pytest.raises(WindowsFailed, match="arm bad: every round failed"):
        time_interleaved(arms, HostClock(), plan, on_round=lambda r, t, _c, _e: seen.append(t), watch=PerArm())
    assert seen == [{"good": seen[0]["good"]}, {"good": seen[1]["good"]}]  # the bad arm never reports a time
