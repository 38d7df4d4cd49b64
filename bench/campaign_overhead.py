"""A point through a campaign (submitit's local executor) beside the same point run directly, same points, ABBA.

    python3 bench/campaign_overhead.py [--rounds 2] [--batches 1,2] [--context 32] [--json OUT.json]

Direct: ``python -m measure batch-sweep`` with the point's batch as both start and cap (its parent
process plus one point process, as a user runs one point). Campaign: a one-curve campaign of the
same points with ``max_concurrent: 1`` (so no overlap hides the cost), each point's wall time
taken from its receipt (submission to result seen by the runner). Rounds alternate which goes
first. CPU and the tiny preset: the overhead is process starts and imports, which do not depend
on the GPU. Beside wall time each arm reports CPU seconds per point (user + system of every
process it started and reaped: ``getrusage(RUSAGE_CHILDREN)``), which a busy shared host disturbs
far less than wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}
FAST = ["--device", "cpu", "--preset", "tiny", "--warmup", "1", "--windows", "2", "--iters", "1", "--quiet"]


def cpu_children() -> float:
    """User + system CPU seconds of every child process reaped so far (and of their reaped children)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def direct(archive: Path, context: int, batch: int) -> float:
    """Wall seconds of one point run directly by the batch-sweep probe."""
    args = ["--contexts", str(context), "--start-batch", str(batch), "--max-batch", str(batch)]
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "measure", "--archive", str(archive), "batch-sweep", *FAST, *args],
        env=ENV,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - start
    if out.returncode != 0:
        raise SystemExit(f"direct point failed: {out.stderr[-500:]}")
    return wall


def campaign(root: Path, context: int, batches: list[int]) -> tuple[dict[int, float], float, float]:
    """Per-point wall seconds (from the receipts) of one campaign over ``batches``, the whole run's, and
    ``cpu_children()`` as the run started."""
    spec = {
        "campaign": "overhead",
        "probe": "batch-sweep",
        "config": {"device": "cpu", "warmup": 1, "windows": 2, "iters": 1},
        "grid": {"preset": ["tiny"], "context": [context]},
        "walk": {"start_batch": batches[0], "max_tokens": context * batches[-1]},
        "executor": {"max_concurrent": 1, "point_timeout_s": 600, "grace_s": 60},
    }
    (root / "spec.yaml").write_text(json.dumps(spec))
    pb = [sys.executable, "-m", "probebook"]
    subprocess.run(
        [*pb, "campaign", "plan", str(root / "spec.yaml"), "--output", str(root / "c")],
        env=ENV,
        check=True,
        capture_output=True,
    )
    cpu0 = cpu_children()
    start = time.perf_counter()
    subprocess.run([*pb, "campaign", "run", str(root / "c")], env=ENV, check=True, capture_output=True)
    whole = time.perf_counter() - start
    walls = {}
    for file in (root / "c" / "receipts").glob("*.json"):
        receipt = json.loads(file.read_text())
        walls[receipt["batch"]] = receipt["attempts"][-1]["wall_s"]
    return walls, whole, cpu0


def main() -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--batches", default="1,2")
    parser.add_argument("--context", type=int, default=32)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    batches = [int(b) for b in args.batches.split(",")]
    runs: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            order = ("direct", "campaign") if r % 2 == 0 else ("campaign", "direct")
            for arm in order:
                root = Path(tmp) / f"r{r}-{arm}"
                root.mkdir()
                if arm == "direct":
                    cpu0 = cpu_children()
                    walls = {b: direct(root / "archive", args.context, b) for b in batches}
                    whole = sum(walls.values())
                else:
                    walls, whole, cpu0 = campaign(root, args.context, batches)  # CPU from its run, after the plan
                cpu = (cpu_children() - cpu0) / len(batches)
                runs.append(
                    {"round": r, "arm": arm, "point_wall_s": walls, "run_wall_s": whole, "cpu_s_per_point": cpu}
                )
                print(
                    f"round {r} {arm:8} "
                    + " ".join(f"b{b}={walls[b]:.1f}s" for b in batches)
                    + f" run={whole:.1f}s cpu/point={cpu:.1f}s",
                    flush=True,
                )
    per = {
        arm: [w for run in runs if run["arm"] == arm for w in run["point_wall_s"].values()]
        for arm in ("direct", "campaign")
    }
    med = {arm: statistics.median(v) for arm, v in per.items()}
    cpu_med = {arm: statistics.median(run["cpu_s_per_point"] for run in runs if run["arm"] == arm) for arm in per}
    print(
        f"median per point: direct {med['direct']:.2f} s, campaign {med['campaign']:.2f} s, "
        f"overhead {med['campaign'] - med['direct']:+.2f} s per point ({len(per['direct'])} points each); "
        f"CPU per point: direct {cpu_med['direct']:.2f} s, campaign {cpu_med['campaign']:.2f} s "
        f"({cpu_med['campaign'] - cpu_med['direct']:+.2f} s)"
    )
    if args.json:
        out = {"runs": runs, "median_point_s": med, "median_cpu_s_per_point": cpu_med, "load": os.getloadavg()}
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
