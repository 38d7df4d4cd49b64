"""Host-wait and launch attribution of a profiled span (issue 43, item 1): how much of the time the GPU ran a kernel,
how much it sat idle waiting for the host to launch the next one, and how long each launch took to start.

Input: the trace's device kernels ``{correlation, name, start_us, end_us}`` and the host's launch calls (the CUDA
runtime or driver call that queued each kernel) ``{correlation, name, start_us, end_us}``, joined on the CUPTI
correlation id; times in microseconds, as the profiler gives them. Pure: no torch.

Definitions (HolisticTraceAnalysis's idle-time breakdown, over the union of every stream rather than per stream):

- *busy*: the union of the kernel intervals (two kernels overlapping on two streams count once);
- *span*: from the first kernel's start to the last kernel's end (the profiled steps run back to back);
- an idle gap (between one busy stretch's end and the next kernel's start) is *host wait* when that kernel's
  launch call started after the busy stretch ended: the GPU had nothing queued because the host had not yet
  asked; otherwise (launched in time, or no launch call found for it) it is *other idle*;
- *launch delay*: a kernel's start minus the start of its launch call (queueing plus launch latency);
- a *short kernel* runs under ``SHORT_KERNEL_S``: too short to hide the host's per-launch cost behind it.
"""

from __future__ import annotations

import statistics
from typing import Any

SHORT_KERNEL_S = 10e-6
"""A kernel shorter than this (10 µs) cannot cover the host's cost of launching the next one (a few µs of Python and
the runtime call each): a step made of many such kernels is launch-bound whatever the GPU."""


def _p90(values: list[float]) -> float:
    """The 90th percentile with linear interpolation between order statistics (numpy's default)."""
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=10, method="inclusive")[8]


def attribute(kernels: list[dict[str, Any]], launches: list[dict[str, Any]], steps: int) -> dict[str, Any] | None:
    """The attribution of the span the ``kernels`` cover, per profiled step (``steps`` of them): seconds busy, waiting
    for the host and otherwise idle with their shares of the span, launch delay median and p90 (seconds), short-kernel
    counts. None when there is no kernel (nothing ran on a device)."""
    if not kernels:
        return None
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a whole number >= 1, got {steps!r}")
    launch_at = {e["correlation"]: float(e["start_us"]) for e in launches}
    ordered = sorted(kernels, key=lambda k: (float(k["start_us"]), float(k["end_us"])))
    busy = host_wait = other = 0.0
    gaps_host = gaps_other = 0
    run_start, run_end = float(ordered[0]["start_us"]), float(ordered[0]["end_us"])
    for k in ordered[1:]:
        start, end = float(k["start_us"]), float(k["end_us"])
        if start <= run_end:  # overlaps (or touches) the busy stretch: extend it
            run_end = max(run_end, end)
            continue
        busy += run_end - run_start
        gap = start - run_end
        launched = launch_at.get(k["correlation"])
        if launched is not None and launched > run_end:
            host_wait, gaps_host = host_wait + gap, gaps_host + 1
        else:
            other, gaps_other = other + gap, gaps_other + 1
        run_start, run_end = start, end
    busy += run_end - run_start
    span = run_end - float(ordered[0]["start_us"])
    delays = sorted(
        (float(k["start_us"]) - launch_at[k["correlation"]]) * 1e-6 for k in ordered if k["correlation"] in launch_at
    )
    short = sum(1 for k in ordered if (float(k["end_us"]) - float(k["start_us"])) * 1e-6 < SHORT_KERNEL_S)
    per_step = 1e-6 / steps

    def share(part: float) -> float | None:
        return part / span if span > 0 else None

    return {
        "steps": steps,
        "span_s": span * per_step,
        "busy_s": busy * per_step,
        "host_wait_s": host_wait * per_step,
        "other_idle_s": other * per_step,
        "busy_share": share(busy),
        "host_wait_share": share(host_wait),
        "other_idle_share": share(other),
        "idle_gaps": {"host_wait": gaps_host, "other": gaps_other},
        "launch_delay": {
            "median_s": statistics.median(delays) if delays else None,
            "p90_s": _p90(delays) if delays else None,
            "kernels": len(delays),
        },
        "kernels": len(ordered),
        "unlaunched_kernels": len(ordered) - len(delays),
        "short_kernels": {
            "threshold_s": SHORT_KERNEL_S,
            "count": short,
            "per_step": short / steps,
            "share": short / len(ordered),
        },
    }
