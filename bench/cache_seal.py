"""Benchmark issue 25's sealed build caches: an incremental ``probebook build`` with nothing changed, before and after.

Run: ``python bench/cache_seal.py [--before 9196482] [--after HEAD] [--docs 300] [--records 20] [--repeat 5]``.

It makes, in a temporary folder, a synthetic archive and record pages (``bench/render.py``'s generators,
through the real ``Store.put``) and two copies of probebook's code: ``--before`` (a commit, exported with
``git archive``; its caches are plain pickles) and ``--after`` (caches sealed with an HMAC,
``render.assemble.sealed``), so editing the working tree while it runs changes neither arm. Each copy gets its
own build folder and site and one cold build; then ``--repeat`` rounds of ``probebook build`` with no change
(every page from the page cache, every derivation from the derivation cache, a dirty site build), as
subprocesses, alternated ABBA so a drift of the shared machine favours neither. It prints each arm's median and
fastest wall time and their ratios. Issue 25's run (200 documents, 12 records, 6 rounds, 2 shared cores):
``bench/results/cache_seal.txt``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

import render as bench_render  # noqa: E402  (bench/render.py: the synthetic archive and pages)


def _export(ref: str, into: Path) -> Path:
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", ref], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def _build(code: Path, work: Path, archive: Path, docs: Path) -> float:
    """Wall seconds of one ``probebook build`` run with ``code`` first on the import path."""
    env = {**os.environ, "PYTHONPATH": str(code), "SOURCE_DATE_EPOCH": "1796083200", "PYTHONHASHSEED": "0"}
    cmd = [sys.executable, "-m", "probebook", "--archive", str(archive), "build", "--docs", str(docs),
           "--out", str(work / "site"), "--build-dir", str(work / "build"), "--config", str(REPO / "mkdocs.yml"),
           "--published", str(work / "no-published-ledger.json")]  # fmt: skip
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=code, capture_output=True, text=True)
    took = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{code}: build failed: {proc.stderr.strip()[-400:]}")
    return took


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default="9196482", help="the commit whose caches are plain pickles")
    ap.add_argument("--after", default="HEAD", help="the commit whose caches are sealed")
    ap.add_argument("--docs", type=int, default=300, help="synthetic evidence documents (default 300)")
    ap.add_argument("--records", type=int, default=20, help="record pages (default 20)")
    ap.add_argument("--repeat", type=int, default=5, help="timed no-change builds of each arm (default 5)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="probebook-seal-") as tmp:
        work = Path(tmp)
        ids = bench_render.make_archive(work / "archive", args.docs)
        bench_render.make_docs(work / "docs", ids, args.records)
        arms = {"before": _export(args.before, work / "code-before"), "after": _export(args.after, work / "code-after")}
        for name, code in arms.items():
            cold = _build(code, work / name, work / "archive", work / "docs")
            print(f"{name}: cold build {cold:.2f} s")
        times: dict[str, list[float]] = {name: [] for name in arms}
        for i in range(args.repeat):
            for name in ("before", "after") if i % 2 == 0 else ("after", "before"):  # ABBA
                times[name].append(_build(arms[name], work / name, work / "archive", work / "docs"))
        for name, runs in times.items():
            print(f"{name}: no-change build median {statistics.median(runs):.3f} s, fastest {min(runs):.3f} s "
                  f"({', '.join(f'{t:.2f}' for t in runs)})")  # fmt: skip
        b, a = times["before"], times["after"]
        print(f"after/before: median {statistics.median(a) / statistics.median(b):.3f}, "
              f"fastest {min(a) / min(b):.3f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
