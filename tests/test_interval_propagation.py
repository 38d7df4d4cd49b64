"""Intervals through Quantity arithmetic: the first-order rule on literal operands, and where no interval is stated."""

from __future__ import annotations

import math

import pytest

from render.numbers.propagation import Z95
from render.numbers.quantity import Quantity

A = "sha256:" + "a" * 64
B = "sha256:" + "b" * 64


def q(value: float, unit: str, half: float | None, ev: str, key: str) -> Quantity:
    """A Quantity whose 95% interval is ``value ± half`` (standard error ``half / Z95``)."""
    ci = None if half is None else (value - half, value + half)
    return Quantity(value=value, unit=unit, uncertainty=ci, evidence=(ev,), key=key, derivation=key)


def _half(x: Quantity) -> float:
    assert x.uncertainty is not None
    lo, hi = x.uncertainty
    assert x.value is not None
    assert (lo + hi) / 2 == pytest.approx(x.value, abs=1e-15)  # symmetric about the value
    return (hi - lo) / 2


def test_a_difference_adds_standard_errors_in_quadrature() -> None:
    d = q(10.0, "ms", 0.3, A, "a") - q(4.0, "ms", 0.4, B, "b")
    assert d.value == 6.0
    assert _half(d) == pytest.approx(0.5, rel=1e-12)  # hypot(0.3, 0.4)
    assert d.derivation == "a - b; 95% interval propagated to first order (GUM §5.1.2)"


def test_a_sum_converts_the_right_side_by_its_prefix() -> None:
    s = q(1.0, "s", 0.03, A, "a") + q(40.0, "ms", 40.0, B, "b")  # 40 ms ± 40 ms is 0.04 s ± 0.04 s
    assert s.value == pytest.approx(1.04, abs=1e-12)
    assert _half(s) == pytest.approx(0.05, rel=1e-12)


def test_a_quotient_adds_relative_errors_in_quadrature() -> None:
    r = q(8.0, "s", 0.24, A, "a") / q(4.0, "s", 0.16, B, "b")  # 3% and 4% relative
    assert r.value == 2.0
    assert _half(r) == pytest.approx(2.0 * 0.05, rel=1e-12)


def test_a_product_with_a_plain_number_scales_the_interval() -> None:
    p = q(2.0, "ms", 0.1, A, "a") * 3
    assert p.value == 6.0
    assert p.uncertainty == pytest.approx((5.7, 6.3), abs=1e-12)
    h = q(2.0, "ms", 0.1, A, "a") / 4
    assert h.uncertainty == pytest.approx((0.475, 0.525), abs=1e-12)


def test_the_rule_reads_the_standard_error_from_the_95_percent_quantile() -> None:
    assert pytest.approx(1.959963984540054, abs=1e-15) == Z95
    d = q(1.0, "s", Z95, A, "a") - q(0.0, "s", Z95, B, "b")  # standard errors 1 and 1
    assert _half(d) == pytest.approx(Z95 * math.sqrt(2), rel=1e-12)


@pytest.mark.parametrize(
    "left,right",
    [
        (q(8.0, "s", 0.2, A, "a"), q(4.0, "s", 0.1, A, "b")),  # one evidence document: correlated, not independent
        (q(8.0, "s", 0.2, A, "a"), q(4.0, "s", None, B, "b")),  # an operand without an interval is not exact
        (q(8.0, "s", None, A, "a"), q(4.0, "s", 0.1, B, "b")),
    ],
)
def test_no_interval_where_the_first_order_rule_does_not_apply(left: Quantity, right: Quantity) -> None:
    for r in (left - right, left / right):
        assert r.uncertainty is None
        assert "interval" not in r.derivation
    assert (q(1.0, "s", 0.1, A, "a") / q(0.0, "s", 0.1, B, "b")).uncertainty is None  # no value, no interval
