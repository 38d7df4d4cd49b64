"""How busy the host was while a probe ran (issue 29): a CPU probe shares the cores with whatever else runs.

On a 2-core machine shared with other work, a tiny-preset CPU probe took up to 50 minutes with a CV up to 0.82
and was stored as ``complete`` with nothing saying why. ``sample()`` reads the load average (``os.getloadavg``:
runnable processes averaged over 1, 5 and 15 minutes) and the cores this process may use, and ``judge`` says
whether other work competed for them; the runner records a reading before and after the body in
``data.host_load`` and warns when the host was busy at the start. Other processes on the GPU are
``measure.device_check``'s.
"""

from __future__ import annotations

import os
from typing import Any

BUSY_LOAD_PER_CORE = 0.75
"""A 1-minute load average at or above this many runnable processes per usable core, before the probe's own work
starts, means other work competes for the cores: a quiet machine reads well under it (0.0-0.3 per core)."""


def judge(load: tuple[float, float, float], cores: int) -> dict[str, Any]:
    """One reading (pure): the three load averages (processes), the usable cores and whether the host is busy."""
    one, five, fifteen = load
    busy = one >= BUSY_LOAD_PER_CORE * cores
    return {
        "load_1min": round(one, 2),
        "load_5min": round(five, 2),
        "load_15min": round(fifteen, 2),
        "cores": cores,
        "busy_load_per_core": BUSY_LOAD_PER_CORE,
        "busy": busy,
    }


def sample() -> dict[str, Any]:
    """This host's reading now (``judge``), or why there is none (a platform without load averages)."""
    try:
        load = os.getloadavg()
    except (AttributeError, OSError):  # Windows has no load average
        return {"busy": None, "reason": "not checked (no load average on this platform)"}
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return judge(load, cores)
