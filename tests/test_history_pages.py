"""History pages of configuration keys (render.evidence.history, historypage): the change-point rule on literal
inputs, and a built fixture archive (tests/fixtures/history: one GEMM key in four sessions across two software
stacks) whose history page lists every session, the across-sessions estimate and the change point."""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from scipy.stats import t

from measure.evidence.configkey import config_key
from render.assemble.stages import BuildPaths, render_tree
from render.derive import replication
from render.evidence import history as hist
from render.site.assets import CHARTS

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "history"
REPO = Path(__file__).resolve().parents[1]
A = {"torch": "2.10"}
B = {"torch": "2.11"}


def test_a_stack_change_that_moves_the_medians_beyond_the_sessions_spread_is_a_change_point() -> None:
    spread = replication.Spread(0.02, 20, 5, "class")
    found = hist.change_points([A, A, B, B], [1.0, 1.02, 0.8, 0.82], spread)
    assert len(found) == 1
    b = found[0]
    assert (b.index, b.changed, b.before, b.after) == (2, {"torch": ("2.10", "2.11")}, 1.01, 0.81)
    assert b.limit == pytest.approx(t.ppf(0.975, 20) * 0.02 * math.sqrt(1 / 2 + 1 / 2), rel=1e-12)
    assert b.moved  # |ln(0.81/1.01)| = 0.221 > 0.0590


def test_a_stack_change_within_the_sessions_spread_is_listed_not_marked() -> None:
    spread = replication.Spread(0.02, 20, 5, "class")
    (b,) = hist.change_points([A, A, B], [1.0, 1.02, 1.03], spread)
    assert (b.index, b.before, b.after) == (2, 1.01, 1.03)
    assert b.limit == pytest.approx(t.ppf(0.975, 20) * 0.02 * math.sqrt(1 / 2 + 1), rel=1e-12)
    assert not b.moved  # |ln(1.03/1.01)| = 0.0196 < 0.0693


def test_a_move_without_a_stack_change_is_no_change_point_and_no_spread_is_not_judged() -> None:
    assert hist.change_points([A, A, A, A], [1.0, 1.0, 2.0, 2.0], replication.Spread(0.01, 30, 5, "class")) == []
    (b,) = hist.change_points([A, B], [1.0, 2.0], None)
    assert b.limit is None and not b.moved


def test_segments_run_from_one_stack_change_to_the_next() -> None:
    c = {"torch": "2.12"}
    found = hist.change_points([A, B, B, c], [1.0, 2.0, 4.0, 3.0], replication.Spread(0.01, 30, 5, "class"))
    assert [(b.index, b.before, b.after) for b in found] == [(1, 1.0, 3.0), (3, 3.0, 3.0)]
    assert [b.moved for b in found] == [True, False]
    with pytest.raises(ValueError, match="one stack per figure"):
        hist.change_points([A], [1.0, 2.0], None)


def test_the_fixture_archive_is_what_its_script_makes(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, str(FIXTURE / "make_archive.py"), "--out", str(tmp_path)], check=True, capture_output=True
    )
    made = sorted(p.relative_to(tmp_path) for p in (tmp_path / "archive").rglob("*.json"))
    kept = sorted(p.relative_to(FIXTURE) for p in (FIXTURE / "archive").rglob("*.json"))
    assert made == kept
    assert all((tmp_path / p).read_bytes() == (FIXTURE / p).read_bytes() for p in made)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    from measure.cli import declarations

    root = tmp_path_factory.mktemp("history")
    paths = BuildPaths(
        docs=FIXTURE / "docs",
        archive=FIXTURE / "archive",
        build=root / "build",
        site=root / "site",
        config=REPO / "mkdocs.yml",
        published=root / "no-published-ledger.json",
        declarations=declarations(),
    )
    render_tree(paths)
    return {p.relative_to(paths.tree).as_posix(): p.read_bytes() for p in paths.tree.rglob("*") if p.is_file()}


def _key() -> str:
    from render.evidence.archive import load_evidence

    docs = load_evidence(FIXTURE / "archive").docs
    (ident,) = {config_key(d).ident for d in docs.values()}
    return ident


def test_the_history_page_lists_every_session_the_estimate_and_the_change_point(built: dict[str, bytes]) -> None:
    page = built[hist.history_page(_key())].decode()
    runs = page.split("## Sessions", 1)[1].split("## Every measurement", 1)[0]
    sessions = [line.split(" | ") for line in runs.splitlines() if re.match(r"\| [0-9]+ \| \[", line)]
    assert [r[0] for r in sessions] == ["| 1", "| 2", "| 3", "| 4"]  # every session, in the order written
    assert [r[2][:10] for r in sessions] == ["2026-11-20", "2026-11-21", "2026-11-27", "2026-11-28"]
    assert [r[3] for r in sessions] == ["0123456789ab"] * 4  # the commit
    assert [r[4] for r in sessions] == ["2.10.0+cu128"] * 2 + ["2.11.0+cu130"] * 2  # torch
    assert [r[6] for r in sessions] == ["570.86.15"] * 2 + ["580.159.04"] * 2  # the driver
    assert [r[8] for r in sessions] == ["NVIDIA H200"] * 4
    # the record version citing each run: gemm_ceiling_series cites every session
    assert all("[gemm-series v1](../../records/gemm-series/v1.md)" in r[9] for r in sessions)
    square = [line for line in page.splitlines() if line.startswith("| shape square-8192")]
    estimate, measured = square[0], square[1:]
    assert [r.split(" | ")[1] for r in measured] == ["1", "2", "3", "4"]
    marks = [r.strip("|").split("|")[-1].strip() for r in measured]
    assert marks == ["", "", "CHANGE POINT (driver 570.86.15 → 580.159.04, torch 2.10.0+cu128 → 2.11.0+cu130)", ""]
    # the estimate: the geometric mean of the four sessions, and its prediction interval from the class pool
    middle, interval = estimate.split(" | ")[2:4]
    assert estimate.split(" | ")[1] == "4"
    low, high = (float(x) for x in interval.split(" – "))
    assert low < float(middle) < high
    assert re.search(r"before session 3: .*; CHANGE POINT: medians moved -12\.[0-9]%", estimate)
    assert "median before 1.701 ms, after 1.496 ms" in estimate
    # a shape that held its time across the same stack change: listed, not marked
    steady = [line for line in page.splitlines() if line.startswith("| shape wq.fwd")]
    assert "within noise" in steady[0] and "within noise" in steady[3] and "CHANGE POINT" not in "".join(steady)
    assert "change points before sessions 3" in page  # the chart's alt text names it


def test_the_chart_is_drawn_from_the_builds_own_spec(built: dict[str, bytes]) -> None:
    name = f"evidence/history/{_key()}.history"
    assert built[f"{name}.svg"].startswith(b"<svg") and built[f"{name}.dark.svg"].startswith(b"<svg")
    assert f"{name}.vl.json" in built[CHARTS].decode()


def test_the_index_the_evidence_page_and_the_number_entry_link_to_the_history(built: dict[str, bytes]) -> None:
    key = _key()
    assert f"({key}.md)" in built[hist.INDEX].decode()
    assert "(history/index.md)" in built["evidence/index.md"].decode()
    evidence = built["evidence/ea370c49547367e577df3678002a028813a990e8d755af04ee82e4f093f07844.md"].decode()
    assert f"[history of this configuration](history/{key}.md)" in evidence
    entries = [
        line for line in evidence.splitlines() if "records/gemm-series/v1.md" in line and "gemm_ceiling(" in line
    ]
    assert entries and all(f"[every session](history/{key}.md)" in line for line in entries)


def test_gemm_ceiling_series_is_every_sessions_estimate_cited_by_each(built: dict[str, bytes]) -> None:
    import json

    rows = {r["key"]: r for r in json.loads(built["ledger.json"])["rows"] if r["page"] == "records/gemm-series/v1.md"}
    one = rows["gemm_ceiling(gemm, shape='square-8192')"]
    every = rows["gemm_ceiling_series(gemm, shape='square-8192')"]
    assert len(one["evidence"]) == 1 and len(every["evidence"]) == 4
    flops = [2.0 * 8192**3 / (1.70e-03 * s) for s in (1, 1, 0.88, 0.88)]
    assert every["value"] == pytest.approx(math.prod(flops) ** 0.25, rel=3e-3)  # the sessions' geometric mean
    assert re.search(r"4 sessions of configuration cfg-", every["derivation"])
    assert "95% interval across sessions: where a new session on this card lands, from these 4" in every["derivation"]
    low, high = every["uncertainty"]
    assert low < every["value"] < high


def test_gemm_ceiling_series_pools_one_shape_across_run_designs_on_one_card_and_dtype() -> None:
    """A run of another design (another ``tokens``, so another configuration key) that timed the same square
    product on the same card and dtype is one more session of that shape's ceiling; another card or dtype is not."""
    import copy

    from render.evidence.archive import load_evidence
    from render.functions.derivations import Library
    from render.functions.kernels import gemm_ceiling_series
    from render.functions.page import Page

    docs = load_evidence(FIXTURE / "archive").docs
    first = min(docs, key=lambda i: (str(docs[i].get("created_at")), i))

    def variant(**change: Any) -> dict[str, Any]:
        doc = copy.deepcopy(docs[first])
        for path, value in change.items():
            where, field = (doc["machine"], "gpu") if path == "gpu" else (doc["params"], path)
            where[field] = value
        return doc

    other_design = variant(tokens=docs[first]["params"]["tokens"] * 2)
    assert config_key(other_design).ident != config_key(docs[first]).ident
    other_card = variant(gpu={"name": "NVIDIA H100 80GB HBM3"})
    other_dtype = variant(gemm_dtype="fp32")
    extra = {"a" * 64: other_design, "b" * 64: other_card, "c" * 64: other_dtype}
    page = Page(Library(docs | extra), {"gemm": first})
    q = gemm_ceiling_series(page, "gemm", "square-8192")
    assert set(q.evidence) == set(docs) | {"a" * 64}  # the fixture's four sessions and the other design
    assert "5 sessions of configurations cfg-" in q.derivation
    assert "(8192×8192×8192, bf16) on NVIDIA H200" in q.derivation
