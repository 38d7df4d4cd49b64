"""render.numbers.said: the numbers in a fit warning, a note or a chart's alt text: ledger rows, linked where shown."""

from __future__ import annotations

from render.functions import views
from render.numbers import said
from render.numbers.links import entry_anchor

A = "sha256:" + "a" * 64


def test_numbers_in_a_sentence_are_found_as_written():
    text = "at S=2,048 took 0.0412 s (−3.5%, 1.2e-05 s) at 250m on sha256 (SHA-256) with S² and &#45; CV over 5%"
    assert [(t, v) for _, _, t, v in said.numbers_in(text)] == [
        ("2,048", 2048.0),
        ("0.0412", 0.0412),
        ("−3.5%", -3.5),
        ("1.2e-05", 1.2e-05),
        ("5%", 5.0),
    ]


def test_each_number_of_a_warning_is_a_ledger_row_and_a_link():
    sentence = said.Said("fit(sweep).warnings[0]", "outlier at S=512 took 0.02 s; CV over 5%", (A,), "fit warning 1")
    rows = said.rows("records/x/v1.md", sentence)
    assert [(r["key"], r["value"], r["unit"], r["text"]) for r in rows] == [
        ("fit(sweep).warnings[0][0]", 512.0, "", "512"),
        ("fit(sweep).warnings[0][1]", 0.02, "", "0.02"),
        ("fit(sweep).warnings[0][2]", 5.0, "%", "5%"),
    ]
    assert rows[0]["label"] == "outlier at S=512 took 0.02 s; CV over 5%" and rows[0]["evidence"] == [A]
    # each lands on its own entry of the evidence page (render.evidence.taken): no row there shows it
    link = [f"../../evidence/{'a' * 64}.md#{entry_anchor('records/x/v1.md', r['key'])}" for r in rows]
    title = "fit warning 1; evidence sha256:aaaaaaaaaaaa"
    assert said.linked("records/x/v1.md", sentence.text, sentence) == (
        f'outlier at S=[512]({link[0]} "{title}") took [0.02]({link[1]} "{title}") s; CV over [5%]({link[2]} "{title}")'
    )


def test_a_batch_note_says_its_batches_as_ledger_rows():
    view = views.BatchView({"unstable_batches": [16, 32]}, (A,), "batch sweep summary", "batch(sweep, 1024)")
    block = view.unstable
    assert [s.key for s in block.said] == ["batch(sweep, 1024).unstable"]
    rows = said.rows("records/x/v1.md", block.said[0])
    assert [(r["key"], r["text"]) for r in rows] == [
        ("batch(sweep, 1024).unstable[0]", "16"),
        ("batch(sweep, 1024).unstable[1]", "32"),
        ("batch(sweep, 1024).unstable[2]", "5%"),
    ]
    assert block.linked is not None and "[16](../../evidence/" in block.linked("records/x/v1.md")
    assert block.markdown.startswith('!!! note "Unstable points"\n\n    Batch 16, 32: ')
