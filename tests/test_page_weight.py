"""bench/page_weight.py without a browser: a response's kind, a page's static estimate, its errors on a bad --site."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from conftest import bench_module

weights = bench_module("page_weight")


def test_a_response_is_counted_by_the_kind_its_path_ends_in() -> None:
    base = "http://127.0.0.1:8000/"
    assert weights.kind(base) == "html"
    assert weights.kind(base + "records/hvp-cost/v6.html") == "html"
    assert weights.kind(base + "records/hvp-cost/v6-cost-1.vl.json") == "spec"
    assert weights.kind(base + "records/hvp-cost/v6-cost-1.dark.svg#only-dark") == "svg"
    assert weights.kind(base + "search/search_index.json") == "search"
    assert weights.kind(base + "assets/probebook/charts.json") == "json"
    assert weights.kind(base + "assets/stylesheets/main.css?v=1") == "css"
    assert weights.kind(base + "assets/fonts/a.woff2") == "font"
    assert weights.kind(base + "archive/archive.tar") == "other"
    assert weights.kind(base + "records/README") == "other"


def test_the_estimate_is_the_page_and_each_local_file_it_loads_once(tmp_path: Path) -> None:
    (tmp_path / "assets").mkdir()
    (tmp_path / "assets" / "a.css").write_bytes(b"x" * 100)
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "c.svg").write_bytes(b"y" * 30)
    (tmp_path / "r" / "c.vl.json").write_bytes(b"z" * 7)
    (tmp_path / "r" / "c.json").write_bytes(b"j" * 3000)  # a download, not loaded with the page
    (tmp_path / "other.html").write_bytes(b"w" * 1000)
    (tmp_path / "outside.css").write_bytes(b"v" * 5)
    page = tmp_path / "r" / "p.html"
    page.write_text(
        '<link href="../assets/a.css?v=2"><img src="c.svg#only-light"><img src="c.svg#only-dark">'
        '<a href="c.vl.json">spec</a><a href="../other.html">a page, not loaded</a><a href="c.json">JSON</a>'
        '<img src="https://example.org/x.svg"><script src="missing.js"></script>',
        encoding="utf-8",
    )
    assert weights.estimate(tmp_path, page) == page.stat().st_size + 100 + 30 + 7
    # a file above the site is not the site's
    assert weights.estimate(tmp_path / "r", page) == page.stat().st_size + 30 + 7
    # a page with a chart also loads the chart manifest and bundle
    (tmp_path / "assets" / "probebook").mkdir()
    (tmp_path / "assets" / "probebook" / "vega-embed.js").write_bytes(b"u" * 400)
    (tmp_path / "assets" / "probebook" / "charts.json").write_bytes(b"t" * 20)
    (tmp_path / "assets" / "probebook" / "numbers.js").write_bytes(b"s" * 9)
    assert weights.estimate(tmp_path, page) == page.stat().st_size + 100 + 30 + 7 + 400 + 20
    (tmp_path / "r" / "c.vl.json").unlink()
    assert weights.estimate(tmp_path, page) == page.stat().st_size + 100 + 30


def test_gzipped_is_the_level_6_gzip_length() -> None:
    body = b"probebook " * 500
    assert weights.gzipped(body) == len(gzip.compress(body, compresslevel=6, mtime=0))
    assert weights.gzipped(body) < len(body) // 10


def test_a_site_without_index_html_is_a_one_line_error_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert weights.main(["--site", str(tmp_path)]) == 2
    assert (
        capsys.readouterr().err
        == f"error: --site {tmp_path}: no index.html (build the site with probebook build first)\n"
    )
    (tmp_path / "index.html").write_text("<html></html>", encoding="utf-8")
    assert weights.main(["--site", str(tmp_path), "--candidates", "0"]) == 2
    assert capsys.readouterr().err == "error: --candidates 0: must be at least 1\n"
