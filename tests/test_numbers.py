"""Number text (render.derive.reading): significant figures, SI prefixes, intervals, minus signs, no exponents."""

from __future__ import annotations

import pytest

from render.derive.reading import (
    MINUS,
    NNBSP,
    choose_unit,
    count_words,
    decimals_for,
    exact,
    fixed,
    general,
    interval,
    interval_decimals,
    readable_float,
    significant,
    small_ratio,
    split_base,
    unit_text,
    wide_format,
    with_unit,
)


@pytest.mark.parametrize(
    "value,sig,text",
    [
        (0.004171231802841049, 3, "0.00417"),
        (46.51, 3, "46.5"),
        (50.0, 3, "50.0"),
        (3600.2, 3, "3,600"),
        (134653.50883380772, 3, "135,000"),
        (-1.234, 3, f"{MINUS}1.23"),
        (999.95, 4, "1,000"),
        (0.0, 3, "0"),
        (1.0, 1, "1"),
    ],
)
def test_significant(value: float, sig: int, text: str) -> None:
    assert significant(value, sig) == text


def test_decimals_and_fixed() -> None:
    assert decimals_for(46.51, 3) == 1
    assert decimals_for(3600.0, 3) == -1
    assert decimals_for(0.00417, 3) == 5
    assert fixed(3.85, 1) == "3.9"
    assert fixed(12345.678, -2) == "12,300"
    assert fixed(-0.0001, 2) == "0.00"  # a rounded zero has no sign
    assert fixed(-2.5, 1) == f"{MINUS}2.5"


def test_interval_decimals_follow_two_figures_of_the_smaller_half_width() -> None:
    assert interval_decimals(3.85, 1.74, 5.75) == 1  # half-widths 2.11 and 1.90: 1.9
    assert interval_decimals(73.77, 72.1, 75.6) == 1
    assert interval_decimals(0.625, 0.53, 0.79) == 3
    assert interval_decimals(3.0, 3.0, 4.0) is None  # a bound on the value: no width
    assert interval_decimals(1234.5678, 1234.5677, 1234.5679) == 0  # at most four figures of the value
    assert interval_decimals(3.0, -40.0, 50.0) == 0  # at least one figure of the value


def test_interval_text() -> None:
    assert interval("1.7", "5.8") == "(1.7–5.8)"
    assert interval("53", "79", "%") == "(53–79%)"
    assert interval(f"{MINUS}1.2", "5.8") == f"({MINUS}1.2 to 5.8)"
    assert interval(f"{MINUS}40", "140", "%") == f"({MINUS}40% to 140%)"


@pytest.mark.parametrize(
    "unit,parts",
    [
        ("GB/s", (1e9, "B", "/s")),
        ("ms", (1e-3, "s", "")),
        ("µs/token", (1e-6, "s", "/token")),
        ("us", (1e-6, "s", "")),
        ("GiB", (2.0**30, "B", "")),
        ("TFLOP/s", (1e12, "FLOP", "/s")),
        ("ktok/s", (1e3, "tok", "/s")),
        ("s/token²", (1.0, "s", "/token²")),
        ("MHz", None),
        ("h", None),
        ("", None),
        ("Gis", None),
    ],
)
def test_split_base(unit: str, parts: tuple[float, str, str] | None) -> None:
    assert split_base(unit) == parts


def test_choose_unit() -> None:
    assert choose_unit(4231.213165430763, "GB/s") == pytest.approx((4.231213165430763, "TB/s"))
    assert choose_unit(4.651e-5, "s") == pytest.approx((46.51, "µs"))
    assert choose_unit(0.0465, "ms") == pytest.approx((46.5, "µs"))
    assert choose_unit(999.7e-6, "s") == pytest.approx((0.9997, "ms"))  # shows as 1.00 ms, not 1,000 µs
    assert choose_unit(387.0, "s") == (387.0, "s")
    assert choose_unit(36000.0, "s") == (36000.0, "s")  # no kiloseconds
    assert choose_unit(3 * 2**30, "B", binary=True) == (3.0, "GiB")
    assert choose_unit(3e9, "B") == (3.0, "GB")
    assert choose_unit(134653.5, "tok/s") == pytest.approx((134.6535, "ktok/s"))
    assert choose_unit(1455.0, "MHz") == (1455.0, "MHz")
    assert choose_unit(0.0, "ms") == (0.0, "ms")


def test_units_as_read() -> None:
    assert unit_text("B") == "bytes"
    assert unit_text("GB") == "GB"
    assert unit_text("us/token") == "µs/token"
    assert with_unit("46.5", "µs") == f"46.5{NNBSP}µs"
    assert with_unit("9.84", "B") == f"9.84{NNBSP}bytes"
    assert with_unit("12", "") == "12"


def test_counts_and_small_ratios_in_words() -> None:
    assert count_words(9.84e9) == f"9.84{NNBSP}billion"
    assert count_words(31525224.0) == f"31.5{NNBSP}million"
    assert count_words(999999.0) == f"1.00{NNBSP}million"
    assert count_words(2.5e12) == f"2.50{NNBSP}trillion"
    assert count_words(13665.4) is None
    assert small_ratio(1.1654812154585604e-06) == f"1.17{NNBSP}ppm"
    assert small_ratio(9.029373092432067e-08) == f"90.3{NNBSP}ppb"
    assert small_ratio(0.0155) is None
    assert small_ratio(0.0) is None


def test_readable_float() -> None:
    assert readable_float(0.07376980586416063) == "0.0737698"
    assert readable_float(2.835223151023669e-05) == "0.0000283522"
    assert readable_float(-1.5e-3) == f"{MINUS}0.0015"
    assert readable_float(1e21) == "1,000,000,000,000,000,000,000"
    assert readable_float(0.0) == "0"


def test_general_numbers_in_running_text() -> None:
    assert general(2.5e8) == "250 million"
    assert general(20.0) == "20"
    assert general(1.5e-5) == "0.000015"
    assert general(0.5883417066233017) == "0.5883"
    assert general(1234567890123.0) == "1.235 trillion"


def test_exact_numbers_in_keys() -> None:
    assert exact(2.5e8) == "250000000"
    assert exact(20) == "20"
    assert exact(1.1) == "1.1"
    assert exact(1.5e-9) == "0.0000000015"


def test_the_format_width_rule_reads_every_unicode_digit() -> None:
    """One rule for templates and Quantity.format: widths past 200, in any script's digits, or nested, are wide."""
    assert not wide_format(",.3f") and not wide_format("200.1f")
    assert wide_format("201") and wide_format("２０１") and wide_format(".٩٩٩٩٩٩٩٩٩f")
    assert wide_format("{w}") and wide_format(".*f")
