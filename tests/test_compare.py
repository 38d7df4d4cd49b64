"""The comparison library of the agreement probe: metrics from running sums, limits and verdicts, on literal inputs."""

from __future__ import annotations

import math

import pytest

from measure.compare import Sums, judge, limit, metrics, relative_error, verdict
from measure.errors import ProbebookError


def test_metrics_from_sums():
    s = Sums(elements=4, sq_diff=1.0, sq_ref=4.0, sq_other=1.0, dot=2.0, max_abs=1.0, same_sign=3)
    assert metrics(s) == {
        "elements": 4,
        "finite": True,
        "max_abs_error": 1.0,
        "rel_l2": 0.5,
        "cosine": 1.0,
        "sign_agreement": 0.75,
    }


def test_metrics_zero_reference_and_nonfinite():
    assert metrics(Sums(elements=2))["rel_l2"] == 0.0  # both zero: identical
    assert metrics(Sums(elements=2, sq_diff=1.0, sq_other=1.0))["rel_l2"] is None  # undefined, never a pass
    bad = metrics(Sums(elements=3, nonfinite=1))
    assert bad["finite"] is False and bad["rel_l2"] is None and bad["cosine"] is None


def test_sums_merge_adds_and_keeps_the_largest_error():
    a = Sums(elements=2, sq_diff=1.0, sq_ref=2.0, sq_other=3.0, dot=4.0, max_abs=0.5, same_sign=2)
    b = Sums(elements=1, sq_diff=3.0, sq_ref=2.0, sq_other=1.0, dot=0.0, max_abs=2.0, same_sign=0, nonfinite=1)
    assert a.merge(b) == Sums(
        elements=3, sq_diff=4.0, sq_ref=4.0, sq_other=4.0, dot=4.0, max_abs=2.0, same_sign=2, nonfinite=1
    )


def test_relative_error():
    assert relative_error(4.0, 3.0) == 0.25
    assert relative_error(-2.0, -3.0) == 0.5
    assert relative_error(0.0, 0.0) == 0.0
    with pytest.raises(ProbebookError, match="zero reference"):
        relative_error(0.0, 1.0)


def test_limit_and_verdict():
    assert limit(0.0, 1e-4) == 1e-4
    assert limit(None, 0.0) == 0.0
    assert limit(1e-3, 1e-4, factor=5.0) == 5e-3
    assert verdict(0.0, 0.0) is True
    assert verdict(2e-4, 1e-4) is False
    assert verdict(None, 1.0) is False
    assert verdict(math.nan, 1.0) is False


def test_judge_checks_every_quantity_present():
    exact = {"rel_l2": 0.0}
    noise = {"loss": exact, "logits": exact, "grads": {"rel_l2": 1e-3}}
    result = {"loss": {"rel_l2": 0.0}, "logits": None, "grads": {"rel_l2": 4e-3}}
    judged = judge(result, noise, floor=1e-4, factor=5.0)
    assert [c["quantity"] for c in judged["checks"]] == ["loss", "grads"]  # no logits on the arm: not judged
    assert [c["limit"] for c in judged["checks"]] == [1e-4, 5e-3]
    assert judged["passed"] is True
    worse = judge({**result, "grads": {"rel_l2": 6e-3}}, noise, floor=1e-4, factor=5.0)
    assert worse["passed"] is False and worse["tolerance"]["floor"] == 1e-4


def test_tensor_comparison_in_float64():
    torch = pytest.importorskip("torch")
    from measure.compare import compare, compare_named, worst

    a = torch.tensor([2.0, 0.0, -1.0, 0.0])
    b = torch.tensor([1.0, 0.0, -1.0, 0.0], dtype=torch.bfloat16)
    m = compare(a, b)
    assert (m["max_abs_error"], m["rel_l2"], m["sign_agreement"]) == (1.0, math.sqrt(1 / 5), 1.0)
    assert m["cosine"] == pytest.approx(3 / math.sqrt(5 * 2), rel=1e-15)
    per, total = compare_named({"x": a, "y": a}, {"x": a, "y": b.float()})
    assert per["x"]["rel_l2"] == 0.0 and total["rel_l2"] == math.sqrt(1 / 10)
    assert worst(per)["name"] == "y"
    with pytest.raises(ProbebookError, match="shapes"):
        compare(a, a[:2])
    assert compare(a, torch.tensor([math.nan, 0.0, 0.0, 0.0]))["finite"] is False
