"""Site size at scale: evidence out of the nav, the paginated Evidence index, page bytes independent of archive size."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
from conftest import bench_module

from render.assemble.stages import BuildPaths, build
from render.evidence import index as evidence_index

REPO = Path(__file__).resolve().parent.parent


def _bench() -> ModuleType:
    """bench/render.py, whose synthetic archive and records the benchmark builds (one generator for both)."""
    module: ModuleType = bench_module("render")
    return module


def _doc(probe: str, gpu: str | None, created: str, n: int) -> dict:
    return {
        "probe": probe,
        "machine": {"gpu": gpu},
        "created_at": created,
        "params": {"preset": "90m", "batch": n},
        "data": {"samples": [{"x": 1}] * n},
        "status": "complete",
        "origin": {"kind": "measured"},
    }


def test_index_groups_by_probe_machine_and_date_on_bounded_pages() -> None:
    docs = {
        f"sha256:{i:064x}": _doc("gemm", "NVIDIA H200" if i % 2 else None, f"2026-11-{1 + i % 3:02d}T08:00:00Z", i)
        for i in range(7)
    }
    docs["sha256:" + "f" * 64] = _doc("copy", "NVIDIA H200", "2026-10-05T08:00:00Z", 1)
    files = evidence_index.pages(docs, {"sha256:" + "f" * 64: [("records/a/v1.md", "A")]}, page_size=3)
    assert sorted(files) == [
        "evidence/index.md",
        "evidence/list/copy/1.md",
        "evidence/list/gemm/1.md",
        "evidence/list/gemm/2.md",
        "evidence/list/gemm/3.md",
    ]
    index = files["evidence/index.md"].decode()
    assert "| gemm | CPU only | 4 | 2026-11-01 to 2026-11-03 | [page 1 of 3](list/gemm/1.md) |" in index
    assert "| gemm | NVIDIA H200 | 3 | 2026-11-01 to 2026-11-03 | [page 2 of 3](list/gemm/2.md) |" in index
    first = files["evidence/list/gemm/1.md"].decode()
    # machine heading, then dates newest first, each document with its one-line description
    assert first.index("## CPU only") < first.index("### 2026-11-03") < first.index("### 2026-11-02")
    assert "[page 2 →](2.md)" in first and "←" not in first
    assert "gemm; preset 90m; batch 2; 2 samples" in first and "batch 6" not in first
    second = files["evidence/list/gemm/2.md"].decode()
    assert "[← page 1](1.md)" in second and "[page 3 →](3.md)" in second
    assert "; cited by 1 page" in files["evidence/list/copy/1.md"].decode()
    # every document listed once, on exactly one page
    listed = [line for rel, data in files.items() if rel != "evidence/index.md" for line in data.decode().splitlines()]
    assert sum(1 for line in listed if line.startswith("- [`")) == len(docs)


def test_nav_holds_no_evidence_page(fixture_site: BuildPaths) -> None:
    config = (fixture_site.build / "mkdocs.yml").read_text(encoding="utf-8")
    # the Evidence section holds the two indexes only, whatever the archive holds: the documents' pages and the
    # configurations' history pages are reached from them (not_in_nav), so the nav's size is the archive's not
    assert "- Evidence:\n  - Evidence: evidence/index.md\n  - History: evidence/history/index.md\n" in config
    assert config.count("evidence/") == 3  # those two entries and not_in_nav
    assert "not_in_nav: '/evidence/" in config
    assert next((fixture_site.site / "evidence" / "history").glob("cfg-*.html"))  # history pages built, not in nav
    page = next((fixture_site.site / "records").rglob("v1.html")).read_bytes()
    assert b'href="../../evidence/index.html"' in page


def _site(root: Path, docs: int, bench: ModuleType) -> Path:
    ids = bench.make_archive(root / "archive", docs)
    bench.make_docs(root / "docs", ids, 2)
    paths = BuildPaths(
        docs=root / "docs",
        archive=root / "archive",
        build=root / "build",
        site=root / "site",
        config=REPO / "mkdocs.yml",
        published=root / "none.json",
    )
    build(paths)
    return paths.site


@pytest.mark.slow
def test_page_bytes_do_not_grow_with_the_archive(tmp_path: Path) -> None:
    bench = _bench()
    small, large = _site(tmp_path / "n", 15, bench), _site(tmp_path / "3n", 45, bench)
    # the first 15 synthetic documents are the same in both archives, and the records cite only them
    for rel in ("records/synthetic-000/v1.html", "records/synthetic-001/v1.html", "index.html", "changes.html"):
        assert (small / rel).read_bytes() == (large / rel).read_bytes(), rel
    for page in (small / "evidence").glob("[0-9a-f]*.html"):
        assert page.read_bytes() == (large / "evidence" / page.name).read_bytes(), page.name
    # the index changes only in its counts; no page anywhere is near 100 KB
    grown = (large / "evidence/index.html").stat().st_size - (small / "evidence/index.html").stat().st_size
    assert 0 <= grown < 100
    biggest = max(p.stat().st_size for p in large.rglob("*.html"))
    assert biggest < 100_000, biggest
