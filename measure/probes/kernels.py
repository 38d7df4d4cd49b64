"""``kernels``: where the step's device time goes, from ``torch.profiler`` over a few real steps.

``key_averages()`` lists each operator and the kernel it launched with the same device time,
so summing every row double-counts: only *device kernel rows* are summed (rows whose
``device_type`` is CUDA; memcpy/memset rows are kept as ``other``, they occupy the stream like
kernels). A user annotation (``record_function``: ``Optimizer.step#AdamW.step``,
``ProfilerStep#3``, any label of the user's) also appears as a CUDA row spanning the kernels
launched inside it, so counting it counts those kernels twice (PyTorch issue 130730). Version 2
keeps such rows apart in ``data.annotations`` and never counts them; version 1 counted them. Kernels are sorted into
attention, gemm, norm-elementwise, loss, optimizer and other by name (first match wins, in
that order of specificity: optimizer, loss, attention, gemm, norm-elementwise). The
architecture tags in kernel names (sm80, sm90a, ...) are derived at render time from the raw rows,
against the device's compute capability in ``machine``.

Checks: the kernel total per step is compared with the event-timed step of the same shape
(``consistency``); and the number of kernel records is compared with the number of launch
calls the CUDA runtime recorded (each queues one kernel). Long traces can silently drop kernel
events; a trace with fewer kernel records than launches, or none at all, is stored as ``failed``
(never published).

Expert GEMMs (version 4, corrected in 5): a mixture-of-experts preset runs its expert matmuls, forward and
backward, inside a ``record_function`` annotation (``kernel_names.EXPERT_CATEGORY``); the annotation's time
(the device time of the kernels launched inside it, read from the annotation's host-side row: the GPU-side
row is a span that counts idle gaps; on CPU its total CPU time, children included) over the summed kernel
time is ``data.expert_gemm.share``, which cannot pass 1 (a larger one fails the evidence),
with ``experts_impl`` (looped or grouped) in params, so the two variants' expert shares compare.

On CPU there are no kernels: each operator's *self* CPU time is the unit instead (self time
excludes children, so the sum does not double-count), timed against the host-clock step.

Attribution (version 7): on a device, the trace's kernels (start, end) and the host calls that launched them, joined
on their correlation id, give ``data.attribution`` (``measure.evidence.attribution``): per step the GPU's busy time,
its idle time waiting for the host and otherwise, launch delays and short-kernel counts. On the CPU no host launches a
kernel, so ``data.attribution`` is ``{"absent": why}``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from measure.device_check import resolve_device
from measure.evidence.attribution import attribute
from measure.evidence.envelope import Evidence
from measure.evidence.kernel_names import (
    CATEGORIES,
    EXPERT_CATEGORY,
    categorize,
    categorize_in,
    enclosing,
    is_expert_annotation,
)
from measure.probes.common import OneStepConfig, mark_engagement, positive, record_workload
from measure.run.runner import Recorder, execute

PROBE = "kernels"
# 5: the expert share from the kernels launched inside the annotation, never its GPU span;
# 4: data.expert_gemm, the MoE expert GEMMs' time and share (from their annotation); 3: data.observed
# 6: a row's category from the range it ran in (optimizer.step, an SDPA operator), its name's otherwise (``within``)
# 7: data.attribution, GPU busy / host wait / other idle, launch delays and short kernels from the trace's timeline
VERSION = 7
HELP = (
    "torch.profiler over a few steps: device-kernel time shares (attention, gemm, norm-elementwise, "
    "loss, optimizer, other; a kernel inside optimizer.step or an SDPA operator counts there)."
)
EXAMPLE = "probebook measure kernels --preset 250m --compile"
# GPU user annotations by name, for a profiler whose events lack ``is_user_annotation``:
# the step marker of torch.profiler's schedule and the optimizer's record_function label.
_ANNOTATION = re.compile(r"^(ProfilerStep#\d+|Optimizer\.\w+#\w+\.\w+)$")
# runtime-API launches: each queues exactly one kernel. Driver-API launches (cuLaunchKernel, used by
# Triton) are counted apart: CUPTI may also report a driver call beneath a runtime call, so only the
# runtime count is a floor on the number of kernel records.
_RUNTIME_LAUNCH = re.compile(r"^cudaLaunch(Kernel|KernelExC|CooperativeKernel)(_v\d+)?$")
_DRIVER_LAUNCH = re.compile(r"^cuLaunchKernel(Ex)?(_v\d+)?$")
# any CUDA runtime or driver API call: the host call a device event's correlation id names (a kernel launch, a copy)
_HOST_CALL = re.compile(r"^cu(da)?[A-Z]\w*$")
NO_ATTRIBUTION = "on the CPU the profiled operators run on the host itself: there is no launch to wait for"
CONSISTENCY_BOUNDS = {"cuda": (0.5, 1.1), "cpu": (0.2, 5.0)}


@dataclass(frozen=True)
class Config(OneStepConfig):
    """Options of the kernels probe."""

    SESSIONED = False  # its profile's kernel rows are summed per step (render.derive.kernels): one session's

    steps: int = 3
    """Steps under the profiler (keep it small: long traces drop events)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        positive("steps", self.steps)


def is_annotation(name: str, flagged: bool = False) -> bool:
    """Whether a device row is a user annotation (never a kernel): flagged by the profiler or named like one."""
    return bool(flagged) or bool(_ANNOTATION.match(name))


def shares(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Fraction of the summed device time in each category (all six keys; sums to 1)."""
    total = sum(r["device_time_s"] for r in rows)
    by = dict.fromkeys(CATEGORIES, 0.0)
    for r in rows:
        by[r["category"]] += r["device_time_s"]
    return {c: (v / total if total else 0.0) for c, v in by.items()}


def consistency(kernel_total_s: float, steps: int, event_step_s: float, device: str) -> dict[str, Any]:
    """Kernel seconds per step against the event-timed step; ``ok`` when the ratio lies within the bounds."""
    per_step = kernel_total_s / steps
    ratio = per_step / event_step_s
    low, high = CONSISTENCY_BOUNDS[device]
    return {
        "kernel_total_s": per_step,
        "event_step_s": event_step_s,
        "ratio": ratio,
        "bounds": [low, high],
        "ok": low <= ratio <= high,
    }


def _ancestors(event: Any) -> list[str]:
    """The names of the profiler ranges ``event`` ran inside, innermost first."""
    out, parent = [], event.cpu_parent
    while parent is not None:
        out.append(parent.name)
        parent = parent.cpu_parent
    return out


def placed(events: Any, on_device: bool) -> list[dict[str, Any]]:
    """Each kernel (on a device) or operator (on the CPU) of the trace with the range it ran inside:
    ``{kernel, time_s, ancestors}``; a device kernel is placed through the host call that launched it."""
    from torch.autograd import DeviceType

    out = []
    for event in events:
        if event.device_type != DeviceType.CPU or getattr(event, "is_async", False):
            continue
        if on_device:
            chain = [event.name, *_ancestors(event)]
            out += [{"kernel": k.name, "time_s": k.duration / 1e6, "ancestors": chain} for k in event.kernels]
        elif not is_annotation(event.name, getattr(event, "is_user_annotation", False)):
            out.append(
                {"kernel": event.name, "time_s": event.self_cpu_time_total / 1e6, "ancestors": _ancestors(event)}
            )
    return out


def placed_rows(rows: list[dict[str, Any]], where: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The kernel rows (``{kernel, calls, device_time_s}`` per name) split by the range each call ran inside (pure).

    A name's time inside the optimizer's step range or an SDPA operator (``kernel_names.categorize_in``) becomes
    a row of that category with ``within`` naming the range; the rest of its time, by its name's category
    (``within`` null). Calls are split in proportion to time. Rows keep ``device_time_s`` and sum as before.
    """
    inside: dict[tuple[str, str, str], float] = {}
    for p in where:
        within = enclosing(p["ancestors"])
        if within is not None and p["time_s"] > 0:
            key = (p["kernel"], categorize_in(p["kernel"], p["ancestors"]), within)
            inside[key] = inside.get(key, 0.0) + p["time_s"]
    out = []
    for row in rows:
        total, left = row["device_time_s"], row["device_time_s"]
        for (name, category, within), seconds in sorted(inside.items()):
            if name != row["kernel"] or left <= 0:
                continue
            take = min(seconds, left)
            left -= take
            share = take / total if total else 0.0
            out.append({**row, "calls": round(row["calls"] * share), "device_time_s": take, "category": category,
                        "within": within})  # fmt: skip
        if left > 1e-12 * max(total, 1.0):
            calls = row["calls"] - sum(r["calls"] for r in out if r["kernel"] == row["kernel"])
            out.append({**row, "calls": calls, "device_time_s": left, "category": categorize(row["kernel"]),
                        "within": None})  # fmt: skip
    out.sort(key=lambda r: -r["device_time_s"])
    return out


def timeline(events: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The trace's device kernels and the host calls that launched them, as named dicts for
    ``measure.evidence.attribution.attribute``: ``{correlation, name, start_us, end_us}`` each. A device event's id
    and its runtime call's id are both the CUPTI correlation id; user annotations (spans, not work) are left out."""
    from torch.autograd import DeviceType

    kernels, calls = [], []
    for e in events:
        row = {"correlation": e.id, "name": e.name, "start_us": e.time_range.start, "end_us": e.time_range.end}
        if e.device_type == DeviceType.CUDA:
            if not is_annotation(e.name, getattr(e, "is_user_annotation", False)):
                kernels.append(row)
        elif e.device_type == DeviceType.CPU and _HOST_CALL.match(e.name):
            calls.append(row)
    wanted = {k["correlation"] for k in kernels}
    return kernels, [c for c in calls if c["correlation"] in wanted]


def _self_time_us(event: Any, device: bool) -> float:
    if device:
        return float(getattr(event, "self_device_time_total", 0.0) or getattr(event, "self_cuda_time_total", 0.0))
    return float(event.self_cpu_time_total)


def run(config: Config, journal: Any = None, progress: bool = False) -> Evidence:
    """Profile ``steps`` training steps; return the evidence (not stored)."""
    device = resolve_device(config.device)
    batch, seq_len = config.step_shape(device)
    params = {**config.params(device), "batch": batch, "seq_len": seq_len, "steps": config.steps}

    def body(rec: Recorder) -> None:
        import torch
        from torch.autograd import DeviceType
        from torch.profiler import ProfilerActivity, profile

        from measure.progress import profiler_stderr
        from measure.timing import clock_for, sm_clock, sync_for, time_windows
        from measure.workload import load_workload
        from measure.workload.observe import observe

        workload = load_workload(config.workload_options(device), config.workload)
        record_workload(rec, workload)
        data = workload.make_batch(batch, seq_len)
        sync = sync_for(device)
        rec.data["clocks"] = {"sm_mhz_before": sm_clock(device)}
        from measure.integrity import Integrity, WindowWatch

        check = Integrity(workload.optimizer, device)  # finite losses, one update per step, in every window
        timed = time_windows(
            check.wrap(lambda: workload.step(data)), clock_for(device), config.plan(), sync, WindowWatch(check)
        )
        check.close()
        if timed.failures:
            rec.data["window_failures"] = timed.failures
            rec.fail(f"event-timed step: window {timed.failures[0]['window']}: {timed.failures[0]['failure']}")
        rec.data["observed"] = observe(workload, data, device)
        mark_engagement(rec, rec.data["observed"], compile_requested=config.compile, device=device, dtype=config.dtype)
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
        sync()
        with profiler_stderr(), profile(activities=activities) as prof:
            for _ in range(config.steps):
                workload.step(data)
            sync()
        rec.data["clocks"]["sm_mhz_after"] = sm_clock(device)
        on_device = device == "cuda"
        rows, annotations, launches, driver_launches = [], [], 0, 0
        expert_s, expert_calls = 0.0, 0
        for event in prof.key_averages():
            if is_expert_annotation(event.key) and event.device_type == DeviceType.CPU:
                # On the device: the host-side row's device time, the sum of the kernels its ops launched. Never
                # the GPU-side annotation row: its time is the span from its first kernel to its last, idle gaps
                # included (version 4 took the larger of the two; on the H200 the looped experts' host syncs made
                # that span 1.64x all kernel time). On the host: its CPU time with children.
                total_us = float(getattr(event, "device_time_total", 0.0) or 0.0) if on_device else event.cpu_time_total
                expert_s, expert_calls = expert_s + total_us / 1e6, expert_calls + event.count
            if _RUNTIME_LAUNCH.match(event.key):
                launches += event.count
            if _DRIVER_LAUNCH.match(event.key):
                driver_launches += event.count
            if on_device and event.device_type != DeviceType.CUDA:
                continue
            seconds = _self_time_us(event, on_device) / 1e6
            row = {"kernel": event.key, "calls": event.count, "device_time_s": seconds}
            if is_annotation(event.key, getattr(event, "is_user_annotation", False)):
                annotations.append(row)  # kept as raw evidence, never counted (see the module docstring)
                continue
            if seconds <= 0:
                continue
            rows.append(row)
        rows = placed_rows(rows, placed(prof.events(), on_device))
        if on_device:
            rec.data["attribution"] = attribute(*timeline(prof.events()), config.steps)
        else:
            rec.data["attribution"] = {"absent": NO_ATTRIBUTION}
        rec.point(rows, None, f"{len(rows)} kernel rows over {config.steps} steps")
        total = sum(r["device_time_s"] for r in rows)
        rec.data.update(
            {
                "shares": shares(rows),
                "annotations": sorted(annotations, key=lambda r: r["kernel"]),
                "consistency": consistency(total, config.steps, timed.checked_median_s, device) if rows else None,
                "event_step": {
                    "median_s": timed.median_s,
                    "cv": timed.cv,
                    "windows_s": timed.times_s,
                    "sm_clock_mhz": timed.sm_clock_mhz,
                    **({"energy_j": timed.energy_j} if any(e is not None for e in timed.energy_j) else {}),
                },
                "unit": "device kernel self time" if on_device else "operator self CPU time",
                "expert_gemm": {
                    "category": EXPERT_CATEGORY,
                    "experts_impl": config.experts_impl,
                    "time_s": expert_s / config.steps,
                    "calls": expert_calls,
                    "share": expert_s / total if total else None,
                }
                if expert_calls
                else None,
            }
        )
        expert = rec.data["expert_gemm"]
        if expert and expert["share"] is not None and expert["share"] > 1 + 1e-9:
            rec.fail(f"expert GEMM time {expert['share']:.3f}x all kernel time: the annotation was not read as kernels")
        if on_device:
            kernel_calls = sum(r["calls"] for r in rows if not r["kernel"].lower().startswith(("memcpy", "memset")))
            rec.data["trace_check"] = {
                "kernel_records": kernel_calls,
                "launch_calls": launches,
                "driver_launch_calls": driver_launches,
            }
            if not rows:
                rec.fail("the profiler recorded no device kernels: the trace is empty or dropped every event")
            elif launches and kernel_calls < launches:
                rec.fail(
                    f"dropped-event trace: {kernel_calls} kernel records for {launches} launches; "
                    "profile fewer steps (--steps)"
                )
        del torch

    return execute(PROBE, VERSION, params, __file__, body, journal, progress)
