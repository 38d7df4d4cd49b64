"""Every number a built site's ledger holds carries a 95% interval or says why it has none (issue 23): the basis."""

from __future__ import annotations

import collections
import json
import re
from pathlib import Path
from typing import Any

import pytest

from render.derive import basis
from render.numbers import ledger
from render.numbers.quantity import Quantity
from render.tables.cells import Cell, uncertainty_of
from render.tables.columns import Column


def unstated(rows: list[dict[str, Any]]) -> collections.Counter[str]:
    """The rows that state no basis (claims aside: they are true or false), counted by their derivation's family
    (its words before the first comma, colon or semicolon, digits as ``N``)."""
    found: collections.Counter[str] = collections.Counter()
    for row in rows:
        if row["unit"] == "claim" or row.get("basis") in basis.BASES:
            continue
        found[re.sub(r"\d+", "N", re.split(r"[,:;]", row["derivation"])[0])[:80]] += 1
    return found


def ledger_of(site: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads((site / "ledger.json").read_text(encoding="utf-8"))["rows"]
    return rows


def test_a_quantity_states_interval_exact_or_its_reason() -> None:
    timed = Quantity(0.0123, "s", uncertainty=(0.012, 0.0126), basis=basis.OBSERVED)
    assert timed.stated_basis == "interval"
    assert Quantity(8, "", exact=True).stated_basis == "exact"
    clock = Quantity(1980.0, "MHz", basis=basis.OBSERVED)
    assert ledger.number_row(clock, "p.md", "k")["basis"] == "observed"
    assert "no interval: a reading as recorded" in clock.title
    assert "basis" not in ledger.number_row(Quantity(1.0, "s"), "p.md", "k")
    with pytest.raises(ValueError, match="unknown basis 'guess'"):
        Quantity(1.0, "s", basis="guess")


def test_arithmetic_keeps_a_shared_basis_and_drops_a_mixed_one() -> None:
    clock = Quantity(1980.0, "MHz", key="a", basis=basis.OBSERVED)
    other = Quantity(1965.0, "MHz", key="b", basis=basis.OBSERVED)
    count = Quantity(2, "", key="n", exact=True)
    assert (clock - other).stated_basis == "observed"
    assert (clock / count).stated_basis == "observed"
    assert (count * count).stated_basis == "exact"
    assert (clock - Quantity(1.0, "MHz", key="u")).stated_basis == ""
    assert basis.combined([]) == ""
    assert basis.combined(["few windows", "observed"]) == ""


def test_a_table_cell_takes_its_interval_from_the_record_else_its_columns_basis() -> None:
    step = Column("median_step_s", "median step (ms)", str, unit="ms", scale=1e3, basis=basis.FEW)
    ci, said = uncertainty_of(step, {"_ci": {"median_step_s": (0.0126, 0.0120)}})
    assert ci == pytest.approx((12.0, 12.6)) and said == "interval"
    assert uncertainty_of(step, {}) == (None, "few windows")
    cell = Cell(0, 1, "median_step_s", "median step (ms)", "batch=8", 12.3, "ms", "12.3", (0,), ("",), ci, said)
    assert cell.uncertainty == pytest.approx((12.0, 12.6))


def test_the_unstated_rows_are_counted_by_family() -> None:
    rows = [
        {"unit": "s", "derivation": "median of 5 samples of step_s, mode=eager", "basis": "interval"},
        {"unit": "s", "derivation": "median of 2 samples of step_s"},
        {"unit": "s", "derivation": "median of 4 samples of step_s; where batch=8"},
        {"unit": "claim", "derivation": "a < b"},
        {"unit": "", "derivation": "x", "basis": "a made-up word"},
    ]
    assert unstated(rows) == {"median of N samples of step_s": 2, "x": 1}


def tables(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of the numbers tables show (``table('gemm', g)[shape=…].median_tflop_s``)."""
    return [r for r in rows if r["key"].startswith("table(")]


def test_every_table_number_of_the_fixture_site_states_its_basis(fixture_site: Any) -> None:
    rows = tables(ledger_of(fixture_site.site))
    assert rows and unstated(rows) == {}
    by_column = collections.Counter((r["key"].split("[")[0], r["key"].rsplit(".", 1)[1], r["basis"]) for r in rows)
    sweep, memory = "table('step-scaling', sweep)", "table('loss-memory', mem)"
    # the sweep's points of 3 or more windows: their median and its rate carry the windows' interval
    assert by_column[(sweep, "median_step_s", "interval")] == by_column[(sweep, "tok_s", "interval")] > 0
    assert by_column[(sweep, "min_step_s", "interval")] == 0 and by_column[(sweep, "min_step_s", "observed")] > 0
    # the fixture's loss-memory rows are imported: no windows kept, each rate as the row recorded it
    assert {b for (t, c, b) in by_column if t == memory and c == "tok_s"} == {"as recorded"}
    assert all(len(r["uncertainty"]) == 2 for r in rows if r["basis"] == "interval")


def test_every_number_of_the_fixture_site_states_its_basis(fixture_site: Any) -> None:
    assert unstated(ledger_of(fixture_site.site)) == {}


@pytest.mark.slow
def test_every_number_of_the_repository_site_states_its_basis(repository_site: Path) -> None:
    assert unstated(ledger_of(repository_site)) == {}


@pytest.mark.slow
def test_every_table_number_of_the_repository_site_states_its_basis(repository_site: Path) -> None:
    rows = tables(ledger_of(repository_site))
    assert rows and unstated(rows) == {}
