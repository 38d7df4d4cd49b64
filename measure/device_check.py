"""Is the card idle and ours before a probe times on it? (issue 27: an idle, exclusive device before timing)

Before a probe's body runs, ``check(device)`` asks NVML (``nvidia-ml-py``) which other processes hold
a context on the GPU torch computes on (compute and graphics, with their memory) and samples its SM
and memory utilisation a few times over ``SAMPLE_S``. Another process, or utilisation at or above
``BUSY_UTIL_PCT`` before we have launched anything, means the timings may share the card: the run is
kept and the finding recorded (``data.device_check``), with a warning on the terminal. A CPU run records
``"not checked (cpu)"``; a CUDA run without NVML records why it could not check, never a guess.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

log = logging.getLogger(__name__)

BUSY_UTIL_PCT = 5  # an idle H200 reads 0%; anything above a few percent is someone else's kernels
SAMPLES = 5
SAMPLE_S = 0.5  # NVML's utilisation is a rate over its own sample period (1/6 s to 1 s by card)


def judge(processes: list[dict[str, Any]], own_pids: set[int], util: list[dict[str, Any]]) -> dict[str, Any]:
    """The verdict on one card (pure): other processes on it, the largest utilisation seen, and whether it is busy.

    ``processes``: ``{"pid", "used_memory_bytes", "kind"}`` per context NVML lists; ``util``: readings
    ``{"sm_util_pct", "mem_util_pct"}``. Busy: any process not in ``own_pids``, or a reading at or above
    ``BUSY_UTIL_PCT``.
    """
    others = sorted((p for p in processes if p["pid"] not in own_pids), key=lambda p: p["pid"])
    sm = max((u["sm_util_pct"] for u in util), default=None)
    mem = max((u["mem_util_pct"] for u in util), default=None)
    reasons = []
    if others:
        reasons.append(f"{len(others)} other process(es) on the card: pids {', '.join(str(p['pid']) for p in others)}")
    if sm is not None and sm >= BUSY_UTIL_PCT:
        reasons.append(f"SM utilisation {sm}% before the run")
    if mem is not None and mem >= BUSY_UTIL_PCT:
        reasons.append(f"memory utilisation {mem}% before the run")
    return {
        "checked": True,
        "other_processes": others,
        "max_sm_util_pct": sm,
        "max_mem_util_pct": mem,
        "samples": len(util),
        "busy_util_pct": BUSY_UTIL_PCT,
        "busy": bool(reasons),
        "reason": "; ".join(reasons) if reasons else "idle: no other process, no utilisation",
    }


def not_checked(why: str) -> dict[str, Any]:
    return {"checked": False, "busy": None, "reason": f"not checked ({why})"}


def check(device: str | None, samples: int = SAMPLES, sample_s: float = SAMPLE_S) -> dict[str, Any]:
    """What NVML sees on the GPU torch computes on, judged (``judge``); a warning when it is busy. Never raises."""
    if device != "cuda":
        return not_checked(device or "no device")
    try:
        import pynvml  # nvidia-ml-py

        from measure.utilisation import nvml_handle
    except ImportError:
        return not_checked("nvidia-ml-py is not installed")
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # no driver library, no device visible to NVML
        return not_checked(f"NVML unavailable: {type(exc).__name__}")
    try:
        handle, which = nvml_handle(pynvml)
        processes = []
        for kind, lister in (
            ("compute", pynvml.nvmlDeviceGetComputeRunningProcesses),
            ("graphics", pynvml.nvmlDeviceGetGraphicsRunningProcesses),
        ):
            for proc in lister(handle):
                used = getattr(proc, "usedGpuMemory", None)
                processes.append({"pid": int(proc.pid), "used_memory_bytes": used, "kind": kind})
        util = []
        for i in range(samples):
            rates = pynvml.nvmlDeviceGetUtilizationRates(handle)
            util.append({"sm_util_pct": int(rates.gpu), "mem_util_pct": int(rates.memory)})
            if i + 1 < samples:
                time.sleep(sample_s / samples)
        try:
            compute_mode = int(pynvml.nvmlDeviceGetComputeMode(handle))
        except Exception:  # not every card reports it
            compute_mode = None
    except Exception as exc:  # a reading the driver refuses: record it, never stop the run
        return not_checked(f"NVML refused a reading: {type(exc).__name__}: {exc}")
    finally:
        pynvml.nvmlShutdown()
    # a process NVML names with our pid is this probe's own context (torch may have made one already)
    found = judge(processes, {os.getpid()}, util)
    found.update(
        {
            "device": which,
            "compute_mode": compute_mode,
            "exclusive_process": compute_mode == pynvml.NVML_COMPUTEMODE_EXCLUSIVE_PROCESS,
        }
    )
    if found["busy"]:
        log.warning("the GPU is not idle before timing (%s): the timings may share the card", found["reason"])
    return found
