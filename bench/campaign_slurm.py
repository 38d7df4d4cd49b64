"""The same tiny CPU campaign through the local executor and through Slurm, and the runner's sacct calls per second.

    sudo .ci/slurm up
    python3 bench/campaign_slurm.py [--source DIR] [--max-concurrent 2,12] [--executors local,slurm] [--out FILE]

Each run plans a fresh campaign (preset tiny, CPU, one curve per context) and runs it with
``probebook campaign run``; a ``sacct`` on PATH that logs each call and then runs the real one
counts the runner's calls (every call, the runner's only: nothing else runs sacct meanwhile).
``--source DIR`` runs the probebook checkout at DIR instead (to measure an older runner: its
spec has no ``poll_s``, so none is written). Prints one JSON line per run and writes them all to
``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CONTEXTS = [32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120]  # twelve curves, so twelve jobs can be in flight


def spec(max_concurrent: int) -> dict:
    return {
        "campaign": "bench-slurm",
        "probe": "batch-sweep",
        "config": {"device": "cpu", "warmup": 1, "windows": 2, "iters": 1},
        "grid": {"preset": ["tiny"], "context": CONTEXTS},
        "walk": {"start_batch": 1, "max_tokens": 128},
        "executor": {
            "max_concurrent": max_concurrent,
            "point_timeout_s": 600,
            "grace_s": 60,
            "slurm": {"gpus": 0, "cpus": 1, "mem_gb": 2, "time_min": 15},
        },
    }


def one(source: Path, executor: str, max_concurrent: int, work: Path) -> dict:
    folder = work / f"{executor}-{max_concurrent}"
    (work / "bin").mkdir(exist_ok=True)
    calls = work / f"sacct-{executor}-{max_concurrent}.log"
    real = shutil.which("sacct") or "sacct"
    wrapper = work / "bin" / "sacct"
    wrapper.write_text(f'#!/bin/sh\necho "$(date +%s.%N)" >> "$SACCT_LOG"\nexec {real} "$@"\n')
    wrapper.chmod(0o755)
    env = {**os.environ, "PYTHONPATH": str(source), "PATH": f"{work / 'bin'}:{os.environ['PATH']}"}
    env["SACCT_LOG"] = str(calls)
    path = work / f"spec-{executor}-{max_concurrent}.yaml"
    path.write_text(json.dumps(spec(max_concurrent)))
    cli = [sys.executable, "-m", "probebook", "campaign"]
    # run in the checkout: `python -m` puts the working directory first on the import path
    subprocess.run(
        [*cli, "plan", str(path), "--output", str(folder)], env=env, cwd=source, check=True, capture_output=True
    )
    started = time.perf_counter()
    done = subprocess.run(
        [*cli, "run", str(folder), "--executor", executor], env=env, cwd=source, capture_output=True, text=True
    )
    wall = time.perf_counter() - started
    n = len(calls.read_text().splitlines()) if calls.exists() else 0
    points = len(list((folder / "receipts").glob("*.json")))
    return {
        "source": str(source),
        "executor": executor,
        "max_concurrent": max_concurrent,
        "rc": done.returncode,
        "points": points,
        "wall_s": round(wall, 2),
        "sacct_calls": n,
        "sacct_calls_per_s": round(n / wall, 3),
    }


def main() -> int:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=REPO, help="the probebook checkout to run (default: this one)")
    parser.add_argument("--max-concurrent", default="2,12", help="comma-separated (default: 2,12)")
    parser.add_argument("--executors", default="local,slurm", help="comma-separated (default: local,slurm)")
    parser.add_argument("--out", type=Path, help="write the runs here as a JSON list")
    args = parser.parse_args()
    runs = []
    with tempfile.TemporaryDirectory(prefix="bench-slurm-") as tmp:
        for executor in args.executors.split(","):
            for n in [int(v) for v in args.max_concurrent.split(",")]:
                runs.append(one(args.source.resolve(), executor, n, Path(tmp)))
                print(json.dumps(runs[-1]), flush=True)
    if args.out:
        args.out.write_text(json.dumps(runs, indent=1) + "\n")
    return 0 if all(r["rc"] == 0 for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
