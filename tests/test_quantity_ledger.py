"""Quantity formatting, units, links and escaping; ledger rows, files and the ledger diff (literal inputs)."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from render.numbers import ledger
from render.numbers.links import escape_text, evidence_page, relative_link, title_text
from render.numbers.quantity import Quantity
from render.numbers.units import UnitError, conversion_factor

ID = "sha256:" + "ab" * 32
ID2 = "sha256:" + "cd" * 32


# -- units ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "src,dst,factor",
    [
        ("s", "ms", 1e3),
        ("ms", "s", 1e-3),
        ("s/token", "µs/token", 1e6),
        ("s/token", "us/token", 1e6),
        ("s/token²", "ns/token²", 1e9),
        ("B", "GiB", 1 / 2**30),
        ("B", "GB", 1e-9),
        ("FLOP/s", "TFLOP/s", 1e-12),
        ("tok/s", "ktok/s", 1e-3),
        ("s", "h", 1 / 3600),
        ("s", "d", 1 / 86400),
        ("s", "s", 1.0),
    ],
)
def test_conversion_factor(src: str, dst: str, factor: float) -> None:
    assert conversion_factor(src, dst) == pytest.approx(factor, rel=1e-15)


@pytest.mark.parametrize("src,dst", [("s", "B"), ("s/token", "ms"), ("B", "Kis"), ("tok/s", "s"), ("", "ms")])
def test_conversion_between_different_units_is_refused(src: str, dst: str) -> None:
    with pytest.raises(UnitError, match="cannot show a value"):
        conversion_factor(src, dst)


# -- text -------------------------------------------------------------------------------


def test_text_chooses_the_prefix_that_fits_the_value() -> None:
    N = " "  # the ledger text; pages use a narrow no-break space
    assert Quantity(0.0123, "s", display="ms").text == f"12.3{N}ms"
    assert Quantity(4.651e-5, "s", display="ms").text == f"46.5{N}µs"  # a hint, not a pin: never "0.0465 ms"
    assert Quantity(4231.213165430763, "GB/s").text == f"4.23{N}TB/s"  # never "4.23e+03 GB/s"
    assert Quantity(4.5e-6, "s/token", display="µs/token").text == f"4.50{N}µs/token"
    assert Quantity(134653.50883380772, "tok/s").text == f"135{N}ktok/s"  # throughput to three figures
    assert Quantity(3 * 2**30, "B", display="GiB").text == f"3.00{N}GiB"
    assert Quantity(2284323183.483871, "B", display="GiB").text == f"2.13{N}GiB"
    assert Quantity(2284323183.483871, "B").text == f"2.28{N}GB"
    assert Quantity(9.839699596774189, "B").text == f"9.84{N}bytes"  # never "9.84 B", read as billions
    assert Quantity(7200.0, "s", display="h").text == f"2.00{N}h"
    assert Quantity(0.9997e-3, "s").text == f"1.00{N}ms"  # rounding up moves to the next prefix


def test_text_without_exponents() -> None:
    N = " "
    assert Quantity(1.1654812154585604e-06, "", fmt=".2e").text == f"1.17{N}ppm"
    assert Quantity(9.029373092432067e-08, "", fmt=".2e").text == f"90.3{N}ppb"
    assert Quantity(0.015506457473334383, "", fmt=".2e").text == "0.0155"
    assert Quantity(0.0, "", fmt=".2e").text == "0"
    assert Quantity(9.84e9, "").text == f"9.84{N}billion"
    assert Quantity(13665.440074537284, "").text == "13,700"


def test_negative_numbers_have_a_true_minus_sign() -> None:
    assert Quantity(-0.005, "", fmt=".1%").text == "\u22120.5%"
    assert Quantity(-0.0123, "s").text == "\u221212.3 ms"
    assert Quantity(-3, "", fmt="d").text == "\u22123"


def test_interval_sets_the_figures_and_shows_on_the_page() -> None:
    a = Quantity(3.85e-6, "s/token", display="µs/token", uncertainty=(1.74e-6, 5.75e-6), evidence=(ID,))
    assert a.text == "3.9 µs/token"
    assert a.interval_text == "(1.7–5.8)"
    assert a.markdown("index.md").startswith("[3.9\u202fµs/token (1.7–5.8)](evidence/")
    share = Quantity(0.625, "", fmt=".1%", uncertainty=(0.53, 0.79))
    assert (share.text, share.interval_text) == ("62.5%", "(53.0–79.0%)")
    wide = Quantity(0.5, "", fmt=".0%", uncertainty=(-0.4, 1.4))
    assert (wide.text, wide.interval_text) == ("50%", "(\u221240% to 140%)")


def test_percent_and_count_formats() -> None:
    assert Quantity(0.169, "", fmt=".1%").text == "16.9%"
    assert Quantity(4, "", fmt="d").text == "4"
    assert Quantity(12345, "", fmt=",d").text == "12,345"


def test_to_and_format_return_new_quantities() -> None:
    q = Quantity(0.0123, "s")
    assert q.text == "12.3 ms"
    assert q.to("s").text == "0.0123 s"  # a unit the page chose is kept
    assert q.to("ms").format(".1f").text == "12.3 ms"
    assert q.to("us").format(",.0f").text == "12,300 µs"
    assert q.text == "12.3 ms"  # unchanged
    with pytest.raises(UnitError):
        q.to("GiB")


def test_missing_and_non_finite_values_show_na() -> None:
    assert Quantity(None, "s", note="no asymptote").text == "n/a"
    nan = Quantity(float("nan"), "s")
    assert nan.value is None and nan.text == "n/a" and nan.note == "the derivation gave a non-finite result"
    assert Quantity(math.inf, "s").value is None


def test_value_must_be_a_number() -> None:
    with pytest.raises(TypeError):
        Quantity("12", "s")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Quantity(True, "s")


def test_interval_text() -> None:
    q = Quantity(0.0123, "s", display="ms", uncertainty=(0.012, 0.0126))
    assert (q.text, q.interval_text) == ("12.30 ms", "(12.00–12.60)")
    share = Quantity(0.169, "", fmt=".1%", uncertainty=(0.166, 0.171))
    assert (share.text, share.interval_text) == ("16.90%", "(16.60–17.10%)")
    assert Quantity(0.0123, "s").interval_text is None


# -- markdown ---------------------------------------------------------------------------


def test_markdown_links_the_evidence_page_with_the_derivation_as_title() -> None:
    q = Quantity(
        0.0123,
        "s",
        display="ms",
        evidence=(ID,),
        derivation="fit c+a; c",
        uncertainty=(0.012, 0.0126),
        key="fit(sweep).c",
    )
    link = "../../evidence/" + "ab" * 32 + ".md#samples"  # no rows named: the samples table
    assert q.markdown("records/step/v1.md") == (
        f'[12.30\u202fms (12.00–12.60)]({link} "fit c+a; c; 95% interval 12.00–12.60 ms; evidence sha256:abababababab")'
    )


def test_markdown_title_names_more_evidence_and_is_made_safe() -> None:
    q = Quantity(0.5, "", fmt=".0%", evidence=(ID, ID2), derivation='a "quoted" <b>\\x</b>\nnext')
    assert q.title == "a ’quoted’ bx/b next; evidence sha256:abababababab (+1 more)"
    more = f' [\\[2\\]](evidence/{"cd" * 32}.md#samples "evidence 2 of 2: sha256:cdcdcdcdcdcd")'  # one link each
    assert q.markdown("index.md") == f'[50%](evidence/{"ab" * 32}.md#samples "{q.title}")' + more
    assert replace(q, anchor="row-3").markdown("index.md") == f'[50%](evidence/{"ab" * 32}.md#row-3 "{q.title}")' + more


def test_markdown_without_evidence_is_plain_text() -> None:
    assert Quantity(2.0, "s").markdown("index.md") == "2.00\u202fs"


def test_paths() -> None:
    assert evidence_page(ID) == f"evidence/{'ab' * 32}.md"
    assert relative_link("records/a/v2.md", "records/a/v1.md") == "v1.md"
    assert relative_link("changes.md", "records/a/v2.md") == "records/a/v2.md"
    assert relative_link("evidence/x.md", "playbook/index.md") == "../playbook/index.md"


def test_escape_text_makes_markup_inert_and_keeps_it_readable() -> None:
    assert escape_text("<script>alert(1)</script>") == "&lt;script&gt;alert(1)&lt;/script&gt;"
    assert escape_text("[x](javascript:y)") == "\\[x\\]\\(javascript:y)"
    assert escape_text("the step's 0.00814 s") == "the step's 0.00814 s"  # nothing to escape: unchanged
    assert escape_text("created_at __init__ *b* `c` a|b {x} #1 &") == (
        "created_at \\_\\_init\\_\\_ \\*b\\* \\`c\\` a\\|b \\{x\\} \\#1 &amp;"
    )
    assert escape_text("- item") == "&#45; item"  # a line-start marker
    assert escape_text("12. item") == "12&#46; item"
    assert escape_text("~~~") == "~~&#126;"
    assert escape_text("+20% on 2.11.0") == "+20% on 2.11.0"  # no list marker: read as written
    assert escape_text("2026-11-30") == "2026-11-30"
    assert escape_text("a\n  b") == "a b"
    assert escape_text(12) == "12"
    assert title_text('say "hi"\n') == "say ’hi’"
    # a quote before ")" ends a Python-Markdown title whichever quote opened it: none is left in one
    assert title_text("of f(a, shape='sq'), g") == "of f(a, shape=’sq’), g"


def test_ledger_row() -> None:
    q = Quantity(0.0123, "s", display="ms", evidence=(ID,), derivation="d", uncertainty=(0.012, 0.0126))
    assert ledger.number_row(q, "records/a/v1.md", "fit(s).c") == {
        "page": "records/a/v1.md",
        "key": "fit(s).c",
        "value": 0.0123,
        "unit": "s",
        "text": "12.30 ms",
        "interval": "(12.00–12.60)",  # as the page shows it beside the number
        "uncertainty": [0.012, 0.0126],
        "evidence": [ID],
        "derivation": "d",
        "basis": "interval",  # why it has no interval, or that it has one (render.derive.basis)
        "shown": "12.30 ms (12.00–12.60)",  # as its link reads: its entry on the evidence page shows it so
    }


# -- ledger files -----------------------------------------------------------------------


def _row(page: str, key: str, value: float | None, text: str, derivation: str = "d") -> dict:
    return {
        "page": page,
        "key": key,
        "value": value,
        "unit": "s",
        "text": text,
        "uncertainty": None,
        "evidence": [ID],
        "derivation": derivation,
    }


def test_ledger_bytes_are_sorted_and_order_independent(tmp_path: Path) -> None:
    a, b = _row("b.md", "x", 1.0, "1 s"), _row("a.md", "y", 2.0, "2 s")
    assert ledger.to_bytes([a, b]) == ledger.to_bytes([b, a])
    doc = json.loads(ledger.to_bytes([a, b]))
    assert doc["schema"] == "probebook.ledger/1"
    assert [r["page"] for r in doc["rows"]] == ["a.md", "b.md"]
    path = tmp_path / "sub" / "ledger.json"
    ledger.write(path, [a, b])
    assert ledger.read(path) == [b, a]
    assert sorted(p.name for p in path.parent.iterdir()) == ["ledger.json"]  # no temp file left


@pytest.mark.parametrize(
    "content,message",
    [
        (b"{not json", "not a JSON ledger"),
        (b'{"schema": "other/1", "rows": []}', "field 'schema' must be 'probebook.ledger/1', got 'other/1'"),
        (b'{"schema": "probebook.ledger/1", "rows": {}}', "field 'rows' must be a list"),
        (b'{"schema": "probebook.ledger/1", "rows": [{"page": "a.md"}]}', "rows[0] lacks field 'key'"),
        (
            b'{"schema": "probebook.ledger/1", "rows": [{"page": "a.md", "key": "k", "value": "1", "unit": "", '
            b'"text": "", "uncertainty": null, "evidence": [], "derivation": ""}]}',
            "rows[0].value must be a number",
        ),
    ],
)
def test_ledger_read_refuses_malformed_files(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "ledger.json"
    path.write_bytes(content)
    with pytest.raises(ledger.LedgerError) as err:
        ledger.read(path)
    assert str(err.value).startswith(f"{path}: ")
    assert message in str(err.value)


def test_ledger_read_refuses_repeated_rows_and_missing_files(tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    row = _row("a.md", "k", 1.0, "1 s")
    path.write_text(json.dumps({"schema": ledger.SCHEMA, "rows": [row, row]}))
    with pytest.raises(ledger.LedgerError, match=r"rows\[1\] repeats page 'a.md' key 'k'"):
        ledger.read(path)
    with pytest.raises(ledger.LedgerError, match="no such ledger file"):
        ledger.read(tmp_path / "absent.json")


# -- diff -------------------------------------------------------------------------------


def test_relative_change() -> None:
    assert ledger.relative_change(8.0, 10.0) == 0.25
    assert ledger.relative_change(-4.0, -2.0) == 0.5
    assert ledger.relative_change(0.0, 1.0) is None
    assert ledger.relative_change(None, 1.0) is None
    assert ledger.change_percent(0.25) == "+25%"
    assert ledger.change_percent(-0.125) == "-12.5%"
    assert ledger.change_percent(None) == "n/a"


def test_diff_lists_added_removed_and_changed() -> None:
    old = [
        _row("a.md", "same", 1.0, "1 s"),
        _row("a.md", "moved", 8.0, "8 s"),
        _row("a.md", "gone", 3.0, "3 s"),
        _row("b.md", "rederived", 2.0, "2 s", "fit over all tokens"),
    ]
    new = [
        _row("a.md", "same", 1.0, "1 s"),
        _row("a.md", "moved", 10.0, "10 s"),
        _row("c.md", "new", 4.0, "4 s"),
        _row("b.md", "rederived", 2.0, "2 s", "fit from 512 tokens"),
    ]
    d = ledger.diff(old, new)
    assert [r["key"] for r in d.added] == ["new"]
    assert [r["key"] for r in d.removed] == ["gone"]
    assert [(c.page, c.key, c.relative) for c in d.changed] == [("a.md", "moved", 0.25), ("b.md", "rederived", 0.0)]
    assert d.unchanged == 1 and d.any
    assert ledger.format_diff(d) == [
        "added    c.md new: 4 s",
        "removed  a.md gone: 3 s",
        "changed  a.md moved: 8 s -> 10 s (+25%)",
        "changed  b.md rederived: 2 s -> 2 s (+0%); derivation 'fit over all tokens' -> 'fit from 512 tokens'",
        "1 added, 1 removed, 2 changed, 1 unchanged",
    ]
    as_json = d.to_dict()
    assert as_json["changed"][0]["relative_change"] == 0.25 and as_json["unchanged"] == 1


def test_diff_of_identical_ledgers_is_empty_and_missing_values_compare_equal() -> None:
    rows = [_row("a.md", "k", None, "n/a"), _row("a.md", "j", 2.0, "2 s")]
    d = ledger.diff(rows, [dict(r) for r in rows])
    assert not d.any and d.unchanged == 2
    moved = ledger.diff([_row("a.md", "k", None, "n/a")], [_row("a.md", "k", 1.0, "1 s")])
    assert len(moved.changed) == 1 and moved.changed[0].relative is None
