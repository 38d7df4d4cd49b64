"""Estimate a campaign's wall time under batch-sweep version 2 from an archived campaign's per-point figures.

    tar -xzf bench/results/campaign-h200-state.tar.gz -C /tmp   # the H200 run's folder (receipts, evidence)
    python3 bench/campaign_estimate.py /tmp/build/campaign-h200 [--window-s 0.2] [--max-concurrent 3,4,5,6]

An estimate, not a measurement: every archived point keeps its measured setup, warm-up, step time,
window count (five, or ten where its CV added windows), process start and imports; what version 2
changes is recomputed: a window lasts ``calls_per_window(window_s, step) x step`` instead of the
archived calls, and the observe step holds the device for one step while its profile is parsed
after the device is given back (``--observe-kept`` is the fraction of the archived observe time
beyond one step still spent on the device; the parse is most of it). A curve the archived run did
not finish is left out and named. Then the runner is replayed: ``max_concurrent`` jobs, each curve
one point at a time, a job ready for the device once its process has started and imported, the
device given to the job that has waited longest, the runner polling every 0.2 s.
"""

from __future__ import annotations

import argparse
import heapq
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from measure.evidence.store import Store
from measure.timing import calls_per_window
from probebook.campaign import receipts
from probebook.campaign.plan import load_manifest
from probebook.campaign.runner import POLL_S


def point_costs(rows: list[dict], window_s: float, observe_kept: float) -> dict[str, dict[str, float]]:
    """Per point: seconds before it can take the device, on the device (old and new), and after it."""
    out = {}
    for r in rows:
        held = (r["device_released_unix"] or 0) - (r["device_acquired_unix"] or 0)
        if r["status"] != "ok":
            out[r["point"]] = {"old": held, "new": held}
            continue
        phases = sum(r.get(k) or 0.0 for k in ("setup_s", "warmup_s", "timed_s", "observe_s"))
        step = r["step_s"]
        timed = r["windows"] * calls_per_window(window_s, step, 1) * step
        observe = step + observe_kept * max(0.0, (r["observe_s"] or 0.0) - step)
        new = (r["setup_s"] or 0) + (r["warmup_s"] or 0) + timed + observe + max(0.0, held - phases)
        out[r["point"]] = {"old": held, "new": new, "trace": max(0.0, (r["observe_s"] or 0.0) - observe)}
    return out


def replay(curves: list[list[str]], start: dict[str, float], device: dict[str, float], after: dict[str, float], n: int):
    """Wall seconds of the runner's schedule, and the device's busy seconds."""
    t, busy = 0.0, 0.0
    nxt = [0] * len(curves)
    live: dict[int, str] = {}
    ready: list[tuple[float, int]] = []  # (time ready for the device, curve)
    ends: list[tuple[float, int]] = []  # (time the runner sees the result, curve)
    device_free = 0.0

    def submit(now: float) -> None:
        for c, keys in enumerate(curves):
            if len(live) >= n:
                return
            if c not in live and nxt[c] < len(keys):
                live[c] = keys[nxt[c]]
                heapq.heappush(ready, (now + start[keys[nxt[c]]], c))

    submit(0.0)
    while live:
        while ready:  # the device goes to the job that has waited longest
            at, c = heapq.heappop(ready)
            begin = max(at, device_free)
            device_free = begin + device[live[c]]
            busy += device[live[c]]
            heapq.heappush(ends, (device_free + after[live[c]] + POLL_S / 2, c))
        t, c = heapq.heappop(ends)
        nxt[c] += 1
        del live[c]
        submit(t)
    return t, busy


def main() -> None:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path, help="a campaign folder that has run (receipts and its archive)")
    ap.add_argument("--window-s", type=float, default=0.2)
    ap.add_argument("--observe-kept", type=float, default=0.0)
    ap.add_argument("--max-concurrent", default="3,4,5,6")
    args = ap.parse_args()
    _, manifest = load_manifest(args.folder)
    store = Store(args.folder / "archive")
    rows, start, after = {}, {}, {}
    for key, receipt in receipts.load_all(args.folder).items():
        result, attempt = receipt.get("result"), receipt["attempts"][-1]
        if not result:
            continue
        rows[key] = {**json.loads(store.read_bytes(result["evidence"]))["data"]["samples"][0], "point": key}
        # submission to ready for the device (controller and interpreter start, imports), and device release to
        # the runner's record of the result (the job's exit, the runner's poll), as the archived run spent them
        start[key] = result["job_started_unix"] - attempt["submitted_unix"] + result["imports_s"]
        after[key] = attempt["ended_unix"] - rows[key]["device_released_unix"]
    costs = point_costs(list(rows.values()), args.window_s, args.observe_kept)
    done, unfinished = [], []
    for curve in manifest["data"]["curves"]:
        keys = [k for k in curve["points"] if k in rows]
        if keys and rows[keys[-1]]["status"] == "oom":
            done.append(keys)
        else:
            unfinished.append(curve["curve"])
    points = [k for keys in done for k in keys]
    old_dev = {k: costs[k]["old"] for k in points}
    new_dev = {k: costs[k]["new"] for k in points}
    new_after = {k: after[k] + costs[k].get("trace", 0.0) for k in points}
    print(
        f"{len(points)} points on {len(done)} finished curves; left out (unfinished): {', '.join(unfinished) or 'none'}"
    )
    print(
        f"per point: start+imports {sum(start[k] for k in points) / len(points):.2f} s; device "
        f"archived {sum(old_dev.values()) / len(points):.2f} s, version 2 (window_s {args.window_s:g}) "
        f"{sum(new_dev.values()) / len(points):.2f} s"
    )
    for n in [int(v) for v in args.max_concurrent.split(",")]:
        old_wall, old_busy = replay(done, start, old_dev, after, n)
        new_wall, new_busy = replay(done, start, new_dev, new_after, n)
        print(
            f"max_concurrent {n}: archived {old_wall:6.0f} s wall ({old_busy:4.0f} s device); "
            f"version 2 {new_wall:6.0f} s wall ({new_busy:4.0f} s device)"
        )


if __name__ == "__main__":
    main()
