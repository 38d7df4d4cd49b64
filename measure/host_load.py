"""How busy the host was while a probe ran (issue 29): a CPU probe shares the cores with whatever else runs.

On a 2-core machine shared with other work, a tiny-preset CPU probe took up to 50 minutes with a CV up to 0.82
and was stored as ``complete`` with nothing saying why. ``sample()`` reads the load average (``os.getloadavg``:
runnable processes averaged over 1, 5 and 15 minutes) and the cores this process may use, and ``judge`` says
whether other work competed for them; the runner records a reading before and after the body in
``data.host_load`` and warns when the host was busy at the start. Other processes on the GPU are
``measure.device_check``'s.

Each reading also keeps the CPUs' time counters from /proc/stat and their clock from /proc/cpuinfo, and the
runner stores ``steal_share`` between the two readings: the share of the CPUs' time the hypervisor gave to other
guests while the probe ran. Why: a second H100 lease of the same configurations (step-waits-h100 v2) ran its eager
steps markedly slower with the same kernel time on the device and an idle load average in both leases, so the load
average alone could not say whether the host was the slower one; on a virtual machine, stolen time is what another
guest took from it (proc(5), ``/proc/stat``: the eighth field of the ``cpu`` line).
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


CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
"""The first eight counters of /proc/stat's ``cpu`` line, in its order (proc(5)); ``guest`` time, which follows,
is already counted in ``user`` and ``nice``, so these eight are the CPUs' whole time."""


def cpu_times_from(stat: str) -> dict[str, int] | None:
    """The CPUs' time counters (clock ticks, summed over every CPU) from the text of /proc/stat (pure): ``total``
    (the eight ``CPU_FIELDS``), ``idle`` (idle and iowait) and ``steal``; None without a whole ``cpu`` line."""
    for line in stat.splitlines():
        parts = line.split()
        if not parts or parts[0] != "cpu":
            continue
        try:
            values = [int(v) for v in parts[1 : 1 + len(CPU_FIELDS)]]
        except ValueError:
            return None
        if len(values) < len(CPU_FIELDS) or min(values) < 0:
            return None
        named = dict(zip(CPU_FIELDS, values, strict=True))
        return {"total": sum(values), "idle": named["idle"] + named["iowait"], "steal": named["steal"]}
    return None


def steal_share(before: Any, after: Any) -> float | None:
    """The share of the CPUs' time between two readings (``cpu_times_from``) that was stolen: taken by the
    hypervisor for other guests (pure, a fraction of the elapsed ticks); None where either reading is missing or no
    tick elapsed, or the counters went backwards."""
    if not isinstance(before, dict) or not isinstance(after, dict):
        return None
    try:
        elapsed = after["total"] - before["total"]
        stolen = after["steal"] - before["steal"]
    except (KeyError, TypeError):
        return None
    if not isinstance(elapsed, int) or not isinstance(stolen, int) or elapsed <= 0 or stolen < 0:
        return None
    return stolen / elapsed


def cpu_mhz_from(cpuinfo: str) -> float | None:
    """The mean of the ``cpu MHz`` lines of /proc/cpuinfo's text (pure), rounded to 0.1 MHz; None without one. On a
    virtual machine it is often the nominal clock, not the one the core ran at."""
    values = []
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() == "cpu MHz":
            try:
                values.append(float(value))
            except ValueError:
                continue
    return round(sum(values) / len(values), 1) if values else None


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read(1 << 20)  # /proc/cpuinfo on hundreds of cores is a few hundred KB
    except OSError:
        return ""


def sample() -> dict[str, Any]:
    """This host's reading now (``judge``), or why there is none (a platform without load averages); with its CPUs'
    time counters (``cpu_times``) and clock (``cpu_mhz``) where /proc has them (None elsewhere)."""
    try:
        load = os.getloadavg()
    except (AttributeError, OSError):  # Windows has no load average
        return {"busy": None, "reason": "not checked (no load average on this platform)"}
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return {
        **judge(load, cores),
        "cpu_times": cpu_times_from(_read("/proc/stat")),
        "cpu_mhz": cpu_mhz_from(_read("/proc/cpuinfo")),
    }
