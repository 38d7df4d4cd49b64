"""The importer: column contracts (ARCHITECTURE.md §Evidence) on CSV and JSON, typed rows, malformed import input."""

from __future__ import annotations

from pathlib import Path

import pytest

from measure.errors import EvidenceError
from measure.evidence import importer
from measure.evidence.envelope import parse

FIXTURES = Path(__file__).resolve().parent / "fixtures"
GOOD = FIXTURES / "import"
MALFORMED = FIXTURES / "malformed" / "import"

# Every file in the malformed-import corpus (named <probe>--<case>.<ext>) and the tail of its
# one-line error, which follows the file name (and row/column where there is one).
EXPECTED = {
    "batch-sweep--bad-status.csv": " row 2 column 'status': must be ok or oom, got 'maybe'",
    "batch-sweep--empty-rate-ok-row.csv": " row 2 column 'tok_s': empty value",
    "loss-memory--missing-columns.csv": ": missing required column(s) peak_bytes for loss-memory",
    "loss-memory--negative-bytes.csv": " row 2 column 'peak_bytes': must be a non-negative integer, got '-1'",
    "step-scaling--blank.json": ": file is empty",
    "step-scaling--bool-tokens.json": " row 1 column 'tokens': not a number: True",
    "step-scaling--duplicate-column.csv": " row 1: column 'step_s' appears more than once in the header",
    "step-scaling--empty-time.csv": " row 2 column 'step_s': empty value",
    # a mode the fit does not read was archived for good and then refused by every derivation (issue 29)
    "step-scaling--unknown-mode.csv": " row 3 column 'mode': must be one of fixed_batch, fixed_tokens "
    "(what the derivations read), got 'eager'",
    "step-scaling--empty.csv": ": file is empty",
    "step-scaling--extra-cell.csv": " row 3: more cells than header columns",
    "step-scaling--fractional-tokens.csv": " row 2 column 'tokens': must be a positive integer, got '128.5'",
    "step-scaling--header-only.csv": ": no data rows",
    "step-scaling--inf-time.csv": " row 2 column 'step_s': must be finite, got 'inf'",
    "step-scaling--infinity-time.json": ": Infinity is not valid JSON",
    "step-scaling--missing-column.csv": ": missing required column(s) step_s for step-scaling (needs tokens, step_s)",
    "step-scaling--nan-time.csv": " row 3 column 'step_s': must be finite, got 'NaN'",
    "step-scaling--nan-time.json": ": NaN is not valid JSON",
    "step-scaling--negative-extra-time.csv": " row 2 column 'wall_ms': a time must be positive and finite, got '-3'",
    "step-scaling--negative-time.csv": " row 3 column 'step_s': must be positive, got '-0.6'",
    "step-scaling--nested-value.json": " row 1 column 'per_layer_ms': must be a number, text or null, got list",
    "step-scaling--not-rows.json": ": expected a list of row objects",
    "step-scaling--not-utf8.csv": ": not UTF-8 text (byte 30)",
    "step-scaling--overflow-time.csv": " row 2 column 'step_s': must be finite, got '1e400'",
    "step-scaling--positional-rows.json": " row 1: expected an object of column: value, got list",
    "step-scaling--row-missing-column.json": " row 2: missing required column 'step_s' for step-scaling",
    "step-scaling--short-row.csv": " row 3: fewer cells than header columns",
    "step-scaling--text-time.csv": " row 2 column 'step_s': not a number: 'fast'",
    "step-scaling--truncated.json": ": malformed JSON at line 1 column 47",
    "step-scaling--wrong-extension.txt": ": give a .csv or .json file",
    "step-scaling--zero-time.csv": " row 2 column 'step_s': must be positive, got '0'",
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_malformed_input_is_one_line_naming_file_row_and_column(name):
    path = MALFORMED / name
    with pytest.raises(EvidenceError) as info:
        importer.read_rows(name.split("--")[0], path)
    message = str(info.value)
    assert message.startswith(str(path) + EXPECTED[name][:1]), message
    assert EXPECTED[name] in message
    assert "\n" not in message


def test_corpus_and_expectations_cover_each_other():
    assert {p.name for p in MALFORMED.iterdir()} == set(EXPECTED)


def test_step_scaling_csv_rows_are_typed_and_extra_columns_kept():
    rows = importer.read_rows("step-scaling", GOOD / "step-scaling.csv")
    assert rows[0] == {"tokens": 128, "step_s": 0.0121, "batch": 1, "mode": "fixed_batch", "wall_ms": 12.3}
    assert rows[2] == {"tokens": 512, "step_s": 0.0176, "batch": 1, "mode": "fixed_batch", "wall_ms": None}
    assert [r["tokens"] for r in rows] == [128, 256, 512, 1024, 2048]
    assert all(isinstance(r["tokens"], int) for r in rows)


def test_json_rows_as_a_list_or_under_samples():
    assert importer.read_rows("step-scaling", GOOD / "step-scaling.json") == [
        {"tokens": 128, "step_s": 0.0121},
        {"tokens": 512, "step_s": 0.0176},
        {"tokens": 2048, "step_s": 0.0431, "gpu_note": "warm"},
    ]
    assert importer.read_rows("step-scaling", GOOD / "step-scaling-samples.json") == [
        {"tokens": 256, "step_s": 0.0139},
        {"tokens": 1024, "step_s": 0.0254},
    ]


def test_loss_memory_optional_columns_may_be_blank():
    rows = importer.read_rows("loss-memory", GOOD / "loss-memory.csv")
    assert rows[0] == {
        "arm": "eager",
        "microbatch": 4,
        "tokens_per_step": 8192,
        "peak_bytes": 21474836480,
        "tok_s": 51000.5,
        "vocab": 32000,
    }
    assert rows[2]["tok_s"] is None and rows[2]["arm"] == "fused"


def test_batch_sweep_oom_rows_have_null_rate_and_peak():
    rows = importer.read_rows("batch-sweep", GOOD / "batch-sweep.csv")
    assert [r["status"] for r in rows] == ["ok", "ok", "oom"]
    assert rows[2] == {
        "model": "90m",
        "params": 90000000,
        "context": 2048,
        "batch": 32,
        "tok_s": None,
        "peak_bytes": None,
        "status": "oom",
    }
    assert rows[0]["tok_s"] == 151000.0


def test_build_makes_valid_imported_evidence(tmp_path):
    request = importer.ImportRequest(
        probe="batch-sweep", path=GOOD / "batch-sweep.csv", source=" sheet 3 ", gpu="H200", notes="from a colleague"
    )
    ev = importer.build(request, {"probebook": "t"})
    doc = parse(ev.to_bytes(), "built")
    assert doc["origin"] == {"kind": "imported", "source": "sheet 3"}
    assert doc["machine"]["gpu"] == "H200"
    assert doc["params"] == {
        "imported_from": "batch-sweep.csv",
        "columns": ["model", "params", "context", "batch", "tok_s", "peak_bytes", "status"],
    }
    assert len(doc["data"]["samples"]) == 3 and doc["notes"] == "from a colleague"
    assert doc["code"] == {"probebook": "t"}


def test_build_lists_the_union_of_json_columns():
    ev = importer.build(importer.ImportRequest("step-scaling", GOOD / "step-scaling.json", "x"), {})
    assert ev.params["columns"] == ["tokens", "step_s", "gpu_note"]


def test_a_whole_evidence_document_is_refused_with_a_pointer_to_archive_add():
    path = FIXTURES / "malformed" / "evidence" / "schema-99.json"
    with pytest.raises(EvidenceError, match=r"already an evidence document.*probebook archive add"):
        importer.read_rows("step-scaling", path)


def test_blank_source_unknown_probe_and_missing_file_are_clear_errors(tmp_path):
    with pytest.raises(EvidenceError, match="--source must say where the numbers came from"):
        importer.build(importer.ImportRequest("step-scaling", GOOD / "step-scaling.csv", "  "), {})
    with pytest.raises(EvidenceError, match="--probe 'gemm' cannot be imported; choose one of"):
        importer.read_rows("gemm", GOOD / "step-scaling.csv")
    missing = tmp_path / "nope.csv"
    with pytest.raises(EvidenceError, match=f"^{missing}: cannot read"):
        importer.read_rows("step-scaling", missing)
    with pytest.raises(EvidenceError, match=f"^{tmp_path}: cannot read"):
        importer.read_rows("step-scaling", tmp_path)


def test_csv_with_byte_order_mark_and_crlf_lines(tmp_path):
    path = tmp_path / "excel.csv"
    path.write_bytes(b"\xef\xbb\xbftokens,step_s\r\n128,0.5\r\n")
    assert importer.read_rows("step-scaling", path) == [{"tokens": 128, "step_s": 0.5}]
