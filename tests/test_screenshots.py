"""bench/screenshots.py without a browser: which page is a record's current version, and its errors on a bad --site."""

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
