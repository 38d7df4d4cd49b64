"""The *Trace diff* section of a reproduction's comparison page (issue 43): shown for each evidence name that both
the original and the re-measured run hold as a kernels profile, with each side's timed step and its interval, a
ledger row per number, and absent where no name pairs two profiles."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest

from render.derive import intervals, kernels
from render.derive import reproduction as derive
from render.evidence.archive import load_evidence
from render.pages import reproductions, sources, tracediff

ARCHIVE = Path(__file__).resolve().parent.parent / "archive"
DOCS = Path(__file__).resolve().parent / "fixtures" / "reproduction" / "docs"
LOOPED = "sha256:23cd57e1a6a9ed9dafa8e6cc3d7ca89e729431d7539a7e7ac1a259c3adfa4418"  # H200 moe-250m, kernels v5
GROUPED = "sha256:62fc33c39b32e1553301061952c3e20e5c207667625a488fbc90e81e10c106de"  # same session, grouped experts
GEMM = "sha256:d6470145f6e2e759da5f2c87d6be7b09d2b02674632592ce7394cb6d5eb50918"  # a gemm ceiling: not a profile
REPRO = "sha256:" + "e4" * 32


def _repro(original: dict[str, str], new: dict[str, str]) -> dict:
    """A reproduction document naming the evidence sets ``original`` and ``new`` (no numbers: the section reads
    only the ids)."""
    return {
        "probe": "reproduction",
        "created_at": "2026-12-02T00:00:00Z",
        "data": {"record": "gemm-ceiling", "version": 1, "mode": "reproduction", "title": "t", "rule": "r",
                 "original": original, "new": new, "numbers": [], "claims": [], "commands": []},
    }  # fmt: skip


@pytest.fixture(scope="module")
def docs() -> dict[str, dict]:
    return dict(load_evidence(ARCHIVE).docs)


def _page(docs: dict[str, dict], original: dict[str, str], new: dict[str, str]) -> tuple[str, list[dict]]:
    doc = _repro(original, new)
    found = {**docs, REPRO: doc}
    return reproductions.comparison(derive.parse(REPRO, doc), found, sources.load(DOCS))


def test_a_profile_on_both_sides_gets_its_trace_diff_with_each_sides_step(docs) -> None:
    text, rows = _page(docs, {"kernels": LOOPED, "ceiling": GEMM}, {"kernels": GROUPED, "ceiling": GEMM})
    assert "## Trace diff" in text and "### kernels" in text and "### ceiling" not in text
    assert "| a, per step | b, per step | change, per step | change |" in text
    by_key = {r["key"]: r for r in rows}
    # each side's step: the recorded median of its windows and the order-statistic interval of that median
    for side, ident in (("original", LOOPED), ("new", GROUPED)):
        timed = docs[ident]["data"]["event_step"]
        row = by_key[f"trace_diff(kernels).{side}_step"]
        assert row["value"] == timed["median_s"] and row["evidence"] == [ident]
        assert tuple(row["uncertainty"]) == intervals.median_interval(timed["windows_s"])
    # the table's 'all' row: each side's kernel time per profiled step, as the derivation sums it
    a, b = docs[LOOPED], docs[GROUPED]
    diff = kernels.trace_diff(a["data"]["samples"], a["params"]["steps"], b["data"]["samples"], b["params"]["steps"])
    (whole,) = [r for r in diff if r["category"] == "all"]
    at = diff.index(whole) + 1  # rows are numbered from 1, in the derivation's order
    assert by_key[f"trace_diff(kernels)[row {at}].a_s"]["value"] == whole["a_s"]
    assert by_key[f"trace_diff(kernels)[row {at}].a_s"]["evidence"] == [LOOPED]  # a side's time is that side's
    assert by_key[f"trace_diff(kernels)[row {at}].change_s"]["value"] == whole["b_s"] - whole["a_s"]
    assert by_key[f"trace_diff(kernels)[row {at}].change_s"]["evidence"] == [LOOPED, GROUPED]
    assert by_key[f"trace_diff(kernels)[row {at}].change"]["value"] == whole["b_s"] / whole["a_s"] - 1
    assert len({r["key"] for r in rows}) == len(rows)  # every number on the page under a key of its own
    kernel_rows = [line for line in text.split("### kernels")[1].splitlines() if line.startswith("|")]
    assert len(kernel_rows) == 2 + len(diff)  # header, rule, one line per category, 'all' and the ten kernels


def test_no_section_without_a_profile_on_both_sides(docs) -> None:
    text, rows = _page(docs, {"kernels": LOOPED}, {"other": GROUPED})
    assert "Trace diff" not in text and not any(r["key"].startswith("trace_diff(") for r in rows)
    text, _ = _page(docs, {"ceiling": GEMM}, {"ceiling": GEMM})
    assert "Trace diff" not in text


def test_a_malformed_profile_is_said_on_the_page_not_a_failed_build(docs) -> None:
    broken = copy.deepcopy(docs[GROUPED])
    broken["params"]["steps"] = 0
    ident = "sha256:" + "e5" * 32
    text, rows = _page({**docs, ident: broken}, {"kernels": LOOPED}, {"kernels": ident})
    assert re.search(r"\*No trace diff: .*steps &gt;= 1, got 0\*", text)
    assert {r["key"] for r in rows} >= {"trace_diff(kernels).original_step", "trace_diff(kernels).new_step"}


def test_a_step_without_windows_is_shown_as_recorded() -> None:
    q = tracediff.step({"data": {"event_step": {"median_s": 0.05}}}, "sha256:" + "0" * 64, "new", "k")
    assert (q.value, q.uncertainty, q.basis) == (0.05, None, "as recorded")
    q = tracediff.step({"data": {}}, "sha256:" + "0" * 64, "new", "k")
    assert q.value is None and "no timed step" in (q.note or "")
