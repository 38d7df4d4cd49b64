"""Benchmark the render stage: ``probebook build`` beside a plain ``mkdocs build`` of the same pages.

Run: ``python bench/render.py [--docs 1000] [--records 50] [--repeat 1] [--keep DIR]``, or, for issue 15's
goals at several archive sizes in one run, ``python bench/render.py --sizes 1000,3000,10000 --json out.json``
(``bench/render_scale.py`` says what that measures).

It makes, in a temporary folder (never ``archive/``):

- an archive of ``--docs`` SYNTHETIC evidence documents written through the real ``Store.put``
  (step-scaling, batch-sweep, loss-memory, kernels and gemm, in turn; each says it is synthetic
  in ``origin.source`` and ``notes``), so the build also verifies and parses them and makes one
  evidence page (raw table, CSV/JSON downloads) per document;
- ``--records`` record pages that call the page functions (``fit``, ``batch_summary``,
  ``loss_memory``, ``kernel_share``, ``gemm_ceiling``), two charts and a table each.

Then, in the same run, on the same machine state:

1. **probebook build**: ``probebook build`` as a subprocess (verify the archive, render the
   Markdown tree with every number, chart and evidence page, then ``mkdocs build --strict``);
2. **plain mkdocs**: ``mkdocs build --strict`` as a subprocess on the Markdown tree step 1
   rendered (numbers already substituted, charts and downloads already written), same
   ``mkdocs.yml`` settings, into another folder.

It prints both times and the ratio (goal, issue 3: at most 1.5x): the median of ``--repeat``
runs of each, in ABBA order so a drift of the machine favours neither, and the ratio of the
fastest runs, which is the steadier figure on a machine shared with other work.
``--stages`` adds an in-process split of the render stages (where the overhead goes).
``--sanitizer`` adds the cost of the HTML sanitizer (``render/site/sanitize.py``; goal, issue 8: under 5% of
the build): the same build with and without it, both through ``render.assemble.stages.build`` in a subprocess,
alternated ABBA, and the sanitizer alone timed in-process on the built site.
``--engines`` adds full builds of the same tree by mkdocs-material and by Zensical, alternated
(``bench/render_engines.py``; issue 15: which engine is the default, and why).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from measure.evidence.envelope import Evidence  # noqa: E402
from measure.evidence.kernel_names import CATEGORIES  # noqa: E402
from measure.evidence.store import Store  # noqa: E402

SOURCE = "synthetic benchmark data made by bench/render.py; not a measurement; never published"
PROBES = ("step-scaling", "batch-sweep", "loss-memory", "kernels", "gemm")


# --- synthetic evidence ------------------------------------------------------------------


def _step_scaling(rng: random.Random) -> list[dict]:
    c, a, b = rng.uniform(0.004, 0.02), rng.uniform(1e-6, 4e-6), rng.uniform(2e-11, 2e-10)
    return [
        {
            "tokens": s,
            "step_s": round((c + a * s + b * s * s) * rng.uniform(0.995, 1.005), 9),
            "batch": 8,
            "mode": "fixed_batch",
            "window": w,
        }
        for s in (256, 512, 1024, 2048, 4096)
        for w in range(3)
    ]


def _batch_sweep(rng: random.Random) -> list[dict]:
    rows, budget = [], rng.choice((8192, 16384, 32768))
    for ctx in (512, 1024, 2048):
        for batch in (1, 2, 4, 8, 16, 32, 64):
            oom = batch * ctx > budget
            rate = 1.0e5 * batch / (1 + batch / 16) * rng.uniform(0.98, 1.02)
            rows.append(
                {
                    "model": "90m",
                    "params": 90_000_000,
                    "context": ctx,
                    "batch": batch,
                    "tok_s": None if oom else round(rate, 1),
                    "peak_bytes": None if oom else batch * ctx * 350_000 + 2 * 2**30,
                    "status": "oom" if oom else "ok",
                }
            )
    return rows


def _loss_memory(rng: random.Random) -> list[dict]:
    per = {"eager": 2.6e9, "chunked": 1.2e9, "fused": 0.8e9}
    return [
        {
            "arm": arm,
            "microbatch": m,
            "tokens_per_step": m * 2048,
            "vocab": 32000,
            "peak_bytes": int(3e9 + slope * m * rng.uniform(0.995, 1.005)),
            "tok_s": round(40000 * m / (1 + m / 8) * rng.uniform(0.98, 1.02), 1),
        }
        for arm, slope in per.items()
        for m in (1, 2, 4, 8)
    ]


def _kernels(rng: random.Random) -> list[dict]:
    return [
        {
            "kernel": f"synthetic_kernel_{k}<{CATEGORIES[k % 6]}>",
            "category": CATEGORIES[k % 6],
            "calls": rng.randint(1, 200),
            "device_time_s": round(rng.uniform(1e-4, 5e-2), 7),
        }
        for k in range(30)
    ]


def _gemm(rng: random.Random) -> list[dict]:
    shapes = {
        "qkv": (8192, 3072, 1024),
        "out": (8192, 1024, 1024),
        "ffn-up": (8192, 5120, 1024),
        "ffn-down": (8192, 1024, 2560),
    }
    rows = []
    for name, (m, n, k) in shapes.items():
        for w in range(5):
            t = 2 * m * n * k / (rng.uniform(300, 700) * 1e12)
            rows.append(
                {"shape": name, "m": m, "n": n, "k": k, "window": w, "time_s": t, "tflop_s": 2 * m * n * k / t / 1e12}
            )
    return rows


MAKERS = {
    "step-scaling": _step_scaling,
    "batch-sweep": _batch_sweep,
    "loss-memory": _loss_memory,
    "kernels": _kernels,
    "gemm": _gemm,
}


def make_archive(root: Path, n: int, first: int = 0) -> dict[str, list[str]]:
    """``n`` synthetic documents through the real store, numbered from ``first`` (a later call adds new ones);
    returns ids by probe."""
    store, rng, ids = Store(root), random.Random(20261129 + first), {p: [] for p in PROBES}
    for i in range(first, first + n):
        probe = PROBES[i % len(PROBES)]
        ev = Evidence(
            probe=probe,
            probe_version=1,
            params={"bench_index": i, "preset": "90m"},
            data={"samples": MAKERS[probe](rng)},
            machine={"gpu": "Synthetic GPU", "gpu_count": 1},
            code={"probebook": "bench"},
            origin={"kind": "imported", "source": SOURCE},
            created_at="2026-11-29T08:00:00Z",
            notes=SOURCE,
        )
        ids[probe].append(store.put(ev))
    return ids


RECORD = """---
title: Synthetic record {i}
version: 1
date: 2026-11-29
evidence:
  sweep: {step}
  batches: {batch}
  memory: {memory}
  profile: {kernels}
  ceiling: {gemm}
---
# Synthetic record {i}

Benchmark page: every value below is synthetic.

The step splits into a fixed part of {{{{ fit(sweep, terms="c+a+b").c }}}} and
{{{{ fit(sweep, terms="c+a+b").a }}}} per token, with a quadratic term of {{{{ fit(sweep, terms="c+a+b").b }}}}.
The fastest batch at context 2048 is {{{{ batch_summary(batches, context=2048).fastest_batch }}}}
at {{{{ batch_summary(batches, context=2048).fastest_tok_s }}}}.
The eager loss costs {{{{ loss_memory(memory, "eager").per_microbatch }}}} per microbatch.
Attention takes {{{{ kernel_share(profile, "attention") }}}} of kernel time; the QKV GEMM runs at
{{{{ gemm_ceiling(ceiling, shape="qkv") }}}}.

{{{{ chart("step-scaling", sweep, terms="c+a+b") }}}}

{{{{ chart("{second}", {second_alias}) }}}}

{{{{ table("batch-sweep", batches) }}}}
"""

SECOND = [("batch-sweep", "batches"), ("loss-memory", "memory"), ("kernel-shares", "profile")]


def make_docs(root: Path, ids: dict[str, list[str]], records: int) -> None:
    """A home page and ``records`` record pages, each citing one document of each probe."""
    root.mkdir(parents=True)
    (root / "index.md").write_text("# Render benchmark\n\nSynthetic pages for bench/render.py.\n", encoding="utf-8")
    for i in range(records):
        pick = {p: ids[p][i % len(ids[p])] for p in PROBES}
        second, alias = SECOND[i % len(SECOND)]
        page = root / "records" / f"synthetic-{i:03d}" / "v1.md"
        page.parent.mkdir(parents=True)
        page.write_text(
            RECORD.format(
                i=i,
                step=pick["step-scaling"],
                batch=pick["batch-sweep"],
                memory=pick["loss-memory"],
                kernels=pick["kernels"],
                gemm=pick["gemm"],
                second=second,
                second_alias=alias,
            ),
            encoding="utf-8",
        )


# --- timing ------------------------------------------------------------------------------


def _env() -> dict[str, str]:
    # the same environment for both runs: what render.assemble.stages gives mkdocs (fixed epoch, hash seed)
    return {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "SOURCE_DATE_EPOCH": "1796083200",
        "PYTHONHASHSEED": "0",
        "NO_MKDOCS_2_WARNING": "1",
    }


def time_probebook(work: Path, archive: Path, docs: Path, site: Path) -> float:
    """Wall seconds of ``probebook build`` (verify + render + mkdocs build --strict) as a subprocess."""
    cmd = [
        sys.executable,
        "-m",
        "probebook",
        "--archive",
        str(archive),
        "build",
        "--full",  # every page rendered and the whole site built: no cache from the runs before
        "--docs",
        str(docs),
        "--out",
        str(site),
        "--build-dir",
        str(work / "build"),
        "--config",
        str(REPO / "mkdocs.yml"),
        "--published",
        str(work / "no-published-ledger.json"),
    ]
    if site.exists():
        shutil.rmtree(site)
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=_env(), cwd=work)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"probebook build failed:\n{proc.stderr.strip()}")
    return elapsed


def plain_config(work: Path) -> Path:
    """A copy of the ``build/mkdocs.yml`` render wrote (base config + nav), pointing at a frozen copy of the tree."""
    frozen = work / "plain"
    if frozen.exists():
        shutil.rmtree(frozen)
    shutil.copytree(work / "build" / "docs", frozen / "docs")
    shutil.copy(work / "build" / "mkdocs.yml", frozen / "mkdocs.yml")
    return frozen / "mkdocs.yml"


def time_plain_mkdocs(config: Path, site: Path) -> float:
    """Wall seconds of ``mkdocs build --strict`` on the already-rendered Markdown tree."""
    if site.exists():
        shutil.rmtree(site)
    cmd = [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-f", str(config), "-d", str(site)]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=_env())
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"plain mkdocs build failed:\n{proc.stderr.strip()}")
    return elapsed


# ``probebook build`` without its CLI layer, so the sanitizer can be switched off for the comparison;
# the CLI itself has no such switch (a site is never published unsanitized).
_BUILD_DRIVER = (
    "import sys; from pathlib import Path; from render.assemble.stages import BuildPaths, build; a = sys.argv[1:]; "
    "build(BuildPaths(*(Path(x) for x in a[:6])), clean=a[6] == 'clean', full=True)"
)


def time_build_arm(work: Path, archive: Path, docs: Path, site: Path, clean: bool) -> float:
    """Wall seconds of one full build (verify + render + mkdocs + swap), with or without the sanitizer."""
    paths = [docs, archive, work / "build", site, REPO / "mkdocs.yml", work / "no-published-ledger.json"]
    cmd = [sys.executable, "-c", _BUILD_DRIVER, *map(str, paths), "clean" if clean else "raw"]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=_env(), cwd=work)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"build ({'with' if clean else 'without'} the sanitizer) failed:\n{proc.stderr.strip()}")
    return elapsed


def sanitizer_cost(work: Path, archive: Path, docs: Path, repeat: int) -> None:
    """Print the build with and without the sanitizer (ABBA) and the sanitizer alone on a copy of the site."""
    from render.site import sanitize

    with_s, without_s = [], []
    for i in range(max(repeat, 2)):
        order = (True, False) if i % 2 == 0 else (False, True)
        for clean in order:
            t = time_build_arm(work, archive, docs, work / "site-arms", clean)
            (with_s if clean else without_s).append(t)
    raw_site = work / "site-unsanitized"
    if raw_site.exists():
        shutil.rmtree(raw_site)
    time_build_arm(work, archive, docs, raw_site, clean=False)
    # The sanitizer alone on copies of that site, alternated: as shipped (one nh3.Cleaner reused) and as it
    # was before (nh3.clean with the same allowlist on every call, which builds a sanitizer each time).
    ways = {"as shipped (one nh3.Cleaner)": sanitize._CLEANER, "before (nh3.clean per call)": _PerCall()}
    alone: dict[str, list[float]] = {name: [] for name in ways}
    pages = 0
    for i in range(4):
        for name in list(ways) if i % 2 == 0 else list(ways)[::-1]:
            copy = work / "site-sanitize-copy"
            if copy.exists():
                shutil.rmtree(copy)
            shutil.copytree(raw_site, copy)
            sanitize._CLEANER = ways[name]
            try:
                t = time.perf_counter()
                pages = sanitize.clean_site(copy)
                alone[name].append(time.perf_counter() - t)
            finally:
                sanitize._CLEANER = ways["as shipped (one nh3.Cleaner)"]
    w, wo = statistics.median(with_s), statistics.median(without_s)
    print(f"\nsanitizer: {len(with_s)} builds with and {len(without_s)} without, ABBA order:\n")
    print("| build | median (s) | fastest (s) | runs (s) |")
    print("|---|---:|---:|---|")
    for name, xs in (("with the sanitizer", with_s), ("without the sanitizer", without_s)):
        print(f"| {name} | {statistics.median(xs):.2f} | {min(xs):.2f} | {', '.join(f'{x:.2f}' for x in xs)} |")
    print(f"\nbuild difference (medians): {w - wo:+.2f} s ({(w - wo) / wo:+.1%})")
    print(f"\nthe sanitizer alone, in-process on the built site ({pages} pages + search index), 4 runs each, ABBA:\n")
    print("| sanitizer | median (s) | runs (s) | share of the build with it |")
    print("|---|---:|---|---:|")
    for name, xs in alone.items():
        runs = ", ".join(f"{x:.2f}" for x in xs)
        print(f"| {name} | {statistics.median(xs):.3f} | {runs} | {statistics.median(xs) / w:.1%} |")
    share = statistics.median(alone["as shipped (one nh3.Cleaner)"]) / w
    print(f"\nas shipped: {share:.1%} of the build (goal: under 5%) -> {'met' if share < 0.05 else 'NOT met'}")


class _PerCall:
    """The sanitizer's call as it was before one ``nh3.Cleaner`` was reused: ``nh3.clean`` with every option."""

    def clean(self, html: str) -> str:
        import nh3

        from render.site import sanitize

        return nh3.clean(html, **sanitize.OPTIONS)


def time_render_stages(archive: Path, docs: Path, work: Path) -> dict[str, float]:
    """In-process seconds of each render stage (no mkdocs), to say where the overhead goes."""
    from measure.evidence.store import Store as _Store
    from render.assemble import stages as b
    from render.assemble.types import BuildRun

    out: dict[str, float] = {}
    t = time.perf_counter()
    evidence = b.load_evidence(archive)
    out["verify + parse evidence"] = time.perf_counter() - t
    t = time.perf_counter()
    src = b.load_sources(docs)
    b.check_prose(src)
    out["sources + lint"] = time.perf_counter() - t
    t = time.perf_counter()
    tree = b.render_pages(src, evidence, _Store(archive), None, BuildRun())
    out["record pages (numbers, charts, tables)"] = time.perf_counter() - t
    t = time.perf_counter()
    tree = b.generate_pages(tree, src, evidence, None, None, BuildRun())
    out["generated pages (evidence, indexes, changes)"] = time.perf_counter() - t
    t = time.perf_counter()
    b.write_tree(tree, work / "stages" / "docs")
    out["write tree"] = time.perf_counter() - t
    return out


def sweep(args: argparse.Namespace) -> int:
    """``--sizes``: every size in one run (bench/render_scale.py), the results as a table and JSON."""
    import render_scale  # beside this script, whose folder Python puts on the path

    try:
        sizes = [int(x) for x in args.sizes.split(",")]
    except ValueError:
        sys.exit(f"--sizes: {args.sizes!r} is not a comma list of whole numbers")
    if min(sizes) < len(PROBES) or args.records < 1:
        sys.exit(f"--sizes must each be at least {len(PROBES)}, --records at least 1")
    root = args.keep or Path(tempfile.mkdtemp(prefix="probebook-bench-scale-"))
    root.mkdir(parents=True, exist_ok=True)
    print(f"machine: {os.cpu_count()} CPU cores, Python {sys.version.split()[0]}; work in {root}")

    def make(work: Path, docs: int, records: int) -> None:
        make_docs(work / "docs", make_archive(work / "archive", docs), records)

    def plain(work: Path) -> float:
        return time_plain_mkdocs(plain_config(work), work / "site-plain")

    results = []
    try:
        for i, n in enumerate(sizes):
            work = root / str(n)
            if work.exists():
                sys.exit(f"{work} exists; give --keep an empty or new folder")
            added = [0]

            def add(work: Path, n: int = n, added: list[int] = added) -> None:
                make_archive(work / "archive", 1, first=n + added[0])  # one new document each time
                added[0] += 1

            results.append(render_scale.one_size(work, n, args.records, _env(), make, plain, add, i == 0, args.repeat))
            print(f"{n} documents: {json.dumps(results[-1])}", flush=True)
            if args.keep is None:
                shutil.rmtree(work, ignore_errors=True)
        out = render_scale.report(results)
        if args.json:
            args.json.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
            print(f"\nwrote {args.json}")
        return 0
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(
        allow_abbrev=False,
        description=__doc__.split("\n\n")[0],
        epilog="examples:\n  python bench/render.py --docs 1000 --records 50 --repeat 3\n"
        "  python bench/render.py --sizes 1000,3000,10000 --json bench/results/render-scale.json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--docs", type=int, default=1000, help="synthetic evidence documents (default 1000)")
    ap.add_argument("--records", type=int, default=50, help="record pages (default 50)")
    ap.add_argument("--repeat", type=int, default=1, help="timed runs of each build, alternated (default 1)")
    ap.add_argument("--stages", action="store_true", help="also time each render stage in-process")
    ap.add_argument("--sanitizer", action="store_true", help="also time the build with and without the sanitizer")
    ap.add_argument(
        "--engines",
        action="store_true",
        help="also time full builds by mkdocs and by Zensical (bench/render_engines.py)",
    )
    ap.add_argument("--keep", type=Path, help="work in this folder and keep it (default: a temp folder, removed)")
    ap.add_argument(
        "--sizes",
        help="comma list of archive sizes: full and incremental builds, site bytes, the engine alone and serve at "
        "each, side by side (bench/render_scale.py); --docs is then ignored",
    )
    ap.add_argument("--json", type=Path, help="with --sizes: also write the results here as JSON")
    args = ap.parse_args()
    if args.sizes:
        return sweep(args)
    if args.docs < len(PROBES) or args.records < 1 or args.repeat < 1:
        ap.error(f"--docs must be at least {len(PROBES)}, --records and --repeat at least 1")

    work = args.keep or Path(tempfile.mkdtemp(prefix="probebook-bench-render-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        archive, docs = work / "archive", work / "docs"
        if archive.exists() or docs.exists():
            sys.exit(f"{work} already holds archive/ or docs/; give --keep an empty or new folder")
        t = time.perf_counter()
        ids = make_archive(archive, args.docs)
        make_docs(docs, ids, args.records)
        print(
            f"setup: {args.docs} synthetic evidence documents and {args.records} record pages in "
            f"{time.perf_counter() - t:.1f} s ({work})"
        )
        print(f"machine: {os.cpu_count()} CPU cores, Python {sys.version.split()[0]}")

        # warm-up: one untimed build (page cache, .pyc files) that also produces the tree for plain mkdocs
        time_probebook(work, archive, docs, work / "site-probebook")
        config = plain_config(work)
        pages = sum(1 for _ in (work / "plain" / "docs").rglob("*.md"))
        svgs = sum(1 for _ in (work / "plain" / "docs").rglob("*.svg"))
        full, plain = [], []
        for i in range(args.repeat):
            # ABBA order: a machine that speeds up or slows down during the run favours neither build
            order = ("full", "plain") if i % 2 == 0 else ("plain", "full")
            for which in order:
                if which == "full":
                    full.append(time_probebook(work, archive, docs, work / "site-probebook"))
                else:
                    plain.append(time_plain_mkdocs(config, work / "site-plain"))
        full_s, plain_s = statistics.median(full), statistics.median(plain)
        ratio = full_s / plain_s
        print(f"\n{pages} Markdown pages ({svgs} SVG charts) built by each; {args.repeat} run(s) each, ABBA order:\n")
        print("| build | median (s) | fastest (s) | runs (s) |")
        print("|---|---:|---:|---|")
        print(
            f"| probebook build (verify + render + mkdocs --strict) | {full_s:.2f} | {min(full):.2f} | "
            f"{', '.join(f'{x:.2f}' for x in full)} |"
        )
        print(
            f"| plain mkdocs build --strict, numbers already substituted | {plain_s:.2f} | {min(plain):.2f} | "
            f"{', '.join(f'{x:.2f}' for x in plain)} |"
        )
        print(
            f"\nratio of medians: {ratio:.2f}x, of fastest runs: {min(full) / min(plain):.2f}x "
            f"(goal: at most 1.5x) -> {'met' if ratio <= 1.5 else 'NOT met'}"
        )
        print(f"render overhead (median difference): {full_s - plain_s:.2f} s")
        if args.stages:
            print("\nrender stages, in-process (no mkdocs):\n")
            print("| stage | seconds |")
            print("|---|---:|")
            for name, secs in time_render_stages(archive, docs, work).items():
                print(f"| {name} | {secs:.2f} |")
        if args.sanitizer:
            sanitizer_cost(work, archive, docs, args.repeat)
        if args.engines:
            import render_engines  # beside this script, whose folder Python puts on the path

            render_engines.compare(work, archive, docs, args.repeat, _env(), REPO / "mkdocs.yml", print)
        return 0
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
