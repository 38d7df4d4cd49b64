"""Kernel categories where the trace says where a kernel ran (issue 40): inside ``optimizer.step``'s range the
optimizer's, inside an SDPA operator attention's, else by name; a row split by range keeps its total time."""

from __future__ import annotations

import pytest

from measure.evidence.kernel_names import categorize, categorize_in, enclosing
from measure.probes.kernels import placed_rows  # pure, and the probe's module imports no torch at load

OPT = "Optimizer.step#AdamW.step"


@pytest.mark.parametrize(
    ("name", "ancestors", "category"),
    [
        ("aten::mul_", [OPT], "optimizer"),  # AdamW's elementwise work on the CPU
        (
            "vectorized_elementwise_kernel<mul>",
            ["cudaLaunchKernel", "aten::mul_", "aten::_foreach_mul_", OPT],
            "optimizer",
        ),
        ("aten::bmm", ["aten::_scaled_dot_product_attention_math", "aten::scaled_dot_product_attention"], "attention"),
        ("softmax_warp_forward", ["aten::_softmax", "aten::_scaled_dot_product_attention_math"], "attention"),
        ("aten::mm", ["autograd::engine::evaluate_function: ScaledDotProductEfficientAttentionBackward0"], "attention"),
        ("aten::mm", ["aten::matmul", "aten::linear"], "gemm"),
        ("softmax_warp_forward", ["aten::_log_softmax", "aten::cross_entropy_loss"], "loss"),
    ],
)
def test_the_range_decides_before_the_name(name, ancestors, category):
    assert categorize_in(name, ancestors) == category


def test_without_a_range_the_name_decides():
    assert categorize_in("aten::mul_", []) == categorize("aten::mul_") == "norm-elementwise"
    assert enclosing(["aten::linear"]) is None
    assert enclosing(["aten::mul_", OPT, "ProfilerStep#1"]) == OPT


def test_a_row_is_split_by_where_its_calls_ran_and_keeps_its_total():
    rows = [
        {"kernel": "aten::mul_", "calls": 10, "device_time_s": 1.0},
        {"kernel": "aten::mm", "calls": 4, "device_time_s": 2.0},
    ]
    where = [
        {"kernel": "aten::mul_", "time_s": 0.25, "ancestors": [OPT]},
        {"kernel": "aten::mul_", "time_s": 0.75, "ancestors": ["aten::silu"]},
        {"kernel": "aten::mm", "time_s": 2.0, "ancestors": ["aten::linear"]},
    ]
    out = placed_rows(rows, where)
    assert out == [
        {"kernel": "aten::mm", "calls": 4, "device_time_s": 2.0, "category": "gemm", "within": None},
        {"kernel": "aten::mul_", "calls": 8, "device_time_s": 0.75, "category": "norm-elementwise", "within": None},
        {"kernel": "aten::mul_", "calls": 2, "device_time_s": 0.25, "category": "optimizer", "within": OPT},
    ]
    assert sum(r["device_time_s"] for r in out) == 3.0 and sum(r["calls"] for r in out) == 14
