"""Kernel-time derivations: user-annotation rows (``Optimizer.step#...``, ``ProfilerStep#...``) are never
counted, from literal rows and from the archived 250m kernels evidence; architecture tags against the
device's compute capability, with library namespaces (``SM_750``) not taken for tags."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from measure.errors import ProbebookError
from render.derive import kernels

ARCHIVE = Path(__file__).resolve().parent.parent / "archive" / "evidence" / "sha256"

ROWS = [
    {"kernel": "nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopB_NNT", "category": "gemm", "calls": 4, "device_time_s": 0.5},
    {"kernel": "void multi_tensor_apply_kernel<...>", "category": "optimizer", "calls": 2, "device_time_s": 0.25},
    {"kernel": "Optimizer.step#AdamW.step", "category": "optimizer", "calls": 2, "device_time_s": 0.25},
    {"kernel": "void at::native::elementwise_kernel<{lambda(int)#1}>", "category": "norm-elementwise", "calls": 8,
     "device_time_s": 0.25},
    {"kernel": "ProfilerStep#2", "category": "other", "calls": 1, "device_time_s": 1.0},
]  # fmt: skip


def test_annotation_rows_are_not_device_work():
    assert kernels.is_annotation_row("Optimizer.step#AdamW.step")
    assert kernels.is_annotation_row("Optimizer.zero_grad#AdamW.zero_grad")
    assert kernels.is_annotation_row("ProfilerStep#12")
    assert not kernels.is_annotation_row("void at::native::elementwise_kernel<{lambda(int)#1}>")
    assert not kernels.is_annotation_row("Memcpy DtoD (Device -> Device)")
    assert kernels.counted_rows(ROWS) == [ROWS[0], ROWS[1], ROWS[3]]


def test_shares_and_time_per_step_leave_annotations_out():
    # counted: gemm 0.5, optimizer 0.25 (the kernel, not its annotation), norm 0.25; total 1.0
    assert kernels.category_shares(ROWS) == {"gemm": 0.5, "optimizer": 0.25, "norm-elementwise": 0.25}
    assert kernels.kernel_seconds_per_step(ROWS, 2) == 0.5
    assert kernels.category_shares([]) == {}
    with pytest.raises(ProbebookError, match="profiled steps >= 1"):
        kernels.kernel_seconds_per_step(ROWS, 0)


def test_archived_eager_250m_optimizer_share_is_counted_once():
    path = ARCHIVE / "05" / "1dc10c7475de09384f2958954f21bb66fc7af2fe04ace7dee9e3362c2c0199.json"
    doc = json.loads(path.read_text())
    rows = doc["data"]["samples"]
    # the probe (version 1) summed the annotation row too: 5.9% published, 2.9% once
    assert doc["data"]["shares"]["optimizer"] == pytest.approx(0.058768, abs=1e-6)
    assert kernels.category_shares(rows)["optimizer"] == pytest.approx(0.028725, abs=1e-6)
    assert kernels.kernel_seconds_per_step(rows, 3) == pytest.approx(0.0691954, abs=1e-7)


def test_arch_tags_come_from_kernel_names_not_namespaces():
    rows = [
        {"kernel": "nvjet_sm90_tst_96x128", "category": "gemm", "device_time_s": 0.5},
        {"kernel": "cutlass3x_sm90a_gemm_bf16", "category": "gemm", "device_time_s": 0.25},
        {"kernel": "ampere_bf16_s16816gemm_sm_80_tn", "category": "gemm", "device_time_s": 0.125},
        {"kernel": "void cub::DeviceScan<thrust::THRUST_300001_SM_750_800_860_900_NS::tuple>", "category": "other",
         "device_time_s": 0.0625},
        {"kernel": "rsm90_not_a_tag_sm9000", "category": "other", "device_time_s": 1.0},
    ]  # fmt: skip
    tags = kernels.arch_tags(rows)
    assert tags == {"sm90": 0.5, "sm90a": 0.25, "sm80": 0.125}
    assert kernels.foreign_arch_tags(tags, "9.0") == ["sm80"]
    assert kernels.foreign_arch_tags(tags, None) == []
    assert (kernels.tag_capability("sm100"), kernels.tag_capability("sm75")) == ("10.0", "7.5")
