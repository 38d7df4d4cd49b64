"""``bench/render.py --engines``: the same synthetic tree built by each site engine, side by side in one run.

Each arm is ``probebook build --full --engine E`` as a subprocess (verify, render every page afresh, the
engine, the sanitizer, the swap), with its own build folder and site, so neither engine's files or
cache serve the other; ``--full`` also clears Zensical's cache, so both build everything. The arms
alternate (A B B A ...) after one untimed build each. It prints the medians, the fastest runs, their
ratio and each site's bytes, and checks that both sites hold the same pages.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ENGINES = ("mkdocs", "zensical")


def time_build(
    work: Path, archive: Path, docs: Path, engine: str, env: dict[str, str], config: Path, full: bool = True
) -> float:
    """Wall seconds of ``probebook build [--full] --engine ENGINE`` into ``work/site-ENGINE``."""
    cmd = [sys.executable, "-m", "probebook", "--archive", str(archive), "build", "--engine", engine]
    cmd += ["--full"] if full else []
    cmd += ["--docs", str(docs), "--out", str(work / f"site-{engine}"), "--build-dir", str(work / f"build-{engine}")]
    cmd += ["--config", str(config), "--published", str(work / "no-published-ledger.json")]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=work)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"probebook build --engine {engine} failed:\n{proc.stderr.strip()}")
    return elapsed


def site_bytes(site: Path) -> int:
    return sum(p.stat().st_size for p in site.rglob("*") if p.is_file())


def pages(site: Path) -> set[str]:
    """The site's HTML pages (each engine's own assets, search index and sitemap aside)."""
    return {p.relative_to(site).as_posix() for p in site.rglob("*.html") if "assets" not in p.relative_to(site).parts}


def compare(
    work: Path, archive: Path, docs: Path, repeat: int, env: dict[str, str], config: Path, say: Callable[[str], None]
) -> dict[str, list[float]]:
    """Both engines' full builds, alternated; prints the table and returns each engine's runs (seconds)."""
    for engine in ENGINES:  # untimed: page cache, .pyc files, each build folder made once
        time_build(work, archive, docs, engine, env, config)
    runs: dict[str, list[float]] = {e: [] for e in ENGINES}
    for i in range(max(repeat, 2)):
        for engine in ENGINES if i % 2 == 0 else ENGINES[::-1]:
            runs[engine].append(time_build(work, archive, docs, engine, env, config))
    same = pages(work / "site-mkdocs") == pages(work / "site-zensical")
    say(f"\nsite engines, `probebook build --full --engine E`, {len(runs['mkdocs'])} runs each, ABBA order:\n")
    say("| engine | median (s) | fastest (s) | runs (s) | site (MB) |")
    say("|---|---:|---:|---|---:|")
    for engine, xs in runs.items():
        size = site_bytes(work / f"site-{engine}") / 1e6
        say(
            f"| {engine} | {statistics.median(xs):.2f} | {min(xs):.2f} | {', '.join(f'{x:.2f}' for x in xs)} "
            f"| {size:.1f} |"
        )
    mk, zen = (statistics.median(runs[e]) for e in ENGINES)
    say(
        f"\nzensical / mkdocs: {zen / mk:.2f}x (medians), {min(runs['zensical']) / min(runs['mkdocs']):.2f}x "
        f"(fastest runs); same pages in both sites: {'yes' if same else 'NO'} "
        f"({len(pages(work / 'site-mkdocs'))} HTML pages); {os.cpu_count()} CPU cores"
    )
    for engine in ENGINES:
        shutil.rmtree(work / f"site-{engine}", ignore_errors=True)
    return runs
