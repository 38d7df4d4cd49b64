"""``campaign plan --estimate``: each job's and the whole campaign's wall time, from measured points of the same recipe.

A recipe is (preset, context, dtype, device): the model, the sequence length, the precision and
the GPU (or ``cpu``). Measurements come from finished campaign folders (``--from``): each measured
attempt's job time (``wall_s``: Slurm's or the job's own start to end) and its row's stage timings
(``setup_s``, ``warmup_s``, ``timed_s``, ``observe_s``: start-up, build and compile, warm-up,
windows). A point of a measured recipe at a measured batch is estimated at the median job time
measured there; at another batch of that recipe, at the recipe's median fixed cost (job time less
its timed windows) plus the nearest measured batch's windows scaled by tokens (``batch / measured
batch``: linear, stated). A recipe with no measurement is refused, never extrapolated: the
estimate asks for an explicit ``--time-min`` instead. The campaign's wall time replays the walk
with every point fitting (an upper bound: a curve stops at its OOM): each curve's points in turn,
curves given to ``max_concurrent`` lanes longest first. ``time_min`` is the longest job times
``1 + MARGIN`` rounded up to ``ROUND_MIN`` minutes, never under what the spec's watchdog needs.
"""

from __future__ import annotations

import heapq
import math
import statistics
from pathlib import Path
from typing import Any

from measure.errors import ProbebookError
from measure.evidence.store import Store
from probebook.campaign import receipts
from probebook.campaign import spec as specmod

MARGIN = 0.5  # half again the longest estimated job: a busy node, a slower start, a colder file system
ROUND_MIN = 5  # time_min is rounded up to whole multiples of this many minutes


def recipe(preset: str, context: int, dtype: str, device: str) -> tuple[str, int, str, str]:
    return (preset, int(context), str(dtype), device)


def _device(doc: dict[str, Any]) -> str:
    machine = doc.get("machine") or {}
    return str(machine.get("gpu")) if machine.get("gpu") else "cpu"


def measured(folders: list[Path]) -> dict[tuple[str, int, str, str], dict[int, list[dict[str, float]]]]:
    """recipe -> batch -> one entry per measured attempt (``wall_s``, ``timed_s``)."""
    from probebook.campaign.plan import checked, load_manifest

    out: dict[tuple[str, int, str, str], dict[int, list[dict[str, float]]]] = {}
    for folder in folders:
        load_manifest(folder)  # a campaign folder, or a one-line refusal
        store = Store(Path(folder) / "archive")
        for receipt in receipts.load_all(folder).values():
            for attempt in receipt["attempts"]:
                if attempt.get("state") != "ok" or not attempt.get("evidence") or attempt.get("wall_s") is None:
                    continue
                doc = checked(store, attempt["evidence"])
                row = (doc["data"].get("samples") or [{}])[0]
                dtype = doc["params"].get("dtype")
                key = recipe(doc["params"]["preset"], row["context"], dtype, _device(doc))
                timed = row.get("timed_s") or 0.0
                out.setdefault(key, {}).setdefault(row["batch"], []).append(
                    {"wall_s": float(attempt["wall_s"]), "timed_s": float(timed)}
                )
    return out


def point_estimate(
    key: tuple[str, int, str, str], batch: int, got: dict[tuple[str, int, str, str], dict[int, list[dict[str, float]]]]
) -> tuple[float, str]:
    """Seconds one point's job takes, and how that was found."""
    runs = got[key]
    if batch in runs:
        return statistics.median(r["wall_s"] for r in runs[batch]), "measured"
    fixed = statistics.median(r["wall_s"] - r["timed_s"] for rs in runs.values() for r in rs)
    near = min(runs, key=lambda b: (abs(math.log(b / batch)), -b))
    timed = statistics.median(r["timed_s"] for r in runs[near]) * batch / near
    return fixed + timed, f"scaled from batch {near}"


def lanes(curves: list[float], max_concurrent: int) -> float:
    """When the last curve ends, curves (each its points in turn) given to free lanes longest first."""
    free = [0.0] * max_concurrent
    for length in sorted(curves, reverse=True):
        heapq.heappush(free, heapq.heappop(free) + length)
    return max(free)


def estimate(
    spec_path: Path, folders: list[Path], device: str | None = None, time_min: int | None = None
) -> dict[str, Any]:
    """The estimate of a spec: per point, per curve, the campaign, and the ``time_min`` to ask for."""
    spec = specmod.load(spec_path)
    if spec.walk is None:  # its recipes are (preset, context, dtype, device): what a batch sweep's points have
        raise ProbebookError(
            f"{spec_path}: --estimate times a batch sweep's walk; a {spec.probe} grid has no recipe to look up "
            "(set executor.slurm.time_min yourself)"
        )
    if device is None:
        from measure.machine import fingerprint

        gpu = fingerprint().get("gpu") if spec.config.get("device", "cuda") != "cpu" else None
        device = str(gpu) if gpu else "cpu"
    got = measured(folders)
    points: list[dict[str, Any]] = []
    curves: dict[str, float] = {}
    for p in specmod.points(spec):
        key = recipe(p["preset"], p["context"], p["config"]["dtype"], device)
        if key in got:
            seconds, how = point_estimate(key, p["batch"], got)
        elif time_min is not None:
            seconds, how = time_min * 60.0 / (1 + MARGIN), "--time-min"
        else:
            known = ", ".join(f"{k[0]} s{k[1]} {k[2]} on {k[3]}" for k in sorted(got)) or "none"
            raise ProbebookError(
                f"{spec_path}: no measurement of {p['preset']} at context {p['context']} in {p['config']['dtype']} "
                f"on {device} in {', '.join(map(str, folders)) or 'no --from folder'} (measured: {known}); "
                "give --time-min explicitly rather than extrapolate"
            )
        points.append({"point": p["key"], "curve": p["curve"], "batch": p["batch"], "job_s": seconds, "how": how})
        curves[p["curve"]] = curves.get(p["curve"], 0.0) + seconds
    longest = max(r["job_s"] for r in points)
    floor = math.ceil((spec.executor.point_timeout_s + spec.executor.grace_s) / 60)
    sized = max(floor, ROUND_MIN * math.ceil(longest * (1 + MARGIN) / 60 / ROUND_MIN))
    return {
        "device": device,
        "points": points,
        "curves": curves,
        "campaign_s": lanes(list(curves.values()), spec.executor.max_concurrent),
        "max_concurrent": spec.executor.max_concurrent,
        "longest_job_s": longest,
        "time_min": sized,
        "rule": f"longest job x {1 + MARGIN:g}, rounded up to {ROUND_MIN} min, at least the watchdog's {floor} min",
    }


def render(result: dict[str, Any]) -> str:
    """The estimate as CLI text: a line per point, per curve, then the campaign and the time_min to use."""
    lines = [f"# estimate on {result['device']}; every point assumed to fit (an upper bound)"]
    lines += [f"{r['point']}: {r['job_s']:.1f} s ({r['how']})" for r in result["points"]]
    lines += [f"curve {c}: {s:.1f} s" for c, s in result["curves"].items()]
    lines.append(f"campaign: {result['campaign_s']:.1f} s with max_concurrent {result['max_concurrent']}")
    lines.append(
        f"executor.slurm.time_min: {result['time_min']} (longest job {result['longest_job_s']:.1f} s; {result['rule']})"
    )
    return "\n".join(lines)
