"""Is the card idle and ours before a probe times on it? (issue 27: an idle, exclusive device before timing)

Before a probe's body runs, ``check(device)`` asks NVML (``nvidia-ml-py``) which other processes hold
a context on the GPU torch computes on (compute and graphics, with their memory) and samples its SM
and memory utilisation a few times over ``SAMPLE_S``. Another process, or utilisation at or above
``BUSY_UTIL_PCT`` before we have launched anything, means the timings may share the card: the run is
kept and the finding recorded (``data.device_check``), with a warning on the terminal. A CPU run records
``"not checked (cpu)"``; a CUDA run without NVML records why it could not check, never a guess.

A campaign's jobs share one card in turn (``probebook.campaign.job``: a lock file): a job checks after it
holds the lock (``measure.probes.batch_sweep.measure_here``), and its siblings' processes, which may still
hold a CUDA context while they wait or exit, are not "other" work. A job registers its pid in the
campaign's folder of jobs (``sibling``), named to its own process by ``SIBLINGS_ENV``; the check lists
those it saw as ``sibling_processes`` (issue 27: the campaign's own jobs counted as busy).
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from measure.errors import MissingPackage, ProbebookError

log = logging.getLogger(__name__)

BUSY_UTIL_PCT = 5  # an idle H200 reads 0%; anything above a few percent is someone else's kernels
SAMPLES = 5
SAMPLE_S = 0.5  # NVML's utilisation is a rate over its own sample period (1/6 s to 1 s by card)
SIBLINGS_ENV = "PROBEBOOK_CAMPAIGN_JOBS"  # the folder where a campaign's running jobs register their pids


@contextlib.contextmanager
def sibling(folder: Path) -> Iterator[None]:
    """Register this process as one of a campaign's jobs in ``folder`` while the block runs (and name the
    folder in ``SIBLINGS_ENV`` for the checks it makes), so that its siblings' checks leave it out."""
    folder.mkdir(parents=True, exist_ok=True)
    mine = folder / str(os.getpid())
    mine.write_text("")
    before = os.environ.get(SIBLINGS_ENV)
    os.environ[SIBLINGS_ENV] = str(folder)
    try:
        yield
    finally:
        mine.unlink(missing_ok=True)
        if before is None:
            os.environ.pop(SIBLINGS_ENV, None)
        else:
            os.environ[SIBLINGS_ENV] = before


def sibling_pids() -> set[int]:
    """The live processes registered in the folder ``SIBLINGS_ENV`` names, this one left out (empty when unset).

    A file left by a job that died without its ``finally`` names a pid no longer alive and is skipped.
    """
    folder = os.environ.get(SIBLINGS_ENV)
    if not folder:
        return set()
    try:
        names = [p.name for p in Path(folder).iterdir()]
    except OSError:  # the folder went away: no sibling to leave out
        return set()
    found = set()
    for name in names:
        if name.isdigit() and int(name) != os.getpid() and _alive(int(name)):
            found.add(int(name))
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: existence and permission only
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's: a pid reused since, not our job
        return False
    return True


def judge(
    processes: list[dict[str, Any]],
    own_pids: set[int],
    util: list[dict[str, Any]],
    siblings: set[int] | frozenset[int] = frozenset(),
) -> dict[str, Any]:
    """The verdict on one card (pure): other processes on it, the largest utilisation seen, and whether it is busy.

    ``processes``: ``{"pid", "used_memory_bytes", "kind"}`` per context NVML lists; ``util``: readings
    ``{"sm_util_pct", "mem_util_pct"}``. Busy: any process not in ``own_pids`` nor ``siblings`` (the same
    campaign's jobs, waiting for the card or leaving it), or a reading at or above ``BUSY_UTIL_PCT``.
    """
    ours = set(own_pids) | set(siblings)
    others = sorted((p for p in processes if p["pid"] not in ours), key=lambda p: p["pid"])
    kin = sorted((p for p in processes if p["pid"] in set(siblings) - set(own_pids)), key=lambda p: p["pid"])
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
        "sibling_processes": kin,
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
    """What NVML sees on the GPU torch computes on, judged (``judge``); a warning when it is busy. Never raises.

    ``checked_unix`` says when: a campaign job's check comes after it took the card (its row's
    ``device_acquired_unix``)."""
    at = time.time()
    return {**_look(device, samples, sample_s), "checked_unix": at}


def _look(device: str | None, samples: int, sample_s: float) -> dict[str, Any]:
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
    found = judge(processes, {os.getpid()}, util, sibling_pids())
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


def resolve_device(requested: str) -> str:
    """``auto`` -> cuda when torch sees a device, else cpu; ``cuda`` without one is a one-line error."""
    try:
        import torch
    except ImportError:
        raise MissingPackage(
            "probes need the Python package 'torch', which is not installed here: pip install torch "
            "(CPU-only: pip install torch==2.13.0)"
        ) from None
    available = torch.cuda.is_available()
    if requested == "auto":
        return "cuda" if available else "cpu"
    if requested == "cuda" and not available:
        raise ProbebookError("--device cuda: torch sees no CUDA device here; use --device cpu")
    return requested
