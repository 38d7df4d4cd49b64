"""The across-sessions interval, the pooled between-session SD, the three-way verdict and the configuration key,
on literal inputs with exact values (issue 38)."""

from __future__ import annotations

import math

import pytest
from scipy.stats import t

from measure.errors import ProbebookError
from measure.evidence.configkey import config_key, stack_difference
from render.derive import replication


def test_pooled_log_sd_is_the_root_mean_square_of_deviations_within_groups() -> None:
    # groups (1, e) and (e, e^3) on the log scale: (0, 1) and (1, 3): deviations ±0.5 and ±1; squares 0.5 + 2 over df 2
    spread = replication.pooled_log_sd([[1.0, math.e], [math.e, math.e**3], [5.0]])
    assert spread is not None
    assert spread.sd_log == pytest.approx(math.sqrt(2.5 / 2), rel=1e-12)
    assert (spread.df, spread.configurations, spread.source) == (2, 2, "class")
    assert replication.pooled_log_sd([[1.0], [2.0]]) is None


def test_prediction_uses_the_pool_below_own_sessions_and_its_own_sd_from_five() -> None:
    pool = replication.Spread(0.1, 10, 4, "class")
    p = replication.prediction([2.0], pool)
    assert p is not None
    half = t.ppf(0.975, 10) * 0.1 * math.sqrt(2)
    assert (p.low, p.high) == pytest.approx((2 * math.exp(-half), 2 * math.exp(half)), rel=1e-12)
    figures = [1.0, math.e, 1.0, math.e, 1.0]
    own = replication.prediction(figures, pool)
    assert own is not None and own.spread.source == "own" and own.spread.df == 4
    logs = [0, 1, 0, 1, 0]
    sd = math.sqrt(sum((x - 0.4) ** 2 for x in logs) / 4)
    assert own.high == pytest.approx(math.exp(0.4 + t.ppf(0.975, 4) * sd * math.sqrt(1.2)), rel=1e-12)
    assert replication.prediction([1.0], None) is None


def test_verdict_has_three_outcomes_and_never_says_no_difference() -> None:
    assert replication.verdict(0.10, (0.04, 0.16), 0.05).outcome == "resolved"
    assert replication.verdict(0.03, (0.01, 0.04), 0.05).outcome == "equivalent"
    assert replication.verdict(0.03, (-0.02, 0.09), 0.05).outcome == "not resolved"
    assert replication.verdict(0.04, (0.01, 0.07), 0.05).outcome == "not resolved"  # excludes zero, inside the band
    assert replication.verdict(-0.2, (-0.3, -0.1), 0.05).outcome == "resolved"
    with pytest.raises(ProbebookError):
        replication.verdict(0.0, (0.1, -0.1), 0.05)


def test_relative_difference_combines_log_half_widths_in_quadrature() -> None:
    effect, (lo, hi) = replication.relative_difference(2.0, (1.0, 4.0), 1.0, None)
    assert effect == 1.0
    assert (lo, hi) == pytest.approx((math.expm1(math.log(2) - math.log(2)), math.expm1(2 * math.log(2))))
    effect, (lo, hi) = replication.relative_difference(1.0, (0.5, 2.0), 1.0, (0.5, 2.0))
    assert effect == 0.0
    assert hi == pytest.approx(math.expm1(math.hypot(math.log(2), math.log(2))))


def test_absolute_difference_and_throttle_and_lease() -> None:
    effect, interval = replication.absolute_difference(0.1, (0.07, 0.14), 0.0, None)
    assert effect == 0.1 and interval == pytest.approx((0.07, 0.14))
    assert replication.throttled([1980, 1400, None], 1980) == pytest.approx(1400 / 1980)
    assert replication.throttled([1980, 1600], 1980) is None
    assert replication.throttled([], 1980) is None
    assert replication.same_lease(("h", 0.0), ("h", 1800.0))
    assert not replication.same_lease(("h", 0.0), ("h", 1801.0))
    assert not replication.same_lease(("h", 0.0), ("g", 10.0))
    assert replication.probe_class("gemm") == "kernel" and replication.probe_class("mine") == "step"


def test_the_configuration_key_leaves_effort_and_paths_out_and_the_stack_beside_it() -> None:
    base = {
        "probe": "step-scaling",
        "probe_version": 3,
        "machine": {"gpu": "NVIDIA H200", "torch": "2.11", "driver": "580"},
        "params": {"preset": "250m", "batch": 4, "windows": 5, "iters": 3, "seq_lens": [1024]},
    }
    more = {**base, "params": {**base["params"], "windows": 9, "sessions": 3, "seq_lens": [512, 1024]}}
    newer = {**base, "machine": {**base["machine"], "torch": "2.13"}}
    other = {**base, "params": {**base["params"], "batch": 8}}
    h100 = {**base, "machine": {**base["machine"], "gpu": "NVIDIA H100 80GB HBM3"}}
    key = config_key(base)
    assert key.ident == config_key(more).ident == config_key(newer).ident
    assert key.ident != config_key(other).ident != config_key(h100).ident
    assert key.params == {"preset": "250m", "batch": 4}
    assert key.stack == {"torch": "2.11", "driver": "580", "probe_version": 3}
    assert stack_difference(key.stack, config_key(newer).stack) == {"torch": ("2.11", "2.13")}
    assert key.label() == "step-scaling on NVIDIA H200 (batch=4, preset=250m)"
    assert config_key({"probe": "copy", "machine": {"cpu_model": "Xeon"}, "params": {}}).card == "cpu: Xeon"
