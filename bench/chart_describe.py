"""A chart's alt text without drawing it (issue 15): ``charts.describe`` beside ``charts.render``, in one process.

Run: ``python bench/chart_describe.py [--charts 20] [--repeat 5]``.

It makes ``--charts`` step-scaling and ``--charts`` batch-sweep SYNTHETIC documents with ``bench/render.py``'s
generator, through the real store, in a temporary folder (never ``archive/``); readies the process as a build
does (``render.functions.derivations.load_libraries``: altair, scipy, vl-convert's runtime); then, per kind and for
``--repeat`` rounds alternated ABBA, times ``describe`` and ``render`` of every document (step-scaling with
``terms="c+a+b"``, as the benchmark's records draw it). ``chart_svg.raw_svg``'s cache is cleared before each
render pass, so every chart is drawn. It prints the median milliseconds per chart of each and their ratio.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from measure.evidence.envelope import parse  # noqa: E402
from measure.evidence.store import Store  # noqa: E402
from render.charts import draw as charts  # noqa: E402
from render.charts import svg as chart_svg  # noqa: E402
from render.functions.derivations import load_libraries  # noqa: E402

OPTIONS = {"step-scaling": {"terms": "c+a+b"}, "batch-sweep": {}}


def synthetic_docs(root: Path, per_kind: int) -> dict[str, list[dict[str, Any]]]:
    """``per_kind`` documents of each kind in ``OPTIONS``, made by bench/render.py's ``make_archive`` under ``root``."""
    # bench/render.py shares its name with the render package: loaded from its path, under another name
    spec = importlib.util.spec_from_file_location("bench_render", Path(__file__).with_name("render.py"))
    assert spec is not None and spec.loader is not None
    bench_render = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench_render)
    ids = bench_render.make_archive(root, per_kind * len(bench_render.PROBES))
    paths = {kind: [Store(root).path_for(i.removeprefix("sha256:")) for i in ids[kind][:per_kind]] for kind in OPTIONS}
    return {kind: [parse(p.read_bytes(), str(p)) for p in kind_paths] for kind, kind_paths in paths.items()}


def ms_per_chart(call: Callable[..., Any], kind: str, docs: list[dict[str, Any]]) -> float:
    chart_svg.raw_svg.cache_clear()  # draw every chart, as a cold build does
    start = time.perf_counter()
    for d in docs:
        call(kind, [d], **OPTIONS[kind])
    return (time.perf_counter() - start) * 1e3 / len(docs)


def main() -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--charts", type=int, default=20, help="documents of each kind (default 20)")
    parser.add_argument("--repeat", type=int, default=5, help="rounds of each, alternated ABBA (default 5)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="chart-describe-") as tmp:
        docs = synthetic_docs(Path(tmp) / "archive", args.charts)
    load_libraries()
    print(f"{args.charts} charts of each kind, median of {args.repeat} rounds, ms per chart")
    for kind, kind_docs in docs.items():
        for d in kind_docs:  # the same text either way (tests/test_charts.py checks it on every kind)
            assert charts.describe(kind, [d], **OPTIONS[kind]) == charts.render(kind, [d], **OPTIONS[kind]).alt
        times: dict[str, list[float]] = {"describe": [], "render": []}
        for r in range(args.repeat):
            order = ("describe", "render") if r % 2 == 0 else ("render", "describe")
            for name in order:
                times[name].append(ms_per_chart(getattr(charts, name), kind, kind_docs))
        d_ms, r_ms = statistics.median(times["describe"]), statistics.median(times["render"])
        print(f"{kind:13}  describe {d_ms:6.2f}  render {r_ms:7.2f}  describe/render {d_ms / r_ms:.3f}")


if __name__ == "__main__":
    main()
