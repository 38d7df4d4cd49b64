"""Batch-sweep summaries: fastest stable batch, largest fitting batch and first OOM per model and context."""

from __future__ import annotations

import pytest

from measure.errors import ProbebookError
from render.derive.batchsweep import BatchSummary, fastest_group, models, summarize


def row(model, params, context, batch, tok_s, status="ok"):
    return {
        "model": model,
        "params": params,
        "context": context,
        "batch": batch,
        "tok_s": tok_s,
        "peak_bytes": None if status == "oom" else 1_000_000 * batch,
        "status": status,
    }


ROWS = [
    # 250m at 2048: fastest at 4, 8 still fits (mild drop), 16 OOMs, 64 ran by luck above the OOM
    row("250m", 250_000_000, 2048, 1, 10_000.0),
    row("250m", 250_000_000, 2048, 2, 18_000.0),
    row("250m", 250_000_000, 2048, 4, 25_000.0),
    row("250m", 250_000_000, 2048, 8, 24_000.0),
    row("250m", 250_000_000, 2048, 16, None, "oom"),
    row("250m", 250_000_000, 2048, 32, None, "oom"),
    row("250m", 250_000_000, 2048, 64, 30_000.0),
    # 250m at 4096: throughput collapses at 4 (spilling), no OOM reported
    row("250m", 250_000_000, 4096, 1, 9_000.0),
    row("250m", 250_000_000, 4096, 2, 16_000.0),
    row("250m", 250_000_000, 4096, 4, 5_000.0),
    row("250m", 250_000_000, 4096, 8, 20_000.0),
    # 20m: ties go to the smaller batch
    row("20m", 20_000_000, 2048, 8, 90_000.0),
    row("20m", 20_000_000, 2048, 16, 90_000.0),
    # 1b: nothing fits
    row("1b", 1_000_000_000, 2048, 1, None, "oom"),
]


def test_summary_per_model_and_context():
    assert summarize(ROWS) == [
        BatchSummary(
            "20m",
            20_000_000,
            2048,
            fastest_stable_batch=8,
            fastest_tok_s=90_000.0,
            largest_fitting_batch=16,
            first_oom_batch=None,
            runner_up_batch=16,  # the next stable batch by tokens/s (no cv in these rows: no tie test)
        ),
        BatchSummary(
            "250m",
            250_000_000,
            2048,
            fastest_stable_batch=4,
            fastest_tok_s=25_000.0,
            largest_fitting_batch=8,
            first_oom_batch=16,
            runner_up_batch=8,  # the next stable batch by tokens/s (no cv in these rows: no tie test)
        ),
        BatchSummary(
            "250m",
            250_000_000,
            4096,
            fastest_stable_batch=2,
            fastest_tok_s=16_000.0,
            largest_fitting_batch=2,
            first_oom_batch=None,
            runner_up_batch=1,  # the next stable batch by tokens/s (no cv in these rows: no tie test)
        ),
        BatchSummary(
            "1b",
            1_000_000_000,
            2048,
            fastest_stable_batch=None,
            fastest_tok_s=None,
            largest_fitting_batch=None,
            first_oom_batch=1,
        ),
    ]


def test_collapse_threshold_is_a_parameter():
    only = [r for r in ROWS if r["context"] == 4096]
    assert summarize(only, collapse=0.25)[0].largest_fitting_batch == 8
    assert summarize(only, collapse=0.25)[0].fastest_stable_batch == 8


def test_to_json():
    assert summarize(ROWS)[-1].to_json() == {
        "model": "1b",
        "params": 1_000_000_000,
        "context": 2048,
        "fastest_stable_batch": None,
        "fastest_tok_s": None,
        "largest_fitting_batch": None,
        "first_oom_batch": 1,
        "unstable_batches": [],
        "spilled_batches": [],
    }


def test_refusals_name_the_row():
    with pytest.raises(ProbebookError, match="batch-sweep row 0: status must be ok or oom, got 'fail'"):
        summarize([row("m", 1, 2048, 1, 1.0, "fail")])
    with pytest.raises(ProbebookError, match="batch-sweep row 1: an ok row needs tok_s"):
        summarize([row("m", 1, 2048, 1, 1.0), row("m", 1, 2048, 2, None)])
    with pytest.raises(ProbebookError, match="batch-sweep row 0: missing context"):
        summarize([{**row("m", 1, 2048, 1, 1.0), "context": None}])
    with pytest.raises(ProbebookError, match="several params values"):
        summarize([row("m", 1, 2048, 1, 1.0), row("m", 2, 2048, 2, 1.0)])


def test_unstable_batches_fit_but_never_are_the_fastest_stable_batch():
    rows = [
        {**row("m", 1, 1024, 1, 10_000.0), "unstable": False},
        {**row("m", 1, 1024, 2, 30_000.0), "unstable": True},  # the fastest, but its CV was over 5%
        {**row("m", 1, 1024, 4, 20_000.0), "cv": 0.04},  # imported: no flag, a CV under 5%
        {**row("m", 1, 1024, 8, 25_000.0), "cv": 0.06},  # imported: a CV over 5%
    ]
    (g,) = summarize(rows)
    assert (g.fastest_stable_batch, g.fastest_tok_s) == (4, 20_000.0)
    assert (g.largest_fitting_batch, g.unstable_batches) == (8, (2, 8))


def test_a_peak_above_the_card_is_a_spill_and_ends_what_fits():
    rows = [row("m", 1, 1024, b, 1000.0 * b) for b in (1, 2, 4, 8)]  # peak_bytes = 1e6 x batch
    (g,) = summarize(rows, device_bytes=3_000_000)  # batches 4 and 8 peak above a 3 MB card
    assert (g.fastest_stable_batch, g.largest_fitting_batch, g.spilled_batches) == (2, 2, (4, 8))
    (g,) = summarize([{**r, "device_bytes": 5_000_000} for r in rows])  # an imported device_bytes column wins
    assert (g.fastest_stable_batch, g.spilled_batches) == (4, (8,))
    assert summarize(rows)[0].spilled_batches == ()  # no total known: no spill proven


def test_fastest_group_picks_the_context_with_the_highest_throughput():
    groups = {(g.model, g.context): g for g in summarize(ROWS)}
    assert fastest_group([groups[("250m", 2048)], groups[("250m", 4096)]]) == groups[("250m", 2048)]
    assert fastest_group([groups[("250m", 4096)], groups[("250m", 2048)]]).context == 2048
    assert fastest_group([groups[("1b", 2048)]]) is None
    assert fastest_group([]) is None


def test_models_lists_each_model_once_and_with_stable_only_those_with_a_fastest_stable_batch():
    rows = [
        {**row("small", 1, 512, 1, 1000.0), "unstable": False},
        {**row("small", 1, 1024, 1, 900.0), "unstable": False},
        {**row("shaky", 2, 512, 1, 800.0), "unstable": True},  # its only point ran with a CV over 5%
    ]
    groups = summarize(rows)
    assert models(groups) == ["small", "shaky"]
    assert models(groups, stable=True) == ["small"]
    assert models([]) == []


def test_headroom_at_largest_fitting_batch_and_recommended_batch_under_margin() -> None:
    """Peaks 1, 2, 4, 8 MB on a 9 MB card: 1 MB (11.1%) free at batch 8; a 10% margin keeps to 8.1 MB (batch 8
    fits it), a 20% margin to 7.2 MB (batch 4)."""
    from render.derive.batchsweep import headroom

    group = [r for r in ROWS if r["model"] == "250m" and r["context"] == 2048]
    room = headroom(group, 8, 9_000_000.0)
    assert room.margin == 0.10
    assert room.peak_bytes == 8_000_000.0
    assert room.device_bytes == 9_000_000.0
    assert room.headroom_bytes == 1_000_000.0
    assert room.headroom_share == 1_000_000.0 / 9_000_000.0
    assert room.recommended_batch == 8
    assert headroom(group, 8, 9_000_000.0, margin=0.2).recommended_batch == 4
    assert headroom(group, 8, 1_000_000.0, margin=0.5).recommended_batch is None  # 0.5 MB: nothing fits


def test_headroom_a_row_card_wins_and_missing_peaks_give_none() -> None:
    from render.derive.batchsweep import headroom

    rows = [dict(row("m", 1, 64, 2, 5.0), device_bytes=4_000_000), dict(row("m", 1, 64, 4, 6.0), peak_bytes=None)]
    room = headroom(rows, 4, 9_000_000.0)
    assert room.device_bytes == 4_000_000.0
    assert room.peak_bytes is None and room.headroom_bytes is None and room.headroom_share is None
    assert room.recommended_batch == 2
    assert headroom(rows, None, None).recommended_batch is None
    with pytest.raises(ProbebookError, match="margin must be in"):
        headroom(rows, 4, 1.0, margin=1.0)
