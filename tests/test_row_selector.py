"""Row selectors of sample functions (render.functions.general.selector): a plain value as given, a whole number
another function read from the evidence (an exact, unitless quantity) as that number, anything measured refused."""

from __future__ import annotations

import pytest

from measure.errors import ProbebookError
from render.functions.general import selector
from render.numbers.quantity import Quantity


def _q(value: float | None, unit: str = "", exact: bool = True) -> Quantity:
    return Quantity(value=value, unit=unit, evidence=("sha256:" + "0" * 64,), derivation="d", key="k", exact=exact)


def test_plain_values_pass_and_an_exact_whole_count_becomes_its_number() -> None:
    assert selector("250m", "median(): model=") == "250m"
    assert selector(512, "median(): context=") == 512
    picked = selector(_q(64.0), "median(): batch=")
    assert picked == 64 and isinstance(picked, int)


@pytest.mark.parametrize(
    "q",
    [_q(64.0, exact=False), _q(0.5), _q(64.0, unit="tok/s"), _q(None)],
    ids=["measured", "fraction", "with-unit", "underived"],
)
def test_a_measured_fractional_unit_bearing_or_underived_quantity_selects_nothing(q: Quantity) -> None:
    with pytest.raises(ProbebookError, match=r"^median\(\): batch= takes a value rows hold"):
        selector(q, "median(): batch=")
