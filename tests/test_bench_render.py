"""bench/render.py runs end to end on a small synthetic archive, in its own folder, and reports both builds."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import HANG_S

from measure.evidence.store import Store

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_render_benchmark_runs_on_a_small_archive(tmp_path: Path) -> None:
    keep = tmp_path / "bench-render"
    repo_archive = sorted((REPO / "archive").rglob("*"))
    out = subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "render.py"),
            "--docs",
            "10",
            "--records",
            "2",
            "--repeat",
            "1",
            "--keep",
            str(keep),
        ],
        capture_output=True,
        text=True,
        timeout=HANG_S,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("setup: 10 synthetic evidence documents and 2 record pages")
    rows = [ln for ln in lines if ln.startswith("| ")]
    assert rows[1].startswith("| probebook build (verify + render + mkdocs --strict) |")
    assert rows[2].startswith("| plain mkdocs build --strict, numbers already substituted |")
    assert any(ln.startswith("ratio of medians: ") and "goal: at most 1.5x" in ln for ln in lines)

    # the evidence went through the real store, into the bench's folder, and says it is synthetic
    store = Store(keep / "archive")
    assert len(store.ids()) == 10 and store.verify() == []
    for path in store.iter_paths():
        doc = json.loads(path.read_bytes())
        assert "synthetic" in doc["origin"]["source"] and "synthetic" in doc["notes"]
    assert sorted((REPO / "archive").rglob("*")) == repo_archive  # the real archive is never touched

    # both sites hold the two records with their two charts each (a light and a dark SVG), drawn once by render
    for site in ("site-probebook", "site-plain"):
        assert len(list((keep / site / "records").rglob("v1.html"))) == 2
    assert len(list((keep / "plain" / "docs" / "records").rglob("*.svg"))) == 8
    assert len(list((keep / "plain" / "docs" / "records").rglob("*.dark.svg"))) == 4
