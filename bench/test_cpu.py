"""``bench/test_cpu.py``: the README's test command's CPU seconds and wall time, two revisions side by side in one run.

Each revision is cloned afresh (``git clone --shared`` of this repository, then a checkout of the revision: what
a new user has, no ``__pycache__`` and no pytest cache) and its tests are run as the README runs them
(``python -m pytest -n auto``, with pyproject.toml's selection, which leaves out ``-m slow``) but with ``-n 2``:
the CI machine has 2 cores, so ``-n auto`` is ``-n 2`` there, and a fixed count makes runs on other machines
comparable. The installed packages are this interpreter's; ``PYTHONPATH`` puts the clone's own code first.

CPU is the user and system seconds of pytest and every process it waited for (``os.wait4``'s rusage, what
``/usr/bin/time`` reports): the xdist workers, the ``probebook`` children, Chromium. The arms run one after the
other (``--repeat`` alternates them, A B B A ...); the load average before and after each run is kept with it,
since the machine may be shared. It writes ``bench/results/test-cpu.json`` and prints one line per run.

    python bench/test_cpu.py                      # before: main's merge base with HEAD; after: HEAD
    python bench/test_cpu.py --before v1 --after HEAD --repeat 2
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "bench" / "results" / "test-cpu.json"
SUMMARY = re.compile(r"^=+ (.*\d+ (?:passed|failed).*) in [\d.]+s", re.MULTILINE)


def git(*args: str, cwd: Path = REPO) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def checkout(rev: str, where: Path) -> str:
    """A fresh clone of this repository at ``rev`` in ``where``; returns the commit's full hash."""
    commit = git("rev-parse", "--verify", f"{rev}^{{commit}}")
    git("clone", "-q", "--shared", "--no-checkout", str(REPO), str(where))
    git("checkout", "-q", "--detach", commit, cwd=where)
    return commit


def counts(summary: str) -> dict[str, int]:
    """``12 passed, 3 skipped, 1 deselected`` as ``{"passed": 12, ...}``."""
    return {word: int(n) for n, word in re.findall(r"(\d+) (\w+)", summary)}


def run_tests(clone: Path, workers: int, extra: list[str]) -> dict[str, Any]:
    """The README's test command in ``clone``: wall seconds, user and system CPU seconds, exit status, counts."""
    env = {**os.environ, "PYTHONPATH": str(clone)}
    env.pop("PYTEST_ADDOPTS", None)
    cmd = [sys.executable, "-m", "pytest", "-n", str(workers), "-p", "no:cacheprovider", *extra]
    load_before = os.getloadavg()[0]
    start = time.perf_counter()
    log = clone / "test-run.log"
    with log.open("w") as sink:
        proc = subprocess.Popen(cmd, cwd=clone, env=env, stdout=sink, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    text = log.read_text(errors="replace")
    found = SUMMARY.findall(text)
    return {
        "command": " ".join(["python", "-m", "pytest", "-n", str(workers), "-p", "no:cacheprovider", *extra]),
        "exit_status": proc.returncode,
        "wall_s": round(wall, 1),
        "user_s": round(usage.ru_utime, 1),
        "system_s": round(usage.ru_stime, 1),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
        "max_rss_mib": round(usage.ru_maxrss / 1024, 1),
        "load_before": round(load_before, 2),
        "load_after": round(os.getloadavg()[0], 2),
        "counts": counts(found[-1]) if found else {},
        "summary": found[-1] if found else text.strip().splitlines()[-1:],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--before", help="the revision before (default: the merge base of main and HEAD)")
    parser.add_argument("--after", default="HEAD", help="the revision after (default: HEAD)")
    parser.add_argument("--workers", type=int, default=2, help="xdist workers (default 2: the CI machine's cores)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each arm, alternated A B B A ... (default 1)")
    parser.add_argument("--out", type=Path, default=OUT, help=f"the JSON results (default {OUT.relative_to(REPO)})")
    parser.add_argument("pytest_args", nargs="*", help="more pytest arguments, after --")
    args = parser.parse_args(argv)
    before = args.before or git("merge-base", "main", "HEAD")
    arms = {"before": before, "after": args.after}
    work = Path(tempfile.mkdtemp(prefix="test-cpu-"))
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in arms}
    commits: dict[str, str] = {}
    try:
        for i in range(args.repeat):
            for name in list(arms) if i % 2 == 0 else list(arms)[::-1]:
                clone = work / f"{name}-{i}"
                commits[name] = checkout(arms[name], clone)
                run = run_tests(clone, args.workers, args.pytest_args)
                runs[name].append(run)
                print(
                    f"{name:6} {commits[name][:10]}  {run['cpu_s']:7.1f} s CPU ({run['user_s']:.1f} user,"
                    f" {run['system_s']:.1f} system)  {run['wall_s']:7.1f} s wall  exit {run['exit_status']}"
                    f"  load {run['load_before']:.1f}->{run['load_after']:.1f}  {run['summary']}",
                    flush=True,
                )
                shutil.rmtree(clone, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result = {
        "what": "the README's test command (pytest with pyproject.toml's selection, -n WORKERS), each revision in a "
        "fresh clone, run one after the other on one machine; cpu_s is user + system of pytest and its children",
        "cores": os.cpu_count(),
        "workers": args.workers,
        "python": sys.version.split()[0],
        # both change what each new interpreter costs: without bytecode files every process compiles the project again
        "environment": {name: os.environ.get(name) for name in ("PYTHONDONTWRITEBYTECODE", "OMP_NUM_THREADS")},
        "arms": {
            name: {
                "revision": arms[name],
                "commit": commits.get(name),
                "median_cpu_s": statistics.median(r["cpu_s"] for r in runs[name]) if runs[name] else None,
                "median_wall_s": statistics.median(r["wall_s"] for r in runs[name]) if runs[name] else None,
                "runs": runs[name],
            }
            for name in arms
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    b, a = result["arms"]["before"], result["arms"]["after"]
    if b["median_cpu_s"] and a["median_cpu_s"]:
        print(
            f"after/before: CPU {a['median_cpu_s'] / b['median_cpu_s']:.2f}x, wall "
            f"{a['median_wall_s'] / b['median_wall_s']:.2f}x; written to {args.out}"
        )
    failed = [name for name in arms for r in runs[name] if r["exit_status"] != 0]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
