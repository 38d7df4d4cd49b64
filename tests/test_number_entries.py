"""A derived number's own entry on its evidence page: its id, the link's choice of target, the section's Markdown."""

from __future__ import annotations

from render.evidence import landing, taken
from render.numbers import ledger, links
from render.numbers.quantity import Quantity

A, B = "sha256:" + "a" * 64, "sha256:" + "b" * 64
PAGE = "records/step/v2.md"


def test_entry_anchor_is_the_sha256_of_page_and_key() -> None:
    # sha256(b"records/step/v2.md\0fit(sweep).c")[:16], as `printf 'records/step/v2.md\0fit(sweep).c' | sha256sum`
    assert links.entry_anchor(PAGE, "fit(sweep).c") == "n-84b693fb0c31ec20"
    assert links.entry_anchor(PAGE, "fit(sweep).c#2") != links.entry_anchor(PAGE, "fit(sweep).c")
    assert links.entry_anchor("records/step/v1.md", "fit(sweep).c") != links.entry_anchor(PAGE, "fit(sweep).c")


def test_entry_href_keeps_the_rows_for_numbers_js_and_lands_on_the_entry() -> None:
    assert links.entry_href("n-1", "samples-r95-99~time_s") == "?rows=95-99&col=time_s#n-1"
    assert links.entry_href("n-1", "row-3") == "?rows=3#n-1"
    assert links.entry_href("n-1", "samples") == "#n-1"
    assert links.entry_href("n-1", "params-batch") == "#n-1"


def test_holds_reads_numbers_as_the_browser_tour_does() -> None:
    assert links.holds("70.3", "3 70.2743 0.5")
    assert links.holds("0.19%", "share 0.00190934")
    assert links.holds("1,024", "batch 1024")
    assert links.holds("within tolerance", "candidates › 0 › verdict within tolerance")
    assert not links.holds("148,480", "model FLOPs per token 16: 111.6 kFLOP; 64: 148.5 kFLOP")
    assert not links.holds("1", "candidates › 0 › verdict within tolerance")
    assert not links.holds("31.7% (27.8–35.3%)", "2 graph — 0 0.0383186")


def test_plain_text_reads_the_links_markdown() -> None:
    assert links.plain_text("510\u202fppb *(partial)*") == "510\u202fppb (partial)"
    assert links.plain_text("a\\_b &amp; c \\*") == "a_b & c *"


def _shown(table: dict[tuple[str, str], str]) -> links.Landing:
    return lambda ident, anchor: table.get((ident, anchor))


def test_a_derived_number_lands_on_its_entry_and_a_raw_one_on_its_row() -> None:
    shown = {(A, "row-0~k"): "12.1", (A, "row-3~k"): "4", (A, "params-flops"): "flops 16: 111.6 kFLOP"}
    token = links.LANDING.set(_shown(shown))
    try:
        cited = (PAGE, "k")
        entry = links.entry_anchor(*cited)
        # a median of rows 0-4: no row holds it
        median = links.number_links(PAGE, "12.3", "t", (A,), ("samples-r0-4~k",), cited)
        assert median == f'[12.3](../../evidence/{"a" * 64}.md?rows=0-4&col=k#{entry} "t")'
        # the samples table: the entry, with no rows to mark
        whole = links.number_links(PAGE, "3", "t", (A,), ("",), cited)
        assert whole == f'[3](../../evidence/{"a" * 64}.md#{entry} "t")'
        # a value every row of 0-4 shows, as the first row (where the link lands) shows it: that row
        constant = links.number_links(PAGE, "12.1", "t", (A,), ("samples-r0-4~k",), cited)
        assert constant == f'[12.1](../../evidence/{"a" * 64}.md?rows=0-4&col=k#row-0 "t")'
        # the value of row 3's cell as the row shows it: the row
        raw = links.number_links(PAGE, "4", "t", (A,), ("row-3~k",), cited)
        assert raw == f'[4](../../evidence/{"a" * 64}.md?rows=3&col=k#row-3 "t")'
        # a field that shows the value in another form: the entry
        flops = links.number_links(PAGE, "148,480", "t", (A,), ("params-flops",), cited)
        assert flops == f'[148,480](../../evidence/{"a" * 64}.md#{entry} "t")'
        # without its ledger row the number keeps the old landing (nothing to land on otherwise)
        assert links.number_links(PAGE, "12.3", "t", (A,), ("samples-r0-4~k",)).endswith('#row-0 "t")')
    finally:
        links.LANDING.reset(token)


def test_each_further_document_lands_on_the_numbers_entry_there() -> None:
    cited = (PAGE, "ratio")
    entry = links.entry_anchor(*cited)
    token = links.LANDING.set(_shown({(B, "row-1"): "1 0.452 0.519"}))
    try:
        md = links.number_links(PAGE, "3.61", "t", (A, B), ("", "samples-r1-2"), cited)
    finally:
        links.LANDING.reset(token)
    assert md == (
        f'[3.61](../../evidence/{"a" * 64}.md#{entry} "t") '
        f'[\\[2\\]](../../evidence/{"b" * 64}.md?rows=1-2#{entry} "evidence 2 of 2: sha256:bbbbbbbbbbbb")'
    )


def test_a_quantity_on_its_page_links_to_its_entry_and_its_ledger_row_says_what_the_entry_shows() -> None:
    q = Quantity(0.459, "", fmt=".1%", uncertainty=(0.437, 0.481), evidence=(A,), anchor="samples-r0-9~share", key="s")
    q = Quantity(**{**q.__dict__, "mark": "partial", "cited_as": (PAGE, "s")})
    assert q.shown_text == "45.9% (43.7–48.1%) (partial)"
    token = links.LANDING.set(_shown({(A, "row-0~share"): "0.41"}))
    try:
        assert f"?rows=0-9&col=share#{links.entry_anchor(PAGE, 's')}" in q.markdown(PAGE)
    finally:
        links.LANDING.reset(token)
    row = ledger.number_row(q, PAGE, "s")
    assert row["shown"] == "45.9% (43.7–48.1%) (partial)" and row["anchors"] == ["samples-r0-9~share"]
    plain = ledger.number_row(Quantity(2.0, "", fmt=".0f", evidence=(A,), key="n"), PAGE, "n")
    assert "shown" not in plain and "anchors" not in plain


def test_by_evidence_lists_each_number_under_every_document_it_cites_sorted() -> None:
    rows = [
        {
            "page": "records/b/v1.md",
            "key": "x",
            "text": "2",
            "evidence": [A, B],
            "derivation": "d",
            "anchors": ["", "row-1"],
        },
        {"page": "records/a/v1.md", "key": "y", "text": "1", "shown": "1 (partial)", "evidence": [A], "derivation": ""},
        {"page": "records/a/v1.md", "key": "claim: a", "unit": "claim", "text": "true", "evidence": [A]},
        {"page": "records/c/v1.md", "key": "z", "text": "3", "evidence": [B], "anchors": ['x") [y](javascript:']},
    ]
    assert taken.by_evidence(rows) == {
        A: [("records/a/v1.md", "y", "1 (partial)", "", "samples"), ("records/b/v1.md", "x", "2", "d", "samples")],
        B: [("records/b/v1.md", "x", "2", "d", "row-1"), ("records/c/v1.md", "z", "3", "", "samples")],
    }


def test_place_text_says_where_the_rows_are() -> None:
    assert taken.place_text("samples-r3-5_9~time_s") == "rows 3–5, 9, column time_s"
    assert taken.place_text("row-12") == "row 12"
    assert taken.place_text("samples") == "the raw samples"
    assert taken.place_text("params-batch") == "params › batch"


def test_the_section_is_escaped_data_one_row_per_number() -> None:
    entries = [("records/s/v2.md", "median<b>", "12.3 ms (11.9–12.8)", "median of *rows* | x", "samples-r0-4~step_s")]
    md = taken.section("evidence/" + "a" * 64 + ".md", entries, {"records/s/v2.md": "Step <i>time</i>"})
    entry = links.entry_anchor("records/s/v2.md", "median<b>")
    assert md == (
        "## Numbers taken from this evidence\n"
        "\n"
        "Each number a page shows from this evidence, as that page shows it, with what it is and the rows or field "
        "it was computed from.\n"
        "\n"
        "| number | what it is | cited by | computed from |\n"
        "|---|---|---|---|\n"
        f'| <span id="{entry}"></span>12.3 ms (11.9–12.8) | median of \\*rows\\* \\| x | '
        "[Step &lt;i&gt;time&lt;/i&gt;, version 2](../records/s/v2.md): median&lt;b&gt; | "
        "[rows 0–4, column step_s](?rows=0-4&col=step_s#row-0) |\n"
    )
    assert taken.section("evidence/x.md", [], {}) == ""


def test_anchor_texts_are_what_the_evidence_page_shows_at_each_anchor() -> None:
    doc = {
        "probe": "x",
        "params": {"batch": 4},
        "data": {"samples": [{"step_s": 0.0123}, {"step_s": 0.0125}], "verdict": "within tolerance"},
    }
    texts = landing.anchor_texts(doc)
    assert texts["row-1"] == "1 0.0125" and texts["row-1~step_s"] == "0.0125"
    assert texts["params-batch"] == "batch 4"
    assert texts["data-verdict"] == "verdict within tolerance"


def test_landing_place_names_the_column_a_row_holds_the_number_in_and_sections_land_on_the_entry() -> None:
    shown = {
        (A, "row-2"): "2 4096 0.0412",
        (A, links.COLUMNS): "tokens\nstep_s",
        (A, "row-2~tokens"): "4096",
        (A, "row-2~step_s"): "0.0412",
        (A, "params"): "",
        (A, "data-counts"): "",
    }
    token = links.LANDING.set(_shown(shown))
    try:
        # the row holds each in one cell: the link names that column, so numbers.js scrolls it into view
        assert links.landing_place(A, "row-2", "4,096") == "row-2~tokens"
        assert links.landing_place(A, "row-2", "41.2\u202fms") == ""  # another unit: no cell reads so
        assert links.landing_place(A, "row-2", "0.0412") == "row-2~step_s"
        assert links.landing_place(A, "row-2", "12.5") == ""
        assert links.landing_place(A, "params", "6,144") == ""  # the heading of the params table
        assert links.landing_place(A, "data-counts", "85") == ""  # a list of values in one cell
        assert links.landing_place(A, "point-3-tok_s", "85") == "point-3-tok_s"  # a place it does not know
        assert links.landing_place(A, "samples", "3") == ""
    finally:
        links.LANDING.reset(token)
    assert links.landing_place(A, "params", "6,144") == "params"  # no LANDING: the link as it was


def test_anchor_texts_hold_no_value_for_sections_and_lists() -> None:
    texts = landing.anchor_texts({"probe": "x", "data": {"samples": [{"a": 1}], "counts": [85, 57]}})
    assert texts["params"] == "" and texts["data-counts"] == "" and texts[links.COLUMNS] == "a"


def test_a_sentences_numbers_land_on_their_entries() -> None:
    from render.numbers import said

    sentence = said.Said("fit(s).warnings[0]", "2 of 5 samples are left out", (A,), "fit(s) warning")
    md = said.linked(PAGE, "2 of 5 samples are left out", sentence)
    first, second = links.entry_anchor(PAGE, "fit(s).warnings[0][0]"), links.entry_anchor(PAGE, "fit(s).warnings[0][1]")
    assert f"[2](../../evidence/{'a' * 64}.md#{first} " in md and f"[5](../../evidence/{'a' * 64}.md#{second} " in md
