"""Two independent sample sets (render/derive/unpaired.py): ratio of medians, bootstrap interval, U test p."""

from __future__ import annotations

import pytest

from measure.errors import ProbebookError
from render.derive import unpaired


def test_ratio_interval_and_p_of_three_against_three() -> None:
    r = unpaired.ratio_of_medians([4.0, 5.0, 6.0], [1.0, 2.0, 3.0])
    assert (r.n_numerator, r.n_denominator, r.ratio) == (3, 3, 2.5)  # 5 / 2
    # A resampled median of three is one of the set's values, 1 or 3 each with probability 7/27, so the
    # lowest ratio 4/3 and the highest 6/1 each carry 49/729 (6.7%) of the mass: beyond both 2.5% tails.
    assert r.ratio_ci == (4.0 / 3.0, 6.0)
    assert r.p_value == 0.1  # no overlap, exact two-sided U test: 2 / C(6, 3)


def test_sets_of_different_sizes_are_resampled_each_on_its_own() -> None:
    r = unpaired.ratio_of_medians([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0], [11.0, 12.0, 13.0, 14.0, 15.0])
    assert (r.n_numerator, r.n_denominator, r.ratio) == (10, 5, 5.5 / 13.0)
    assert r.p_value == 2.0 / 3003.0  # no overlap: 2 / C(15, 5)
    assert r.ratio_ci == (3.0 / 14.0, 8.5 / 13.0)  # the fixed seed's interval, the same in every build
    assert r.ratio_ci == unpaired.ratio_of_medians(list(range(1, 11)), list(range(11, 16))).ratio_ci


def test_sets_without_spread_give_a_point_interval() -> None:
    r = unpaired.ratio_of_medians([2.0, 2.0, 2.0], [1.0, 1.0, 1.0])
    assert (r.ratio, r.ratio_ci) == (2.0, (2.0, 2.0))


def test_fewer_than_three_samples_on_a_side_give_no_interval_and_no_test() -> None:
    r = unpaired.ratio_of_medians([1.0, 2.0], [1.0, 2.0, 3.0])
    assert (r.ratio, r.ratio_ci, r.p_value) == (0.75, None, None)  # 1.5 / 2


def test_empty_or_non_positive_sets_are_refused() -> None:
    with pytest.raises(ProbebookError, match="a sample set is empty"):
        unpaired.ratio_of_medians([], [1.0])
    with pytest.raises(ProbebookError, match="denominator's median is not positive"):
        unpaired.ratio_of_medians([1.0, 2.0, 3.0], [0.0, 0.0, 1.0])
    with pytest.raises(ProbebookError, match="a denominator sample is not positive"):
        unpaired.ratio_of_medians([1.0, 2.0, 3.0], [-1.0, 2.0, 3.0])
    with pytest.raises(ProbebookError, match="not a finite number"):
        unpaired.ratio_of_medians([float("nan"), 2.0, 3.0], [1.0, 2.0, 3.0])
