"""Interleaved arms paired by round (render/derive/paired.py): saving, bootstrap interval, signed-rank p."""

from __future__ import annotations

import pytest

from measure.errors import ProbebookError
from render.derive import paired, sessions

BASE = dict.fromkeys(range(6), 1.0)
ARM = dict(enumerate([0.5, 0.75, 0.875, 0.625, 0.25, 0.375]))


def test_saving_is_the_median_of_per_round_relative_differences():
    c = paired.paired_change(BASE, ARM)
    assert (c.rounds, c.saving, c.difference_s) == (6, 0.4375, 0.4375)  # 0.125 ... 0.75, middle two 0.375, 0.5
    assert c.p_value == 0.03125  # six positive differences, exact two-sided signed-rank: 2 / 2**6
    assert c.within_noise is False
    lo, hi = c.saving_ci
    assert 0.125 <= lo <= c.saving <= hi <= 0.75


def test_an_arm_that_sometimes_saves_and_sometimes_costs_is_within_noise():
    arm = dict(enumerate([0.75, 1.25, 0.875, 1.125, 1.0625, 0.9375]))
    c = paired.paired_change(BASE, arm)
    assert c.saving == 0.0  # differences ±0.25, ±0.125, ±0.0625
    assert c.within_noise is True
    assert c.p_value == 1.0


def test_drift_that_moves_both_arms_cancels_in_the_pairs():
    base = dict(enumerate([1.0, 2.0, 4.0, 8.0, 16.0, 32.0]))
    arm = {k: v * 0.75 for k, v in base.items()}
    c = paired.paired_change(base, arm)
    assert c.saving == 0.25 and c.saving_ci == (0.25, 0.25)  # every round saves a quarter, however slow it ran


def test_few_rounds_give_no_interval_and_no_test():
    c = paired.paired_change({0: 1.0, 1: 1.0}, {0: 0.5, 1: 0.75})
    assert (c.saving, c.saving_ci, c.p_value, c.within_noise) == (0.375, None, None, None)


def test_rows_by_round_and_their_refusals():
    rows = [
        {"arm": "baseline", "round": 0, "step_s": 1.0},
        {"arm": "no-optimizer", "round": 0, "step_s": 0.5},
        {"arm": "baseline", "round": 1, "step_s": 2.0},
    ]
    assert paired.by_round(rows, "baseline", "step_s") == {0: 1.0, 1: 2.0}
    with pytest.raises(ProbebookError, match="arm 'baseline' has two rows in round 0"):
        paired.by_round([*rows, rows[0]], "baseline", "step_s")
    with pytest.raises(ProbebookError, match="share no round"):
        paired.paired_change({0: 1.0}, {1: 1.0})


def test_the_interval_is_the_same_in_every_build():
    assert paired.paired_change(BASE, ARM).saving_ci == paired.paired_change(dict(BASE), dict(ARM)).saving_ci


def test_rows_can_be_paired_by_another_arm_field() -> None:
    rows = [{"kind": k, "round": r, "step_s": s} for r in range(3) for k, s in (("causal", 1.0), ("padded", 1.5))]
    assert paired.by_round(rows, "padded", "step_s", by="kind") == {0: 1.5, 1: 1.5, 2: 1.5}
    assert paired.by_round(rows, "padded", "step_s") == {}  # no "arm" field: nothing paired


def test_the_spread_between_sessions_is_the_range_over_the_lowest() -> None:
    assert sessions.relative_range([0.5, 0.4]) == pytest.approx(0.25, abs=1e-15)
    assert sessions.relative_range([2.0, 2.0, 3.0]) == 0.5
    with pytest.raises(ProbebookError, match="two or more"):
        sessions.relative_range([1.0])
    with pytest.raises(ProbebookError, match="positive"):
        sessions.relative_range([0.0, 1.0])
