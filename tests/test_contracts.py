"""Column contracts (measure.evidence.contracts): the ok/oom rule, stored-row checks, page order, importable probes."""

from __future__ import annotations

import pytest

from measure.evidence import contracts

OK = {"model": "90m", "params": 90_000_000, "context": 1024, "batch": 4, "tok_s": 1.5e5, "peak_bytes": 2**30}


@pytest.mark.parametrize(
    "row, expected",
    [
        ({"status": "ok", "tok_s": 10.0}, None),
        ({"status": "oom", "tok_s": None}, None),
        ({"status": "ok"}, "an ok row needs tok_s"),
        ({"status": "fail", "tok_s": 1.0}, "status must be ok or oom, got 'fail'"),
        ({}, "status must be ok or oom, got None"),
    ],
)
def test_status_rule(row, expected):
    assert contracts.status_problem(row) == expected


@pytest.mark.parametrize(
    "row, expected",
    [
        ({**OK, "status": "ok"}, None),
        ({**OK, "status": "oom", "tok_s": None, "peak_bytes": None}, None),
        ({**OK, "status": "ok", "peak_bytes": None}, "peak_bytes: missing"),
        ({**OK, "status": "ok", "tok_s": None}, "tok_s: missing"),
        ({**OK, "status": "ok", "batch": 0}, "batch: must be a positive integer, got 0"),
        ({**OK, "status": "ok", "tok_s": -1.0}, "tok_s: must be positive, got -1.0"),
        ({**OK, "status": "ok", "params": True}, "params: must be a finite number, got True"),
        ({**OK, "status": "ok", "model": " "}, "model: must be non-empty text, got ' '"),
        ({**OK, "status": "maybe"}, "status: status must be ok or oom, got 'maybe'"),
        ({**OK, "status": "ok", "device_bytes": 2.5}, "device_bytes: must be a positive integer, got 2.5"),
        ("not a row", "is not an object"),
    ],
)
def test_a_stored_batch_sweep_row_against_its_contract(row, expected):
    assert contracts.row_problem("batch-sweep", row) == expected


def test_step_scaling_optional_columns_may_be_absent_and_extra_columns_are_not_checked():
    assert contracts.row_problem("step-scaling", {"tokens": 512, "step_s": 0.25, "note": object()}) is None
    assert contracts.row_problem("step-scaling", {"tokens": 512}) == "step_s: missing"


def test_evidence_page_order_and_importable_probes():
    assert contracts.column_order("batch-sweep")[:4] == ("model", "params", "context", "batch")
    assert contracts.column_order("step-scaling") == ("mode", "batch", "tokens", "window", "step_s")
    assert contracts.column_order("no-such-probe") == ()
    assert contracts.importable() == ["step-scaling", "loss-memory", "batch-sweep"]
