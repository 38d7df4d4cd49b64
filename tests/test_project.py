"""Training-time projections: T = k·P/R, GPU-hours, time per billion tokens, whole optimizer updates, refusals."""

from __future__ import annotations

import pytest

from measure.errors import ProbebookError
from render.derive.project import parse_count, project


def test_projection_exact_values():
    p = project(250e6, 180_000.0)
    assert p.tokens == 5e9  # 20 tokens per parameter
    assert p.seconds == pytest.approx(5e9 / 180_000, rel=1e-15)
    assert p.gpu_hours == pytest.approx(5e9 / 180_000 / 3600, rel=1e-15)
    assert p.seconds_per_billion_tokens == pytest.approx(1e9 / 180_000, rel=1e-15)
    assert p.optimizer_updates is None


def test_rounding_to_whole_optimizer_updates_and_gpus():
    p = project(250e6, 180_000.0, batch_tokens=524_288, gpus=8)
    assert p.optimizer_updates == 9537  # ceil(5e9 / 524288) = ceil(9536.74)
    assert p.tokens == 9537 * 524_288 == 5_000_134_656
    assert p.seconds == pytest.approx(5_000_134_656 / 180_000, rel=1e-15)
    assert p.gpu_hours == pytest.approx(5_000_134_656 / 180_000 / 3600 * 8, rel=1e-15)


def test_tokens_per_param_and_json():
    p = project(1e9, 1e6, tokens_per_param=100, batch_tokens=1_000_000)
    assert p.to_json() == {
        "params": 1e9,
        "tok_s": 1e6,
        "tokens_per_param": 100.0,
        "gpus": 1,
        "batch_tokens": 1_000_000,
        "tokens": 1e11,
        "seconds": 1e5,
        "gpu_hours": 1e5 / 3600,
        "seconds_per_billion_tokens": 1000.0,
        "optimizer_updates": 100_000,
    }


def test_refusals():
    for kwargs, why in (
        ({"params": 0, "tok_s": 1.0}, "params must be a positive number"),
        ({"params": 1e6, "tok_s": -5.0}, "tok_s must be a positive number"),
        ({"params": 1e6, "tok_s": 5.0, "tokens_per_param": float("nan")}, "tokens_per_param"),
        ({"params": 1e6, "tok_s": 5.0, "batch_tokens": 0}, "batch_tokens must be a positive whole"),
        ({"params": 1e6, "tok_s": 5.0, "gpus": 1.5}, "gpus must be a positive whole"),
    ):
        with pytest.raises(ProbebookError, match=why):
            project(**kwargs)


def test_parse_count():
    assert parse_count("250M") == 250e6
    assert parse_count("1.5b") == 1.5e9
    assert parse_count("2e9") == 2e9
    assert parse_count("180_000") == 180000.0
    with pytest.raises(ProbebookError, match=r"--params '250X' is not a number"):
        parse_count("250X", "--params")
