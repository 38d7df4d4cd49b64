"""Requested-but-not-engaged options and unexpected SDPA backends: the pure marks, and a real CPU run whose
plug-in ignores ``--compile`` (warned on the terminal, marked in ``data.engagement_warnings``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import assert_measured

from measure.evidence.envelope import parse
from measure.evidence.store import Store
from measure.workload.observe import engagement_marks

HERE = Path(__file__).resolve().parent
ENV = {"PYTHONPATH": f"{HERE / 'fixtures' / 'plugin_harness'}:{HERE.parent}"}


def test_compile_requested_and_not_engaged_is_marked():
    marks = engagement_marks(
        {"compile_engaged": False, "sdpa_backend": "flash"}, compile_requested=True, device="cuda", dtype="bf16"
    )
    assert [m["kind"] for m in marks] == ["compile-not-engaged"]
    assert marks[0]["message"] == "--compile was requested but no compiled region ran: the step ran eager"


def test_engaged_compile_and_an_expected_backend_are_not_marked():
    seen = {"compile_engaged": True, "sdpa_backend": "cudnn"}
    assert engagement_marks(seen, compile_requested=True, device="cuda", dtype="bf16") == []
    assert engagement_marks({"compile_engaged": False}, compile_requested=False, device="cuda", dtype="bf16") == []


def test_math_attention_on_cuda_in_bf16_is_unexpected():
    seen = {"compile_engaged": False, "sdpa_backend": "math"}
    marks = engagement_marks(seen, compile_requested=False, device="cuda", dtype="bf16", where="S=4096")
    assert marks == [
        {
            "kind": "unexpected-sdpa-backend",
            "where": "S=4096",
            "expected": ["cudnn", "flash", "efficient"],
            "observed": "math",
            "message": "attention ran on SDPA's math backend (S=4096); expected cudnn or flash or efficient "
            "on cuda in bf16",
        }
    ]


def test_no_attention_gives_no_backend_mark():
    assert engagement_marks({"sdpa_backend": None}, compile_requested=False, device="cuda", dtype="bf16") == []


@pytest.mark.slow
def test_a_plugin_that_ignores_compile_is_warned_and_marked(cli, archive):
    pytest.importorskip("torch")
    out = cli(
        "--archive", str(archive), "measure", "step-scaling", "--device", "cpu", "--workload",
        "tiny_lm.harness:factory", "--compile", "--seq-lens", "4,8,16", "--modes", "fixed_batch",
        "--warmup", "1", "--windows", "2", "--iters", "1", env=ENV,
    )  # fmt: skip
    assert_measured(out)
    assert "--compile was requested but no compiled region ran (fixed_batch S=4 B=" in out.stderr
    ident = out.stdout.strip().splitlines()[-1]
    doc = parse(Store(archive).read_bytes(ident), ident)
    marks = doc["data"]["engagement_warnings"]
    assert len(marks) == 3 and {m["kind"] for m in marks} == {"compile-not-engaged"}
    assert all(p["compile_engaged"] is False for p in doc["data"]["points"])
