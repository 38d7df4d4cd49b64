"""The instrumentation-overhead flag on literal inputs: the limit's three-way rule (measure.constants), the optimizer
probe's interval and summary fields, render's verdict from a run's rounds, the follow-up's marks and counts, the
Answer's caveat, and the limit as a page constant."""

from __future__ import annotations

import statistics
from typing import Any

import pytest

from measure.constants import OVERHEAD_LIMIT, overhead_verdict
from measure.errors import ProbebookError
from measure.probes.optimizer import overhead_fields, overhead_interval
from render.derive import followup
from render.functions.derivations import Library
from render.functions.followup import optimizer_timing, optimizer_timing_summary
from render.functions.page import Page
from render.pages import caveats
from render.pages.methodology import constant

CAMP, MANIFEST, HIGH, EDGE, LOW = ("sha256:" + c * 64 for c in "abcde")
ROUNDS = {  # instrumented step seconds per round; every baseline round took 1.0 s
    HIGH: (1.2, 1.3, 1.25),  # overhead 25%, interval 20% to 30%: above the limit
    EDGE: (1.0, 1.1, 1.05),  # 5%, interval 0% to 10%: reaches it
    LOW: (1.01, 1.02, 1.0),  # 1%, interval 0% to 2%: below it
}
BATCH = {HIGH: 1, EDGE: 2, LOW: 4}


def test_the_limit_is_five_percent_and_judged_three_ways():
    assert OVERHEAD_LIMIT == 0.05
    assert overhead_verdict(0.06, 0.08) == "above"
    assert overhead_verdict(0.01, 0.04) == "below"
    assert overhead_verdict(0.03, 0.07) == "not resolved"
    assert overhead_verdict(0.05, 0.05) == "not resolved"  # on the line: neither side
    assert overhead_verdict(0.03, 0.04, limit=0.02) == "above"
    with pytest.raises(ProbebookError, match="low end"):
        overhead_verdict(0.08, 0.06)


def test_the_probes_interval_resamples_rounds_jointly():
    assert overhead_interval([(1.5, 1.0)] * 3) == (0.5, 0.5)
    # ties: at least two of three draws of a round are that round's 7 times in 27, so the 2.5% ends are the extremes
    assert overhead_interval([(1.0, 1.0), (1.2, 1.0), (1.1, 1.0)]) == (0.0, 1.2 / 1.0 - 1)
    assert overhead_interval([(1.0, 1.0), (1.2, 1.0)]) is None


def test_the_probes_summary_fields():
    assert overhead_fields(0.5, [(1.5, 1.0)] * 3) == {
        "overhead_limit": 0.05,
        "instrumentation_overhead_interval": {"low": 0.5, "high": 0.5},
        "overhead_verdict": "above",
        "overhead_flagged": True,
    }
    edge = overhead_fields(0.05, [(1.0, 1.0), (1.1, 1.0), (1.05, 1.0)])
    assert edge["instrumentation_overhead_interval"] == {"low": 0.0, "high": 1.1 / 1.0 - 1}
    assert (edge["overhead_verdict"], edge["overhead_flagged"]) == ("not resolved", False)
    # two paired rounds: no interval, the figure judged as a line
    two = overhead_fields(0.06, [(1.06, 1.0), (1.06, 1.0)])
    assert two["instrumentation_overhead_interval"] is None and two["overhead_verdict"] == "above"
    assert overhead_fields(0.01, [(1.01, 1.0)] * 3)["overhead_verdict"] == "below"


def _samples(ident: str) -> list[dict[str, Any]]:
    rows = []
    for i, step in enumerate(ROUNDS[ident]):
        rows.append({"arm": "instrumented", "round": i, "step_s": step, "optimizer_s": 0.3})
        rows.append({"arm": "baseline", "round": i, "step_s": 1.0, "optimizer_s": None})
    return rows


def _figures(ident: str) -> dict[str, float]:
    step = statistics.median(ROUNDS[ident])
    return {"optimizer_median_s": 0.3, "optimizer_share": 0.3 / step, "instrumentation_overhead": step / 1.0 - 1}


def _docs() -> dict[str, dict[str, Any]]:
    points = [
        {
            "point": f"20m-s512-b{BATCH[i]}",
            "state": "ok",
            "attempts": [
                {
                    "result": {
                        "baseline_evidence": "sha256:base",
                        "instrumented_evidence": i,
                        "tok_s": 1e3,
                        **_figures(i),
                    }
                }
            ],
        }
        for i in ROUNDS
    ]
    docs: dict[str, dict[str, Any]] = {
        CAMP: {"probe": "campaign", "params": {"manifest": MANIFEST}, "data": {"points": points}},
        MANIFEST: {"probe": "campaign", "params": {}, "data": {"kind": followup.KIND}},
    }
    for i in ROUNDS:
        docs[i] = {
            "probe": "optimizer",
            "params": {"preset": "20m", "seq_len": 512, "batch": BATCH[i]},
            "data": {"samples": _samples(i), "summary": _figures(i), "device_check": {"busy": False}},
        }
    return docs


def test_render_judges_a_run_by_its_rounds_interval():
    docs = _docs()
    high = followup.run_overhead(HIGH, docs[HIGH])
    assert high is not None
    assert (high.overhead, high.interval, high.verdict) == (1.25 - 1, (1.2 - 1, 1.3 - 1), "above")
    edge = followup.run_overhead(EDGE, docs[EDGE])
    assert edge is not None and (edge.interval, edge.verdict) == ((0.0, 1.1 - 1), "not resolved")
    assert followup.run_overhead(CAMP, docs[CAMP]) is None  # not an optimizer run
    assert followup.overhead_check(0.04, None) == "below" and followup.overhead_check(0.06, None) == "above"
    assert followup.overhead_check(0.04, (0.03, 0.06)) == "not resolved"
    judged = followup.followup_overheads(docs[CAMP], docs)
    assert [(p.label, p.verdict) for p in judged] == [
        ("20m, context 512, batch 1", "above"),
        ("20m, context 512, batch 2", "not resolved"),
        ("20m, context 512, batch 4", "below"),
    ]


def test_a_flagged_points_figures_carry_the_mark_and_the_summary_counts_them():
    page = Page(Library(_docs()), {"followup": CAMP})
    high, edge, low = optimizer_timing(page, "followup")
    assert (high.flagged.value, high.flagged.text) == (1, "yes")
    assert (edge.flagged.text, low.flagged.text) == ("no", "no")
    for name in ("share", "optimizer", "overhead"):
        assert getattr(high, name).mark == followup.FLAGGED
        assert getattr(edge, name).mark == followup.UNRESOLVED
        assert getattr(low, name).mark is None
    assert "not trusted" in high.share.title and "instrumentation overhead:" in high.share.title
    assert "(instrumentation overhead)" in high.share.markdown("records/x/v1.md")
    assert high.overhead.uncertainty == (1.2 - 1, 1.3 - 1)
    assert high.tok_s.mark is None and high.batch.mark is None  # not the instrumented timing's figures
    summary = optimizer_timing_summary(page, "followup")
    assert (summary.points.value, summary.flagged.value, summary.unresolved.value) == (3, 1, 1)
    # the smallest share is the flagged point's (the slowest instrumented step), the largest the lowest overhead's
    assert summary.share_min.value == 0.3 / 1.25 and summary.share_min.mark == followup.FLAGGED
    assert summary.share_max.value == 0.3 / 1.01 and summary.share_max.mark is None


def test_the_answers_caveats_name_flagged_and_unresolved_timings():
    docs = _docs()
    ((_, said),) = caveats.sentences("followup", CAMP, docs[CAMP], docs)
    assert said.text == (
        "1 of its 3 points' instrumentation overhead is above the 5% limit, so their timed optimizer share is not "
        "trusted; 1 of its 3 points' overhead is not resolved against the 5% limit"
    )
    line = caveats.markdown("records/x/v1.md", {"followup": CAMP}, docs)  # each number linked to the campaign
    assert line.startswith("**Caveats:** In the [campaign evidence]") and "points' instrumentation overhead" in line
    run = caveats.sentences("run", HIGH, docs[HIGH], docs)
    assert [s.text for _, s in run] == [
        "its instrumentation overhead (25.0%, 95% interval 20.0% to 30.0%) is above the 5% limit, so its timed "
        "optimizer share is not trusted"
    ]
    assert caveats.sentences("run", LOW, docs[LOW], docs) == []


def test_the_limit_is_a_page_constant():
    q = constant("overhead_limit")
    assert (q.value, q.text) == (0.05, "5%")
    assert "measure.constants.OVERHEAD_LIMIT" in q.derivation
