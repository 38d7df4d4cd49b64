"""Batch-sweep summaries: fastest stable batch, largest fitting batch and first OOM per model and context."""

from __future__ import annotations

import pytest

from measure.errors import ProbebookError
from render.derive.batchsweep import BatchSummary, summarize


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
        ),
        BatchSummary(
            "250m",
            250_000_000,
            2048,
            fastest_stable_batch=4,
            fastest_tok_s=25_000.0,
            largest_fitting_batch=8,
            first_oom_batch=16,
        ),
        BatchSummary(
            "250m",
            250_000_000,
            4096,
            fastest_stable_batch=2,
            fastest_tok_s=16_000.0,
            largest_fitting_batch=2,
            first_oom_batch=None,
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
