"""Data-parallel derivations (render/derive/scaling.py): literal inputs, exact expected values."""

from __future__ import annotations

import pytest

from measure.errors import ProbebookError
from render.derive import scaling


def test_ring_factor():
    assert scaling.ring_factor(1) == 0.0
    assert scaling.ring_factor(2) == 1.0
    assert scaling.ring_factor(8) == 1.75
    assert scaling.ring_factor(64) == 1.96875
    with pytest.raises(ProbebookError, match="rank count"):
        scaling.ring_factor(0)


def test_efficiency_and_shares():
    assert scaling.scaling_efficiency(0.5, 0.625) == 0.8
    assert scaling.share(1.0, 8.0) == 0.125
    assert scaling.overlap_fraction(4.0, 1.0) == 0.75
    assert scaling.overlap_fraction(4.0, 4.0) == 0.0
    assert scaling.unexplained_s(0.5, 0.75, 0.125) == 0.125


def test_paired_efficiency_is_the_median_round_ratio():
    assert scaling.paired_efficiency([1.0, 2.0, 3.0], [2.0, 2.0, 4.0]) == 0.75  # ratios 0.5, 1.0, 0.75
    with pytest.raises(ProbebookError, match="as many no_sync as DDP"):
        scaling.paired_efficiency([1.0], [1.0, 2.0])


def test_bandwidths_as_nccl_tests_defines_them():
    assert scaling.algorithm_bandwidth_b_s(2**30, 0.25) == 2**32
    assert scaling.bus_bandwidth_b_s(2**30, 0.25, 2) == 2**32  # 2(n-1)/n = 1 on two ranks
    assert scaling.bus_bandwidth_b_s(2**30, 0.25, 8) == 2**32 * 1.75
    assert scaling.ring_allreduce_s(1000.0, 8, 1750.0) == 1.0


def test_projection_adds_the_ring_all_reduce_growth():
    # measured at 2: step 10, gradient all-reduce 4; at 8 it takes 4*1.75 = 7, so 3 more
    assert scaling.projected_step_s(10.0, 4.0, 2, 8) == 13.0
    assert scaling.projected_step_s(10.0, 4.0, 2, 2) == 10.0  # at the measured count: the measured step
    assert scaling.projected_step_s(10.0, 1.0, 2, 64) == 10.96875
    assert scaling.projected_step_s(10.0, 1.75, 8, 2) == 9.25  # fewer ranks: 1.75 / 1.75 = 1 instead of 1.75
    with pytest.raises(ProbebookError, match="at least 2 ranks"):
        scaling.projected_step_s(10.0, 4.0, 1, 8)


def _doc(gpus: int = 2) -> dict:
    rows = [{"phase": "step", "gpus": 1, "window": i, "step_s": t} for i, t in enumerate([0.5, 0.4, 0.6])]
    if gpus > 1:
        rows += [{"phase": "step", "gpus": 2, "window": i, "step_s": t} for i, t in enumerate([0.625, 0.7, 0.6])]
        rows += [
            {"phase": "paired", "gpus": 2, "arm": arm, "round": r, "step_s": t}
            for r, pair in enumerate([(0.5, 0.625), (0.5, 0.5), (0.25, 0.5)])
            for arm, t in zip(("no_sync", "ddp"), pair, strict=True)
        ]
        rows += [
            {"phase": "comm", "gpus": 2, "step": 0, "step_s": 0.75, "comm_s": 0.25, "exposed_s": 0.0625},
            {"phase": "comm", "gpus": 2, "step": 1, "step_s": 0.75, "comm_s": 0.25, "exposed_s": 0.0625},
        ]
        rows += [
            {"phase": "allreduce", "gpus": 2, "kind": "gradient", "dtype": "fp32", "bytes": 2**20, "window": i,
             "time_s": t}
            for i, t in enumerate([2**-10, 2**-9, 2**-11])
        ]  # fmt: skip
        rows += [
            {"phase": "allreduce", "gpus": 2, "kind": "sweep", "dtype": "bf16", "bytes": 2**23, "window": 0,
             "time_s": 2**-8}
        ]  # fmt: skip
    return {"params": {"gpus": gpus, "tokens_per_rank": 1000}, "data": {"samples": rows, "grad_bytes": 2**20}}


def test_summarize_two_gpus():
    s = scaling.summarize(_doc())
    assert (s.step_1_s, s.step_n_s) == (0.5, 0.625)
    assert (s.tok_s_1, s.tok_s_n) == (2000.0, 1600.0)
    assert s.efficiency == 0.8
    assert s.paired_efficiency == 0.8  # round ratios 0.8, 1.0, 0.5
    assert (s.comm_s, s.exposed_s, s.instrumented_step_s) == (0.25, 0.0625, 0.75)
    assert s.comm_share == 0.4 and s.exposed_share == 0.1 and s.overlap == 0.75
    assert s.other_s == 0.0625 and s.other_share == 0.1  # 0.625 - 0.5 - 0.0625
    assert s.grad_allreduce_s == 2**-10 and s.grad_algbw_b_s == 2**30 and s.grad_busbw_b_s == 2**30
    assert s.sweep_busbw_b_s == {2**23: 2**31}
    # PROJECTION at 8: all-reduce 2**-10 * 1.75, so the step grows by 2**-10 * 0.75
    assert scaling.projected_efficiency(s, 8) == 0.5 / (0.625 + 2**-10 * 1.75 - 2**-10)


def test_summarize_one_gpu_says_n_is_one():
    s = scaling.summarize(_doc(gpus=1))
    assert s.gpus == 1 and s.tok_s_1 == 2000.0
    assert s.step_n_s is None and s.efficiency is None and s.grad_busbw_b_s is None and s.sweep_busbw_b_s == {}
    assert scaling.projected_efficiency(s, 8) is None


def test_summarize_refuses_evidence_without_the_baseline():
    doc = _doc()
    doc["data"]["samples"] = [r for r in doc["data"]["samples"] if r["gpus"] != 1]
    with pytest.raises(ProbebookError, match="'step_s' values for 1 GPU"):
        scaling.summarize(doc)
