"""What the GPU's clocks, power and utilisation did during a probe's timed windows (ARCHITECTURE.md §Pages).

The probe (``--utilisation``) samples NVML on a background thread and keeps one summary per
timed window in ``data.samples`` (``sm_clock_mhz_min``, ``sm_clock_mhz_median``, ``power_w_max``,
``sm_util_pct_median``, ...). These functions reduce the windows of one shape to one line a record can
quote: whether the clock sagged, how close the power came to its limit. Pure: rows in, numbers out.
"""

from __future__ import annotations

import statistics
from typing import Any

from measure.errors import ProbebookError

# The per-window fields the summary reads, and how windows combine into one figure: the lowest clock any
# window saw (a sag shows in the minimum, not the median), the highest power and temperature, and the
# median of the windows' medians for utilisation and the typical clock.
_LOWEST = {"sm_clock_mhz_min": "sm_clock_mhz_min"}
_HIGHEST = {"power_w_max": "power_w_max", "temperature_c_max": "temperature_c_max"}
_MEDIAN = {
    "sm_clock_mhz_median": "sm_clock_mhz_median",
    "mem_clock_mhz_median": "mem_clock_mhz_median",
    "power_w_median": "power_w_median",
    "sm_util_pct_median": "sm_util_pct_median",
    "mem_util_pct_median": "mem_util_pct_median",
}


def _present(rows: list[dict[str, Any]], field: str) -> list[float]:
    return [float(r[field]) for r in rows if isinstance(r.get(field), (int, float))]


def window_summary(samples: list[dict[str, Any]], tokens: int) -> dict[str, Any]:
    """Clocks (MHz), power (W), temperature (°C) and utilisation (%) over the timed windows at ``tokens``.

    Returns ``windows`` and ``readings`` (NVML readings summed over the windows) and, per field, the
    lowest SM clock any window saw, the highest power and temperature, and the median over windows of
    the per-window medians. A field no window recorded is ``None``. Refuses a shape with no windows or
    windows without NVML readings (a run without ``--utilisation``, or on a machine without NVML).
    """
    rows = [r for r in samples if r.get("tokens") == tokens]
    if not rows:
        shapes = sorted({int(r["tokens"]) for r in samples if isinstance(r.get("tokens"), int)})
        raise ProbebookError(f"no timed window at {tokens} tokens (windows at {shapes})")
    readings = _present(rows, "nvml_readings")
    if not readings or sum(readings) == 0:
        raise ProbebookError(f"the windows at {tokens} tokens carry no NVML readings (run with --utilisation on a GPU)")
    out: dict[str, Any] = {"windows": len(rows), "readings": int(sum(readings))}
    for name, field in _LOWEST.items():
        got = _present(rows, field)
        out[name] = min(got) if got else None
    for name, field in _HIGHEST.items():
        got = _present(rows, field)
        out[name] = max(got) if got else None
    for name, field in _MEDIAN.items():
        got = _present(rows, field)
        out[name] = statistics.median(got) if got else None
    return out


def window_intervals(samples: list[dict[str, Any]], tokens: int) -> dict[str, tuple[float, float] | None]:
    """The 95% bootstrap interval of each median-of-window-medians figure ``window_summary`` gives at ``tokens``
    (its unit), the windows resampled (``render.derive.intervals.median_interval``); None with fewer than
    ``MIN_SAMPLES`` windows recording the field. The lowest and highest readings get none: an extreme is a
    reading, not an estimate a resample of windows says anything about."""
    from render.derive import intervals  # numpy and scipy load only where a figure needs them

    rows = [r for r in samples if r.get("tokens") == tokens]
    return {name: intervals.median_interval(_present(rows, field)) for name, field in _MEDIAN.items()}


def clock_sag(summary: dict[str, Any], nominal_mhz: float) -> float | None:
    """How far the lowest SM clock fell below ``nominal_mhz`` (fraction, 0 when it never fell)."""
    lowest = summary.get("sm_clock_mhz_min")
    if lowest is None:
        return None
    if nominal_mhz <= 0:
        raise ProbebookError(f"nominal clock must be positive, got {nominal_mhz}")
    return max(0.0, 1.0 - float(lowest) / float(nominal_mhz))
