"""bench/screenshots.py without a browser: a record's current version, the reader set, errors on a bad --site."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import bench_module

shots = bench_module("screenshots")


def _site(root: Path, files: list[str]) -> Path:
    for name in files:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("<html></html>", encoding="utf-8")
    return root


def test_the_current_version_is_the_highest_number_not_the_last_name(tmp_path: Path) -> None:
    site = _site(
        tmp_path,
        [
            "records/step-anatomy-250m/v9.html",
            "records/step-anatomy-250m/v10.html",
            "records/step-anatomy-250m/v10-kernel-shares-1.svg",
            "records/batch-sweep-h200/v2.html",
            "records/batch-sweep-h200/v1.html",
            "records/empty/notes.txt",
            "records/index.html",
            "changes.html",
        ],
    )
    assert shots.current_records(site) == {
        "batch-sweep-h200": "records/batch-sweep-h200/v2.html",
        "step-anatomy-250m": "records/step-anatomy-250m/v10.html",
    }
    assert shots.pages(site) == {
        "step-anatomy-250m": "records/step-anatomy-250m/v10.html",
        "batch-sweep-h200": "records/batch-sweep-h200/v2.html",
        "changes": "changes.html",
    }


def test_a_site_without_the_named_pages_is_a_one_line_error_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert shots.main(["--site", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    assert (
        capsys.readouterr().err
        == f"error: --site {tmp_path}: no index.html (build the site with probebook build first)\n"
    )
    site = _site(tmp_path, ["index.html", "records/batch-sweep-h200/v1.html", "changes.html"])
    assert shots.main(["--site", str(site), "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == f"error: --site {site}: no record folder for step-anatomy-250m under records/\n"
    assert not (tmp_path / "out").exists()


def test_the_reader_set_picks_an_evidence_page_hvp_cost_cites_and_a_reproduction_step_anatomy_links(
    tmp_path: Path,
) -> None:
    a, b, c = "a" * 64, "b" * 64, "c" * 64
    site = _site(
        tmp_path,
        [
            "index.html",
            "records/index.html",
            "records/hvp-cost/v2.html",
            "records/eval-boundary-h200/v1.html",
            "records/step-anatomy-250m/v1.html",
            "records/step-anatomy-250m/v2.html",
            f"evidence/{a}.html",
            f"evidence/{b}.html",
            f"evidence/comparison/{a}.html",
            f"evidence/comparison/{c}.html",
        ],
    )
    # hvp-cost cites b (and c, which has no page); an older step-anatomy version links reproduction c
    (site / "records/hvp-cost/v2.html").write_text(
        f'<a href="../../evidence/{c}.html">x</a><a href="../../evidence/{b}.html#data-x">y</a>', encoding="utf-8"
    )
    (site / "records/step-anatomy-250m/v1.html").write_text(
        f'<a href="../../evidence/comparison/{c}.html">r</a>', encoding="utf-8"
    )
    assert shots.pages(site, "reader") == {
        "records-index": "records/index.html",
        "hvp-cost": "records/hvp-cost/v2.html",
        "eval-boundary": "records/eval-boundary-h200/v1.html",
        "evidence": f"evidence/{b}.html",
        "reproduction": f"evidence/comparison/{c}.html",
    }
    assert shots.dark_pages("reader", shots.pages(site, "reader")) == set(shots.pages(site, "reader"))
    assert shots.dark_pages("default", {"step-anatomy-250m": "", "changes": ""}) == {"step-anatomy-250m"}
    # without a step-anatomy link the first reproduction by name stands in
    (site / "records/step-anatomy-250m/v1.html").write_text("<html></html>", encoding="utf-8")
    assert shots.pages(site, "reader")["reproduction"] == f"evidence/comparison/{a}.html"


def test_a_site_without_a_reader_page_is_a_one_line_error_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site = _site(tmp_path, ["index.html", "records/index.html", "records/hvp-cost/v1.html"])
    args = ["--site", str(site), "--out", str(tmp_path / "out"), "--set", "reader"]
    assert shots.main(args) == 2
    assert capsys.readouterr().err == f"error: --site {site}: no record folder for eval-boundary under records/\n"
    _site(tmp_path, ["records/eval-boundary-h200/v3.html"])
    assert shots.main(args) == 2
    assert capsys.readouterr().err == (
        f"error: --site {site}: records/hvp-cost/v1.html cites no evidence page under evidence/\n"
    )
    assert not (tmp_path / "out").exists()
