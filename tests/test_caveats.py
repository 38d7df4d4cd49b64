"""An Answer names the caveats its evidence carries (issue 42, item 3): unstable points, windows that drift, throttled
and host-bound runs, each a sentence whose numbers are ledger rows linked to the evidence (literal documents), and
the current ddp and batch-sweep records' evidence as archived (their drift and their unstable points)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from render.pages import answers, caveats
from render.pages.sources import load

REPO = Path(__file__).resolve().parent.parent
ID = "sha256:" + "cd" * 32


def _windows(times: list[float], **point: Any) -> list[dict[str, Any]]:
    return [{"window": i, "step_s": t, **point} for i, t in enumerate(times)]


DRIFTING = [0.081, 0.084, 0.090, 0.094, 0.095, 0.100, 0.099, 0.097, 0.098, 0.106]
STEADY = [0.080, 0.076, 0.082, 0.080, 0.079, 0.080, 0.079, 0.081, 0.084, 0.080]


def test_unstable_counts_point_summaries_else_rows_and_an_arm_flag_once() -> None:
    points = [{"unstable": False}, {"unstable": {"a": True, "b": True}}, {"unstable": True}, {"no": "flag"}]
    assert caveats.unstable({"data": {"points": points, "samples": [{"unstable": True}] * 9}}) == (2, 3)
    assert caveats.unstable({"data": {"samples": [{"unstable": True}, {"unstable": False}, {"x": 1}]}}) == (1, 2)
    assert caveats.unstable({"data": {}}) == (0, 0)


def test_a_point_whose_windows_move_one_way_drifts_and_one_slow_window_does_not() -> None:
    doc = {"data": {"samples": _windows(DRIFTING, gpus=2, phase="step") + _windows(STEADY, gpus=1, phase="step")}}
    [(name, first, last, change)] = caveats.drifts(doc)
    assert (name, first, last) == ("gpus 2, phase step", 0.081, 0.106)
    assert round(change, 6) == round(0.098 / 0.084 - 1, 6)  # the last third's median over the first third's
    spike = [*STEADY[:5], 0.5, *STEADY[6:]]
    assert caveats.drifts({"data": {"samples": _windows(spike)}}) == []  # a median is not moved by one window
    assert caveats.drifts({"data": {"samples": _windows(DRIFTING[:5])}}) == []  # too few windows to read a drift


def test_the_caveats_line_names_the_evidence_and_links_every_number_to_it() -> None:
    doc = {
        "probe": "ddp",
        "data": {"points": [{"unstable": False}, {"unstable": True}], "samples": _windows(DRIFTING, gpus=2)},
    }
    text = caveats.markdown("records/x/v1.md", {"run": ID}, {ID: doc})
    page = f"../../evidence/{ID[7:]}.md"
    assert text.startswith(f"**Caveats:** In the [ddp evidence]({page}), [1]({page}#n-")
    assert "measured points were flagged unstable" in text
    assert "; the windows of `gpus 2` drift from [81](" in text and " ms to [106](" in text
    assert "first to last (the last third's median [17%](" in text and text.endswith(" above the first third's).")
    rows = caveats.ledger_rows("records/x/v1.md", {"run": ID}, {ID: doc})
    assert [(r["key"], r["value"]) for r in rows] == [
        ("caveat(run).unstable[0]", 1.0),
        ("caveat(run).unstable[1]", 2.0),
        ("caveat(run).drift[0]", 81.0),
        ("caveat(run).drift[1]", 106.0),
        ("caveat(run).drift[2]", 17.0),
    ]
    assert all(r["evidence"] == [ID] for r in rows)


def test_evidence_without_caveats_adds_nothing_and_the_box_shows_the_line_after_the_verdicts() -> None:
    assert caveats.markdown("records/x/v1.md", {"run": ID}, {ID: {"data": {"samples": _windows(STEADY)}}}) == ""
    box = answers.box(["It is faster."], "**Status:** current", "**Caveats:** In the run, it drifts.")
    assert box.index("It is faster.") < box.index("    **Caveats:** In the run, it drifts.")
    assert "Caveats" not in answers.box(["It is faster."], "**Status:** current")


def _current_caveats(slug: str) -> str:
    record = next(r for r in load(REPO / "docs").records if r.slug == slug)
    aliases = dict(record.current.evidence)
    docs = {}
    for ident in aliases.values():
        hexpart = ident.split(":", 1)[1]
        docs[ident] = json.loads((REPO / "archive/evidence/sha256" / hexpart[:2] / f"{hexpart[2:]}.json").read_text())
    return caveats.markdown(record.current.rel, aliases, docs)


def test_the_ddp_answer_names_its_drift_and_the_batch_sweep_answer_its_unstable_points() -> None:
    ddp = _current_caveats("ddp-scaling-h200")
    assert "the windows of `gpus 2, phase step` drift from [81](" in ddp and " ms to [106](" in ddp
    sweep = _current_caveats("batch-sweep-h200")
    assert "In the [campaign evidence](" in sweep and "[45](" in sweep and "[128](" in sweep
    assert "measured points were flagged unstable" in sweep
