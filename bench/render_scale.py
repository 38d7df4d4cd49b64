"""The render benchmark at several archive sizes (issue 15): ``python bench/render.py --sizes 1000,3000,10000``.

For each size, in one run, on one machine state, with ``--records`` record pages citing the synthetic
documents of ``bench/render.py`` (made through the real store, in a temporary folder):

1. **full build**: ``probebook build --full`` as a user runs it, from an empty build folder and no site;
2. **engine alone**: ``mkdocs build --strict`` on the Markdown tree step 1 rendered (numbers already
   substituted), the ratio of the two being what probebook adds (goal: at most 1.2x); step 1 is cold
   (``--full`` reads no cache), so it draws every chart and fits every curve;
3. **site size**: bytes and files of the site, the largest page, and the largest page less its own
   content (the theme's article) -- what every page carries whatever it says (goal: under 100 KB);
4. **incremental build**: one record's prose edited, then ``probebook build`` (goal: at most 2 s at
   1,000 documents), ``--repeat`` times, a new sentence each time; then **one new document** imported and
   ``probebook build`` again: the engine builds every page (the file list changed) and render renders
   every page (the id set is in each page's key) from the derivations it kept, the build as a lab's next
   campaign meets it (its ratio to the engine alone is reported beside step 2's); at the first size, a
   full build of the edited sources into other folders, compared byte for byte with the incremental one;
5. at the first size, **serve**: ``probebook serve`` running, one record's prose edited, the seconds
   until the server returns the page with the new sentence (median of three; goal: 2 s).

With ``--repeat N`` each build and the engine alone run N times each, alternated ABBA (the machine's speed
drifts by tenths over minutes), and the ratios are of the fastest runs (the ratios of the medians are
reported beside them). Growth between sizes is reported as
(time ratio) / (size ratio): at most 1 is at most linear. The result is printed as a table and written as
JSON (``--json``).
"""

from __future__ import annotations

import itertools
import os
import queue
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
# the theme's content area (render/site/sanitize.py): what a page says, as against what every page carries
_OPEN, _CLOSE = b'<article class="md-content__inner md-typeset">', b"</article>"


def _cmd(work: Path, *args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "probebook",
        "--archive",
        str(work / "archive"),
        *args,
        "--docs",
        str(work / "docs"),
        "--build-dir",
        str(work / "build"),
        "--config",
        str(REPO / "mkdocs.yml"),
        "--published",
        str(work / "no-published-ledger.json"),
    ]


def _timed(cmd: list[str], env: dict[str, str], what: str) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"{what} failed:\n{proc.stderr.strip()}")
    return elapsed


def site_size(site: Path) -> dict[str, Any]:
    """Bytes and files of a built site; the largest page, and the largest page less its own content."""
    total = files = 0
    largest = chrome = 0
    largest_page = chrome_page = ""
    for path in site.rglob("*"):
        if not path.is_file():
            continue
        size = path.stat().st_size
        total, files = total + size, files + 1
        if path.suffix != ".html":
            continue
        data = path.read_bytes()
        start, end = data.find(_OPEN), data.rfind(_CLOSE)
        around = size - (end - start) if 0 <= start < end else size
        if size > largest:
            largest, largest_page = size, path.relative_to(site).as_posix()
        if around > chrome:
            chrome, chrome_page = around, path.relative_to(site).as_posix()
    return {
        "site_bytes": total,
        "site_files": files,
        "largest_page_bytes": largest,
        "largest_page": largest_page,
        "largest_page_less_content_bytes": chrome,
        "largest_page_less_content": chrome_page,
    }


def edit_record(docs: Path, n: int) -> tuple[Path, str]:
    """Append a sentence with a fresh token to the first record's prose; return the page and the token."""
    page = docs / "records" / "synthetic-000" / "v1.md"
    token = f"Edited prose number {n} for the benchmark."
    page.write_text(page.read_text(encoding="utf-8") + f"\n{token}\n", encoding="utf-8")
    return page, token


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def serve_latency(work: Path, env: dict[str, str], rounds: int = 3, timeout: float = 120.0) -> list[float]:
    """Seconds from saving a record to ``probebook serve`` returning the page with the new sentence."""
    cmd = _cmd(work, "serve", "--port", "0", "--out", str(work / "site"))
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    try:
        port = None
        deadline = time.monotonic() + timeout * 5
        while port is None:
            if time.monotonic() > deadline or proc.poll() is not None:
                sys.exit("probebook serve did not start")
            try:
                found = re.search(r"http://[^:]+:(\d+)/", lines.get(timeout=1))
            except queue.Empty:
                continue
            port = int(found.group(1)) if found else None
        url = f"http://127.0.0.1:{port}/records/synthetic-000/v1.html"
        out = []
        for n in range(rounds):
            time.sleep(1.5)  # the watcher has seen the last build's files
            _, token = edit_record(work / "docs", 1000 + n)
            start = time.perf_counter()
            while True:
                try:
                    with urllib.request.urlopen(url, timeout=5) as response:
                        if token.encode() in response.read():
                            break
                except OSError:
                    pass  # mid-swap: ask again
                if time.perf_counter() - start > timeout:
                    sys.exit(f"probebook serve did not show the edit within {timeout} s")
                time.sleep(0.02)
            out.append(time.perf_counter() - start)
        return out
    finally:
        proc.terminate()  # the server this function started, by its own handle
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _alternate(
    build: Callable[[], float], engine: Callable[[], float], repeat: int, before: Callable[[], object] = lambda: None
) -> tuple[list[float], list[float]]:
    """``repeat`` timed runs of ``build`` and of ``engine``, alternated ABBA (B A A B ...), ``before`` untimed
    ahead of each build: the machine's speed drifts by tenths over minutes, and alternating lets neither arm
    have the fast moments. The first run is always a build (the engine builds the tree a build wrote)."""
    builds: list[float] = []
    engines: list[float] = []
    for i in range(repeat):
        for arm in ("build", "engine") if i % 2 == 0 else ("engine", "build"):
            if arm == "build":
                before()
                builds.append(build())
            else:
                engines.append(engine())
    return builds, engines


def one_size(
    work: Path,
    docs: int,
    records: int,
    env: dict[str, str],
    make: Callable[[Path, int, int], None],
    plain: Callable[[Path], float],
    add: Callable[[Path], object],
    first: bool,
    repeat: int = 1,
) -> dict[str, Any]:
    """Every measurement at one archive size (see the module docstring); ratios are of the fastest runs."""
    t = time.perf_counter()
    make(work, docs, records)
    result: dict[str, Any] = {"documents": docs, "records": records, "setup_s": time.perf_counter() - t}
    site = work / "site"
    cold, engine = _alternate(
        lambda: _timed(_cmd(work, "build", "--full", "--out", str(site)), env, "probebook build --full"),
        lambda: plain(work),
        repeat,
    )
    result.update(
        full_build_runs_s=cold, engine_alone_runs_s=engine, full_build_s=min(cold), engine_alone_s=min(engine)
    )
    result["build_over_engine"] = result["full_build_s"] / result["engine_alone_s"]
    result["build_over_engine_medians"] = statistics.median(cold) / statistics.median(engine)
    result["pages"] = sum(1 for _ in (work / "build" / "docs").rglob("*.md"))
    result.update(site_size(site))
    # an author's edit to one record's prose, ``repeat`` times (a new sentence each time), each build timed
    edits = []
    for n in range(repeat):
        edit_record(work / "docs", n)
        edits.append(_timed(_cmd(work, "build", "--out", str(site)), env, "incremental probebook build"))
    result.update(incremental_runs_s=edits, incremental_build_s=min(edits))
    # one new document before each rebuild: the engine builds every page again (the file list changed) and render
    # renders every page again (the id set is in each page's key), from the fits, charts and tables it kept
    rebuilt, engine = _alternate(
        lambda: _timed(_cmd(work, "build", "--out", str(site)), env, "probebook build after one new document"),
        lambda: plain(work),
        repeat,
        before=lambda: add(work),
    )
    result.update(rebuild_runs_s=rebuilt, rebuild_engine_runs_s=engine, rebuild_after_new_evidence_s=min(rebuilt))
    result["rebuild_over_engine"] = min(rebuilt) / min(engine)
    result["rebuild_over_engine_medians"] = statistics.median(rebuilt) / statistics.median(engine)
    if first:
        # the same edited sources built in full in other folders: the incremental site must equal it byte for byte
        other = work / "check"
        cmd = _cmd(work, "build", "--full", "--out", str(other / "site"))
        cmd[cmd.index("--build-dir") + 1] = str(other / "build")
        result["full_build_after_edit_s"] = _timed(cmd, env, "full build after the edit")
        result["incremental_identical_to_full"] = _files(site) == _files(other / "site")
        shutil.rmtree(other)
        result["serve_edit_to_page_s"] = serve_latency(work, env)
    return result


def report(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Goals and growth from the per-size results (printed as a table)."""
    print(
        "\n| documents | full build (s) | engine alone (s) | build / engine (medians) | rebuild, one new document (s) "
        "| rebuild / engine (medians) | incremental (s) | site (MB) | files |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print(
            f"| {r['documents']} | {r['full_build_s']:.1f} | {r['engine_alone_s']:.1f} | "
            f"{r['build_over_engine']:.2f} ({r['build_over_engine_medians']:.2f}) | "
            f"{r['rebuild_after_new_evidence_s']:.1f} | "
            f"{r['rebuild_over_engine']:.2f} ({r['rebuild_over_engine_medians']:.2f}) | "
            f"{r['incremental_build_s']:.2f} | {r['site_bytes'] / 1e6:.1f} | {r['site_files']} |"
        )
    print("\n(times are each arm's fastest run, ratios of the fastest runs; medians of the runs in brackets)")
    growth = []
    for a, b in itertools.pairwise(results):
        size = b["documents"] / a["documents"]
        growth.append(
            {
                "from": a["documents"],
                "to": b["documents"],
                "time_growth_over_size_growth": (b["full_build_s"] / a["full_build_s"]) / size,
                "bytes_growth_over_size_growth": (b["site_bytes"] / a["site_bytes"]) / size,
            }
        )
    largest = max(results, key=lambda r: r["documents"])
    first = results[0]
    chrome = max(r["largest_page_less_content_bytes"] for r in results)
    goals = {
        "growth_at_most_linear": all(
            g["time_growth_over_size_growth"] <= 1.0 and g["bytes_growth_over_size_growth"] <= 1.0 for g in growth
        ),
        "largest_size_under_5_min": largest["full_build_s"] < 300,
        "no_page_over_100_kb_apart_from_content": chrome < 100_000,
        "incremental_at_most_2_s_at_first_size": first["incremental_build_s"] <= 2.0,
        "incremental_identical_to_full": first.get("incremental_identical_to_full"),
        "serve_at_most_2_s_at_first_size": statistics.median(first["serve_edit_to_page_s"]) <= 2.0,
        "build_at_most_1_2x_engine": all(r["build_over_engine"] <= 1.2 for r in results),
        "rebuild_after_new_evidence_at_most_1_2x_engine": all(r["rebuild_over_engine"] <= 1.2 for r in results),
    }
    for g in growth:
        print(
            f"\n{g['from']} -> {g['to']} documents: time grew {g['time_growth_over_size_growth']:.2f}x and bytes "
            f"{g['bytes_growth_over_size_growth']:.2f}x the size's growth (at most 1: at most linear)"
        )
    print(
        f"\nlargest page less its own content: {chrome} bytes; at {first['documents']} documents: incremental build "
        f"{first['incremental_build_s']:.2f} s (runs: {', '.join(f'{x:.2f}' for x in first['incremental_runs_s'])}) "
        f"against a full build of {first['full_build_after_edit_s']:.1f} s "
        f"(byte-identical: {first['incremental_identical_to_full']}); serve, save to page: "
        + ", ".join(f"{x:.2f}" for x in first["serve_edit_to_page_s"])
        + " s"
    )
    print("\ngoals: " + ", ".join(f"{k}: {'met' if v else 'NOT met'}" for k, v in goals.items()))
    return {
        "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
        "sizes": results,
        "growth": growth,
        "goals": goals,
    }
