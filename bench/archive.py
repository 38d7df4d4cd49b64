"""Benchmark the evidence archive: import N documents, then verify them, beside ``sha256sum``.

Run: ``python bench/archive.py [--n 10000] [--keep DIR]``. Everything is timed in one run on
the same files, so the ratio compares like with like (same disk, same page cache state):

- import: ``Store.put`` of N distinct, valid evidence documents (validate, canonicalise,
  temp file + fsync + link + folder fsync for each);
- verify, baseline: the loop the store started with (``open`` + ``hashlib.file_digest`` per
  ``Path``), kept here for the before/after comparison;
- verify: ``Store.verify()`` as shipped (one listing + ``os.open``/``os.read`` per file);
- sha256sum: the coreutils tool over the same files, in argument batches like ``xargs``
  (its output is checked against the names once, untimed, so it is known to do the same job);
- the command: ``probebook archive verify`` as a user runs it, a new process that starts Python,
  lists the archive, hashes every file and parses and validates every document
  (``measure.evidence.archive_check``: one listing, one read per file, orjson where exact, both cores where
  it pays), with its bytecode cached as after an install, timed beside ``sha256sum`` run as a
  process the same way and beside a Python process that only starts, alternated ABBA.

The goals: ``Store.verify`` within 2x of ``sha256sum`` (issue 2), and the command within 2x of it
(issue 15), each the ratio of the fastest runs; the CPU seconds of both processes are printed too
(on a shared machine, wall time includes waiting for a core). The evidence written here is
synthetic and lives in a temporary folder that is removed afterwards (unless ``--keep``).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from measure.evidence import archive_check  # noqa: E402
from measure.evidence.envelope import Evidence  # noqa: E402
from measure.evidence.store import Store  # noqa: E402


def make_evidence(i: int) -> Evidence:
    """A distinct, valid step-scaling document of realistic size (~1.5 kB), fixed timestamps."""
    samples = [
        {"tokens": 128 * (k + 1), "step_s": round(0.01 + 0.0007 * k + 1e-7 * i, 9), "window": k} for k in range(24)
    ]
    return Evidence(
        probe="step-scaling",
        probe_version=1,
        params={"preset": "tiny", "seed": i, "bench": True},
        data={"samples": samples},
        machine={"gpu": None, "gpu_count": 0, "note": "bench: synthetic"},
        code={"probebook": "bench"},
        origin={"kind": "imported", "source": "bench/archive.py synthetic"},
        created_at="2026-11-29T08:00:00Z",
        notes="synthetic benchmark document; never published",
    )


def verify_baseline(store: Store) -> int:
    """The store's first verify: one open and one ``hashlib.file_digest`` per file, sequential."""
    bad = 0
    for path in store.iter_paths():
        with open(path, "rb") as fh:
            if hasattr(hashlib, "file_digest"):  # Python >= 3.11, as the store used
                hexd = hashlib.file_digest(fh, "sha256").hexdigest()
            else:
                hexd = hashlib.sha256(fh.read()).hexdigest()
        bad += hexd != path.parent.name + path.name[:-5]
    return bad


def sha256sum_run(paths: list[Path]) -> list[bytes]:
    """Hash every file with coreutils ``sha256sum`` (argv batches, like ``xargs -0``); raw output."""
    batch = 2000  # keeps each argv well under ARG_MAX
    return [
        subprocess.run(["sha256sum", "--", *map(str, paths[i : i + batch])], capture_output=True, check=True).stdout
        for i in range(0, len(paths), batch)
    ]


def sha256sum_mismatches(outputs: list[bytes]) -> int:
    """Names in ``sha256sum`` output whose digest differs from the file name (done untimed)."""
    bad = 0
    for out in outputs:
        for line in out.decode().splitlines():
            hexd, name = line.split("  ", 1)
            p = Path(name)
            bad += hexd != p.parent.name + p.name[:-5]
    return bad


def command_env(pycache: Path) -> dict[str, str]:
    """The environment the command runs in: this repository's code, its bytecode cached as after an install.

    ``PYTHONDONTWRITEBYTECODE`` (set on some machines) is dropped and ``PYTHONPYCACHEPREFIX`` points at a
    temporary folder, so the first (untimed) run writes the bytecode that the timed runs read, as a user's
    runs after ``pip install`` do, and nothing is written into the repository.
    """
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    path = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return {**env, "PYTHONPATH": path, "PYTHONPYCACHEPREFIX": str(pycache)}


def verify_command(root: Path, env: dict[str, str]) -> float:
    """CPU seconds of ``probebook archive verify`` as a new process (it must report the archive clean)."""
    cmd = [sys.executable, "-m", "probebook", "--archive", str(root), "archive", "verify"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0 or not out.stdout.startswith("ok: "):
        sys.exit(f"probebook archive verify failed: {out.stdout[-300:]}{out.stderr[-300:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def python_start(env: dict[str, str]) -> float:
    """CPU seconds of a Python process that starts and does nothing (``python -c pass``): the command's floor."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", "pass"], check=True, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def sha256sum_cpu(paths: list[Path]) -> float:
    """CPU seconds of ``sha256sum_run`` over ``paths`` (its processes)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    sha256sum_run(paths)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def command_beside_sha256sum(
    root: Path, paths: list[Path], repeat: int, env: dict[str, str]
) -> dict[str, list[tuple[float, float]]]:
    """(wall s, CPU s) of each run of the command, of sha256sum and of a bare Python start, alternated ABBA."""
    runs: dict[str, list[tuple[float, float]]] = {"command": [], "sha256sum": [], "python": []}
    verify_command(root, env)  # untimed: writes the bytecode cache, and checks the command finds the archive clean
    for i in range(2 * max(repeat, 2)):
        order = ("command", "sha256sum", "python") if i % 2 == 0 else ("python", "sha256sum", "command")
        for which in order:
            if which == "command":
                runs[which].append(timed(verify_command, root, env))
            elif which == "sha256sum":
                runs[which].append(timed(sha256sum_cpu, paths))
            else:
                runs[which].append(timed(python_start, env))
    return runs


def timed(fn, *args):
    t0 = time.perf_counter()
    result = fn(*args)
    return time.perf_counter() - t0, result


def best_of(repeat: int, fn, *args) -> tuple[float, object]:
    """The fastest of ``repeat`` runs (least disturbed by other work on the machine) and its result."""
    runs = [timed(fn, *args) for _ in range(repeat)]
    return min(runs, key=lambda r: r[0])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        allow_abbrev=False,
        description=__doc__.split("\n\n")[0],
        epilog="example:\n  python bench/archive.py --n 10000",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--n", type=int, default=10_000, help="documents to import and verify (default 10000)")
    ap.add_argument("--repeat", type=int, default=3, help="verify passes per method; the fastest is reported")
    ap.add_argument("--keep", type=Path, help="build the archive in this (new) folder and keep it")
    ap.add_argument("--reuse", type=Path, help="time the archive an earlier --keep run left here (no import row)")
    args = ap.parse_args(argv)
    if args.n < 1 or args.repeat < 1:
        ap.error("--n and --repeat must be at least 1")
    if shutil.which("sha256sum") is None:
        print("bench/archive.py: sha256sum (coreutils) not found; cannot compare", file=sys.stderr)
        return 2
    if args.reuse and not (args.reuse / "evidence").is_dir():
        print(f"bench/archive.py: {args.reuse} holds no archive; make one with --keep", file=sys.stderr)
        return 2
    if args.keep and args.keep.exists():
        print(f"bench/archive.py: {args.keep} exists; give a new folder to --keep", file=sys.stderr)
        return 2
    tmp = None if args.keep or args.reuse else tempfile.mkdtemp(prefix="probebook-bench-")
    pycache = tempfile.mkdtemp(prefix="probebook-bench-pycache-")
    root = args.reuse or args.keep or Path(tmp) / "archive"
    try:
        store = Store(root)
        rows: dict[str, float] = {}
        if not args.reuse:
            docs = [make_evidence(i) for i in range(args.n)]
            rows["import (Store.put, fsync per file)"], ids = timed(lambda: [store.put(d) for d in docs])
            assert len(set(ids)) == args.n, "the documents were meant to be distinct"
        paths = list(store.iter_paths())
        args.n = len(paths)
        size = sum(p.stat().st_size for p in paths)
        # correctness first, untimed: every method must find the fresh archive clean
        assert sha256sum_mismatches(sha256sum_run(paths)) == 0
        assert verify_baseline(store) == 0 and store.verify() == [] and store.invalid() == []

        rows["verify, baseline loop (before)"], _ = best_of(args.repeat, verify_baseline, store)
        rows["Store.verify() (shipped)"], _ = best_of(args.repeat, store.verify)
        rows["sha256sum (coreutils, batched)"], _ = best_of(args.repeat, sha256sum_run, paths)
        rows["verify() + invalid() (before)"], _ = best_of(args.repeat, lambda: (store.verify(), store.invalid()))
        rows["archive_check.check() (one pass)"], _ = best_of(args.repeat, archive_check.check, store)
        runs = command_beside_sha256sum(root, paths, args.repeat, command_env(Path(pycache)))

        print(
            f"archive benchmark: {args.n} documents of {size / args.n:.0f} B on average, "
            f"{os.cpu_count()} CPU cores; verify rows: fastest of {args.repeat}, warm page cache"
        )
        print(f"{'step':36s} {'seconds':>9s} {'files/s':>10s}")
        for name, dt in rows.items():
            print(f"{name:36s} {dt:9.3f} {args.n / dt:10.0f}")
        ref = rows["sha256sum (coreutils, batched)"]
        before = rows["verify, baseline loop (before)"] / ref
        after = rows["Store.verify() (shipped)"] / ref
        print(
            f"verify time / sha256sum time: baseline {before:.2f}x, shipped {after:.2f}x "
            f"(goal <= 2x: {'met' if after <= 2 else 'NOT met'})"
        )
        print(
            f"\nas users run them, each a new process, {len(runs['command'])} runs each, ABBA order "
            "(bytecode cached, as after an install):"
        )
        print(f"{'process':36s} {'fastest s':>9s} {'median s':>9s} {'CPU s':>7s}")
        for name, label in (
            ("command", "probebook archive verify"),
            ("sha256sum", "sha256sum (coreutils, batched)"),
            ("python", "python -c pass (start only)"),
        ):
            walls = [w for w, _ in runs[name]]
            cpu = min(c for _, c in runs[name])
            print(f"{label:36s} {min(walls):9.3f} {statistics.median(walls):9.3f} {cpu:7.3f}")
        fastest = min(w for w, _ in runs["command"]) / min(w for w, _ in runs["sha256sum"])
        medians = statistics.median(w for w, _ in runs["command"]) / statistics.median(w for w, _ in runs["sha256sum"])
        print(
            f"probebook archive verify / sha256sum: {fastest:.2f}x (fastest runs), {medians:.2f}x (medians) "
            f"(goal <= 2x: {'met' if fastest <= 2 else 'NOT met'})"
        )
    finally:
        shutil.rmtree(pycache, ignore_errors=True)
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
