"""Hardware peaks lookup (datasheet rows, unknown-GPU sentinel and warning) and MFU."""

from __future__ import annotations

import pytest

from measure.errors import ProbebookError
from render.derive import peaks
from render.derive.mfu import achieved_model_flop_s, mfu


def test_known_gpus_read_the_datasheet_figures():
    h200 = peaks.lookup("NVIDIA H200")
    assert (h200.bf16_dense_tflop_s, h200.memory_tb_s) == (989.5, 4.8)  # 1,979 with sparsity / 2
    assert h200.bf16_dense_flop_s == 989.5e12 and h200.memory_bytes_s == 4.8e12
    assert "H200 Tensor Core GPU datasheet" in h200.source
    assert peaks.lookup("NVIDIA H100 80GB HBM3").memory_tb_s == 3.35
    assert peaks.lookup("NVIDIA A100-SXM4-80GB").bf16_dense_tflop_s == 312.0


def test_every_row_is_complete_and_cites_a_datasheet():
    for name, peak in peaks.PEAKS.items():
        assert name.startswith("NVIDIA ")
        assert peak.known and peak.bf16_dense_tflop_s > 0 and peak.memory_tb_s > 0
        assert "datasheet" in peak.source and "nvidia.com" in peak.source


@pytest.mark.parametrize("name", ["NVIDIA H200 SXM 141GB", "nvidia h200", "", None])
def test_unknown_gpu_gets_the_sentinel_and_a_warning_never_a_guess(name):
    with pytest.warns(peaks.UnknownGPUWarning, match="no hardware peak on record"):
        peak = peaks.lookup(name)
    assert peak is peaks.UNKNOWN
    assert not peak.known and peak.bf16_dense_flop_s is None and peak.memory_bytes_s is None


def test_mfu_is_achieved_over_peak():
    assert achieved_model_flop_s(100_000.0, 2e9) == 2e14
    assert mfu(2e14, 8e14) == 0.25
    assert mfu(
        achieved_model_flop_s(200_000, 1_971_859_200), peaks.lookup("NVIDIA H200").bf16_dense_flop_s
    ) == pytest.approx(200_000 * 1_971_859_200 / 989.5e12, rel=1e-15)


def test_mfu_refusals():
    with pytest.raises(ProbebookError, match="peak_flop_s must be a positive number"):
        mfu(1e14, 0.0)
    with pytest.raises(ProbebookError, match="model FLOP/s must be a non-negative number"):
        mfu(-1.0, 1e15)
    with pytest.raises(ProbebookError, match="flops_per_token must be a positive number"):
        achieved_model_flop_s(1e5, 0)
