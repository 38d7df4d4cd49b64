"""render.derive's small derivations: GEMM FLOP/s and ceilings, kernel time by category, ablation savings,
throughput, and percent text."""

from __future__ import annotations

import pytest

from measure.errors import ProbebookError
from measure.evidence.contracts import tokens_per_second
from render.derive import gemm, kernels
from render.derive.ablation import saving_fraction
from render.numbers.units import percent


def test_gemm_tflop_s_counts_two_flops_per_multiply_add():
    # 2·1024·1024·1024 FLOPs in 2**-10 s = 2**41 FLOP/s
    assert gemm.gemm_tflop_s(1024, 1024, 1024, 2.0**-10) == 2.0**41 / 1e12


def test_gemm_shapes_group_windows_and_the_ceiling_is_the_median_window():
    rows = [
        {"shape": "sq", "m": 8, "n": 8, "k": 8, "time_s": 4.0},
        {"shape": "tall", "m": 16, "n": 4, "k": 2, "time_s": 1.0},
        {"shape": "sq", "m": 8, "n": 8, "k": 8, "time_s": 1.0},
        {"shape": "sq", "m": 8, "n": 8, "k": 8, "time_s": 2.0},
    ]
    sq, tall = gemm.gemm_shapes(rows)
    assert (sq.shape, sq.windows, sq.median_time_s) == ("sq", 3, 2.0)
    assert sq.median_tflop_s == 1024 / 2.0 / 1e12 and sq.best_tflop_s == 1024 / 1.0 / 1e12
    assert (tall.shape, tall.windows, tall.best_tflop_s) == ("tall", 1, 256 / 1e12)
    shape, flop_s = gemm.gemm_ceiling_flop_s(rows, "sq")
    assert shape == sq and flop_s == pytest.approx(512.0, rel=1e-15)
    assert gemm.gemm_ceiling_flop_s(rows[1:2])[1] == pytest.approx(256.0, rel=1e-15)  # one shape: no name needed
    with pytest.raises(ProbebookError, match="give shape= one of sq, tall"):
        gemm.gemm_ceiling_flop_s(rows)
    with pytest.raises(ProbebookError, match="rows of several sizes"):
        gemm.gemm_ceiling_flop_s([*rows, {"shape": "sq", "m": 4, "n": 8, "k": 8, "time_s": 1.0}], "sq")


def test_category_time_and_shares_sum_device_time_per_category():
    rows = [
        {"kernel": "k1", "category": "gemm", "calls": 2, "device_time_s": 0.5},
        {"kernel": "k2", "category": "attention", "calls": 0, "device_time_s": 0.25},
        {"kernel": "k3", "category": "gemm", "calls": 1, "device_time_s": 0.25},
    ]
    assert kernels.category_time_s(rows) == {"gemm": 0.75, "attention": 0.25}
    assert kernels.category_shares(rows) == {"gemm": 0.75, "attention": 0.25}
    assert kernels.category_shares([]) == {}
    assert kernels.kernel_shares(rows) == [0.5, 0.25, 0.25]
    assert kernels.kernel_shares([{"device_time_s": 0.0}]) == [None]
    assert kernels.per_call_s(0.5, 2) == 0.25 and kernels.per_call_s(0.25, 0) is None


def test_saving_fraction_is_one_minus_arm_over_baseline():
    assert saving_fraction(0.03, 0.05) == 1 - 0.03 / 0.05
    assert saving_fraction(0.06, 0.05) == 1 - 0.06 / 0.05  # an arm slower than the baseline saves a negative share
    with pytest.raises(ProbebookError, match="baseline's median must be a positive time"):
        saving_fraction(0.03, 0.0)


def test_tokens_per_second():
    assert tokens_per_second(4096, 0.5) == 8192.0


def test_percent_text():
    assert percent(0.1234) == "12.3%"
    assert percent(1) == "100.0%"
    assert percent(0.042, "+.3g") == "+4.2%"
    assert percent(None) == "n/a"
