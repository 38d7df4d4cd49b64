"""What a run's card and host were doing while it measured: its windows' SM clocks and the GPU's busy share (issue 38,
item 5), read from an evidence document, and the marks a number of the run carries for them.

- Clocks: a window's ``sm_clock_mhz`` (read right after it) on the run's rows (``data.samples``, ``data.windows``,
  a point's ``window_checks``), a kernels run's ``data.event_step.sm_clock_mhz`` and an hvp candidate's
  ``warm_sm_clock_mhz``. Older runs have only the utilisation sampler's ``sm_clock_mhz_min`` per window; it stands
  in where it is all there is. ``data.clocks`` (one reading before and after the run, the first often the idle
  clock) is not a window's clock and is not read.
- Busy share: a kernels profile's summed kernel time per step over the event-timed step
  (``data.consistency.ratio``), else the median over the run's windows of the sampler's ``sm_util_pct_median``.
- Host wait: where a kernels profile records its trace's attribution (``data.attribution``, kernels v7 on a GPU), the
  host-bound mark reads its share of the span the GPU sat idle waiting for the host's next launch instead: the busy
  share counts every idle gap against the host, while a gap whose kernel was launched in time (a synchronisation, a
  copy) is the GPU's own.
- A sampler reading below ``SEEN`` busy, taken while a window timed GPU work, read another card or missed the
  window (archived optimizer runs read 0–3% busy at an H200's idle 122 W through every window of a 250m step; a
  step-scaling run reads 0% at the idle 345 MHz for a whole point whose steps took 0.14 s): such windows are not
  read, for the clock or the share.

The rules are ``render.derive.replication``'s (``throttled``, ``sagged``, ``host_bound``).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from render.derive import replication

POINT_FIELDS = (
    "mode", "batch", "tokens", "direction", "memory", "pattern", "bytes", "shape", "m", "n", "k", "arm", "kind",
    "method", "dtype", "gpus", "phase", "label", "model", "context", "microbatch",
)  # fmt: skip
"""Row fields that name a measured point (``render.evidence.series.POINTS``' names, every probe's): a clock sags
within a point's windows, while two points (two GEMM shapes) may run at two steady clocks."""


SEEN = 5.0
"""The sampler's busy percent below which a window's reading is not of the card that ran it (see above): a step
that waits on the host still keeps its GPU busy for more than a twentieth of it."""


def _number(value: Any) -> float | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0
    return float(value) if ok else None


def _tables(data: Any, depth: int = 0) -> Iterator[list[dict[str, Any]]]:
    """Every list of rows (dicts) under ``data``, a few levels deep."""
    if depth > 4:
        return
    if isinstance(data, dict):
        for value in data.values():
            yield from _tables(value, depth + 1)
    elif isinstance(data, list):
        rows = [r for r in data if isinstance(r, dict)]
        if rows:
            yield rows
            for row in rows:
                yield from _tables(row, depth + 1)


def _seen_busy(row: dict[str, Any]) -> bool:
    util = row.get("sm_util_pct_median")
    return not (isinstance(util, (int, float)) and not isinstance(util, bool) and util < SEEN)


def window_clocks(doc: dict[str, Any]) -> list[list[float]]:
    """The SM clocks (MHz) of a run's windows, one list per measured point; the utilisation sampler's per-window
    lowest clock where the run recorded no window clock. Empty when the run has neither."""
    data = doc.get("data")
    groups: dict[tuple[Any, ...], list[float]] = defaultdict(list)
    sampled: dict[tuple[Any, ...], list[float]] = defaultdict(list)
    extra: list[list[float]] = []
    for t, rows in enumerate(_tables(data)):
        for row in rows:
            point = (t, *(repr(row.get(f)) for f in POINT_FIELDS))
            clock = _number(row.get("sm_clock_mhz"))
            if clock is not None:
                groups[point].append(clock)
            low = _number(row.get("sm_clock_mhz_min"))
            if low is not None and _seen_busy(row):
                sampled[point].append(low)
            warm = row.get("warm_sm_clock_mhz")
            if isinstance(warm, list):
                extra.append([c for c in map(_number, warm) if c is not None])
    step = (data or {}).get("event_step") if isinstance(data, dict) else None
    if isinstance(step, dict) and isinstance(step.get("sm_clock_mhz"), list):
        extra.append([c for c in map(_number, step["sm_clock_mhz"]) if c is not None])
    found = [g for g in (*groups.values(), *extra) if g]
    return found if found else [g for g in sampled.values() if g]


def busy_share(doc: dict[str, Any]) -> float | None:
    """The share of a run's step during which the GPU ran a kernel (0–1): a kernels profile's kernel time per step
    over the event-timed step, else the median of the sampler's per-window busy share; None where neither is."""
    data = doc.get("data")
    if not isinstance(data, dict):
        return None
    consistency = data.get("consistency")
    if isinstance(consistency, dict) and _number(consistency.get("ratio")) is not None:
        return float(consistency["ratio"])
    shares = [
        float(row["sm_util_pct_median"]) / 100
        for rows in _tables(data)
        for row in rows
        if _number(row.get("sm_util_pct_median")) is not None and _seen_busy(row)
    ]
    return statistics.median(shares) if shares else None


def host_wait_share(doc: dict[str, Any]) -> float | None:
    """The share (0–1) of a kernels profile's span the GPU sat idle waiting for the host to launch its next kernel
    (``data.attribution.host_wait_share``); None where the run records no attribution."""
    data = doc.get("data")
    attribution = data.get("attribution") if isinstance(data, dict) else None
    share = attribution.get("host_wait_share") if isinstance(attribution, dict) else None
    if isinstance(share, (int, float)) and not isinstance(share, bool) and 0 <= share <= 1:
        return float(share)
    return None


def median_clock(doc: dict[str, Any]) -> float | None:
    """The median SM clock (MHz) over a run's windows (None: none recorded): what a cycle-space comparison scales
    its times by."""
    clocks = [c for group in window_clocks(doc) for c in group]
    return statistics.median(clocks) if clocks else None


def run_marks(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """The marks a number of this run carries, each (mark, what its title says): ``throttled``, ``clock sag``,
    ``host-bound``; empty for a run that ran at its clock with a busy GPU (or recorded neither)."""
    out = []
    clocks = window_clocks(doc)
    top = _number((doc.get("machine") or {}).get("sm_clock_max_mhz"))
    low = replication.throttled([c for g in clocks for c in g], top)
    if low is not None:
        out.append(
            (
                "throttled",
                f"throttled: its lowest window SM clock was {low:.0%} of the card's top {top:.0f} MHz "
                f"(below {replication.THROTTLE:.0%})",
            )
        )
    sag = replication.sagged(clocks)
    if sag is not None:
        out.append(
            (
                "clock sag",
                f"clock sag: a point's lowest window SM clock was {sag:.0%} of its windows' median "
                f"(below {replication.SAG:.0%})",
            )
        )
    waited = host_wait_share(doc)
    if waited is not None:  # the trace says which idle time was the host's: the rest of the step counts as not waiting
        if replication.host_bound(1 - waited) is not None:
            out.append(
                (
                    "host-bound",
                    f"host-bound: the GPU sat idle waiting for the host's next launch {waited:.0%} of the profiled "
                    f"steps (above {1 - replication.HOST_BOUND:.0%}), so the step waits on the host",
                )
            )
        return out
    busy = replication.host_bound(busy_share(doc))
    if busy is not None:
        out.append(
            (
                "host-bound",
                f"host-bound: the GPU was busy {busy:.0%} of the step (below {replication.HOST_BOUND:.0%}), "
                "so the step waits on the host",
            )
        )
    return out
