"""Peak memory of a stretch of work, on CUDA and on CPU, and how it was measured.

* CUDA: ``torch.cuda.reset_peak_memory_stats`` then ``torch.cuda.max_memory_allocated``, the
  caching allocator's high-water mark of bytes held by live tensors (weights, optimizer state,
  activations, workspaces; not the CUDA context, not cached-but-free blocks, which are
  ``max_memory_reserved``).
* CPU (Linux only): the process's peak resident set size. Writing ``5`` to
  ``/proc/self/clear_refs`` resets the kernel's high-water mark ``VmHWM`` to the current RSS
  (proc(5), "clear_refs", Linux >= 4.0); ``VmHWM`` read afterwards is the peak since the reset.
  It includes the interpreter, the loaded libraries and the weights, so only differences between
  points are about the work. glibc keeps freed heap memory and, by default, raises its mmap
  threshold to the size of the largest freed block (mallopt(3), M_MMAP_THRESHOLD), after which a
  tensor freed and re-allocated reuses retained heap and leaves RSS flat. ``CPU_ENV`` fixes the
  threshold, which disables that adjustment: every block of 128 KiB or more is its own mapping,
  returned to the kernel when freed, so RSS follows the live large tensors.

Nothing here is a guess: a reading that cannot be made raises a one-line ``ProbebookError``.
"""

from __future__ import annotations

import os
import resource
from pathlib import Path
from typing import Any

from measure.errors import ProbebookError

CUDA_METHOD = "torch.cuda.max_memory_allocated"
CPU_METHOD = "linux-vmhwm"
MMAP_THRESHOLD_BYTES = 128 * 1024  # glibc's default M_MMAP_THRESHOLD, fixed so it no longer adapts
# environment for a CPU point process; read by glibc at start-up, so it must be set before exec
CPU_ENV = {"MALLOC_MMAP_THRESHOLD_": str(MMAP_THRESHOLD_BYTES)}
# with an address-space limit: one malloc arena. glibc gives a thread its own arena on its first
# malloc and reserves 64 MiB of address space for each (mallopt(3), M_ARENA_MAX), so with several
# the space a point maps would depend on thread timing, not on its tensors
LIMIT_ENV = {"MALLOC_ARENA_MAX": "1"}

_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")
_MEMINFO = Path("/proc/meminfo")


def status_bytes(text: str, key: str) -> int:
    """A ``/proc/<pid>/status`` or ``/proc/meminfo`` field given in kB, as bytes (1 kB there = 1024 bytes)."""
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        if name.strip() == key:
            parts = rest.split()
            if len(parts) == 2 and parts[1] == "kB" and parts[0].isdigit():
                return int(parts[0]) * 1024
            raise ProbebookError(f"{key}: unexpected value {rest.strip()!r} (expected '<n> kB')")
    raise ProbebookError(f"no {key} line: peak memory on CPU needs Linux /proc")


def method(device: str) -> str:
    """How ``read`` measures the peak on ``device``."""
    return CUDA_METHOD if device == "cuda" else CPU_METHOD


def reset(device: str) -> None:
    """Start a new peak: from now on ``read`` reports the high-water mark since this call."""
    if device == "cuda":
        import torch

        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        return
    try:
        _CLEAR_REFS.write_text("5")
    except OSError as exc:
        raise ProbebookError(
            f"cannot reset the peak RSS ({_CLEAR_REFS}: {exc.strerror}); peak memory on CPU needs Linux >= 4.0"
        ) from None


def read(device: str) -> dict[str, Any]:
    """``{peak_bytes, reserved_bytes, peak_method}`` since the last ``reset`` (reserved: CUDA cache high-water mark)."""
    if device == "cuda":
        import torch

        torch.cuda.synchronize()
        return {
            "peak_bytes": int(torch.cuda.max_memory_allocated()),
            "reserved_bytes": int(torch.cuda.max_memory_reserved()),
            "peak_method": CUDA_METHOD,
        }
    try:
        text = _STATUS.read_text()
    except OSError as exc:
        raise ProbebookError(f"cannot read {_STATUS} ({exc.strerror}); peak memory on CPU needs Linux /proc") from None
    return {"peak_bytes": status_bytes(text, "VmHWM"), "reserved_bytes": None, "peak_method": CPU_METHOD}


def device_memory(device: str) -> dict[str, int | None]:
    """``{free_bytes, total_bytes}`` of the device now: CUDA ``mem_get_info``; on CPU MemAvailable/MemTotal."""
    if device == "cuda":
        import torch

        free, total = torch.cuda.mem_get_info()
        return {"free_bytes": int(free), "total_bytes": int(total)}
    try:
        text = _MEMINFO.read_text()
    except OSError:
        return {"free_bytes": None, "total_bytes": None}
    return {"free_bytes": status_bytes(text, "MemAvailable"), "total_bytes": status_bytes(text, "MemTotal")}


def limit_address_space(extra_bytes: int) -> int:
    """Cap this process's address space at its current size plus ``extra_bytes``; return the cap (bytes).

    A real limit (``RLIMIT_AS``, setrlimit(2)): an allocation past it fails in the allocator exactly as
    it would on a smaller machine. It is how a CPU sweep gets a genuine out-of-memory boundary.
    """
    if extra_bytes < 1:
        raise ProbebookError(f"address-space headroom must be >= 1 byte, got {extra_bytes}")
    cap = status_bytes(_STATUS.read_text(), "VmSize") + extra_bytes
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY and cap > hard:
        raise ProbebookError(f"address-space cap {cap} is above this process's hard limit {hard}")
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    return cap


def cpu_env(limited: bool = False) -> dict[str, str]:
    """``CPU_ENV`` (and ``LIMIT_ENV`` when an address-space limit applies), except variables the user already set."""
    wanted = {**CPU_ENV, **(LIMIT_ENV if limited else {})}
    return {k: v for k, v in wanted.items() if k not in os.environ}


PHASES = ("setup", "warmup", "capture")
"""The phases before a measurement whose peaks are kept apart from it: setup (model and batch built),
warm-up (compilation, autotuning and the allocator's first blocks land here), CUDA-graph capture."""


class PhasePeaks:
    """The peak of each phase before the measurement, read and reset at the phase's end (issue 27).

    Without it the reset after warm-up drops every earlier peak, and a compile or capture that needs more
    memory than the steady state would go unrecorded. ``peaks`` maps ``<phase>_peak_bytes`` to bytes.
    """

    def __init__(self, device: str):
        self.device = device
        self.peaks: dict[str, int] = {}

    def end(self, phase: str) -> None:
        """Record the peak since the last reset as ``phase``'s, then start a new peak."""
        if phase not in PHASES:
            raise ValueError(f"unknown phase {phase!r}; one of {', '.join(PHASES)}")
        self.peaks[f"{phase}_peak_bytes"] = read(self.device)["peak_bytes"]
        reset(self.device)
