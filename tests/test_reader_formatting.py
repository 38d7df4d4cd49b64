"""Numbers formatted as what they are: counts and shape params whole, unix times as dates, no interval of no width."""

from __future__ import annotations

from render.derive.reading import reads_whole
from render.derive.reproduction import NumberRow, Reproduction
from render.evidence import fields
from render.evidence.pages import readable
from render.numbers import ledger
from render.numbers.quantity import Quantity
from render.pages import reproductions


def test_a_count_shown_whole_reads_whole_and_a_measure_does_not() -> None:
    assert reads_whole("2048", 2048.0)
    assert reads_whole("24,576", 24576.0)
    assert reads_whole("4", 4.0)
    assert not reads_whole("4.00", 4.0)  # the page showed decimals: a measured number
    assert not reads_whole("2.15 ms", 0.00215)
    assert not reads_whole("45.9%", 0.459)
    assert not reads_whole("1.98 billion", 1983519360.0)
    assert not reads_whole("2048", 2048.5)
    assert not reads_whole("2048", None)


def test_a_whole_count_is_shown_as_an_integer_not_to_three_figures() -> None:
    assert Quantity(2048.0, "").text == "2,050"  # a whole number as a float reads to three figures
    assert Quantity(2048, "").text == "2,048"
    assert Quantity(4, "").text == "4"
    assert Quantity(4.0, "").text == "4.00"  # why a count must reach Quantity as an int


def test_an_interval_of_no_width_at_the_digits_shown_is_dropped_and_said_in_the_title() -> None:
    q = Quantity(1980.0, "MHz", uncertainty=(1980.0, 1980.0), key="clock")
    assert q.interval_text is None
    assert q.shown_text == "1,980 MHz"
    assert "95% interval of no width at the digits shown: 1,980 at both ends" in q.title
    assert "interval" not in ledger.number_row(q, "p.md", "clock")
    wide = Quantity(22.0, "s", uncertainty=(21.0, 23.5), key="saving")
    assert wide.interval_text == "(21.0–23.5)"
    assert wide.text == "22.0 s"


def test_a_unix_time_in_a_samples_cell_reads_as_a_date() -> None:
    assert readable(1796080000.25, "device_acquired_unix") == "2026-11-30T23:06:40Z"
    assert readable(1796080000.25) == "1,796,080,000"  # with no column it is a plain number
    assert readable(12.5, "device_acquired_unix") == "12.5"  # out of the range of dates: not a time
    assert readable(1796080000.25, "peak_bytes") == "1,796,080,000"
    assert fields.is_unix_time("created_at", 1796080000)
    assert not fields.is_unix_time("created_at", True)


def _row(key: str, old: float, shown: str, unit: str = "") -> NumberRow:
    return NumberRow(0, key, key, old, old, None, None, unit, shown, shown, "within")


def test_the_comparison_page_shows_a_shape_param_whole() -> None:
    ident = "sha256:" + "ab" * 32
    repro = Reproduction(ident, "r", 1, "t", "reproduction", "2026-12-01", {}, {}, "", (), (), {}, ())
    assert reproductions._value(repro, _row("value(g, params.seq_len)", 2048.0, "2048"), "old").text == "2,048"
    assert reproductions._value(repro, _row("value(g, params.batch)", 4.0, "4"), "new").text == "4"
    assert reproductions._value(repro, _row("median(g, step_s)", 0.00215, "2.15 ms", "s"), "old").text == "2.15 ms"
    assert reproductions._value(repro, _row("fit(s).share(2048)", 0.452, "45.2%"), "old").text == "45.2%"
