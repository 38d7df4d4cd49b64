"""The SM clock a set of timed windows ran at (torch-free: the gemm probe records it, render shows it).

gemm v2 samples the SM clock through NVML in every timed window (``sm_clock_mhz_median`` per window row,
``measure.integrity.utilisation_row``); a same-session ceiling says it ran at the step's clock only by this
number (issue 27, the flagship record's erratum).
"""

from __future__ import annotations

import statistics
from typing import Any


def window_clock_mhz(rows: list[dict[str, Any]]) -> float | None:
    """Median SM clock (MHz) over the windows' own medians; None when no window was sampled."""
    values = [r["sm_clock_mhz_median"] for r in rows if r.get("sm_clock_mhz_median") is not None]
    return float(statistics.median(values)) if values else None
