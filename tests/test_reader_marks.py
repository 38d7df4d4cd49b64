"""Marks a reader understands: signs with a tooltip and one legend per page, and no internal expression as a name."""

from __future__ import annotations

from render.numbers import legend
from render.numbers.quantity import Quantity
from render.pages.reproductions import reader_name

A = "sha256:" + "a" * 64


def test_a_partial_number_shows_a_sign_after_its_link_not_the_word() -> None:
    q = Quantity(0.0123, "s", display="ms", evidence=(A,), key="k", mark="partial")
    shown = q.markdown("records/r/v1.md")
    assert shown.endswith(
        '[†](#marks "partial: from partial evidence: a run that did not measure every point it planned")'
    )
    assert "*(partial)*" not in shown
    assert q.shown_text == "12.3 ms (partial)"  # the ledger keeps the words


def test_a_mark_without_a_sign_stays_a_word_beside_the_sign() -> None:
    q = Quantity(0.0123, "s", display="ms", evidence=(A,), key="k", mark="host-bound, partial")
    shown = q.markdown("records/r/v1.md")
    assert "12.3\u202fms *(host-bound)*](" in shown
    assert shown.count("[†](#marks") == 1
    assert legend.split_marks("lack of fit, partial") == ([legend.PARTIAL], ["lack of fit"])
    assert legend.split_marks(None) == ([], [])


def test_one_legend_lists_each_sign_the_page_uses_once_in_a_fixed_order() -> None:
    text = "a " + legend.sign_markdown(legend.CONTEXT) + " b " + legend.sign_markdown(legend.PARTIAL) * 3 + "\n"
    out = legend.with_legend(text)
    assert out.count("## Marks") == 1
    tail = out.split("## Marks", 1)[1]
    assert tail.index("**†** partial") < tail.index("**‡** context, not checked")
    assert "§" not in tail
    assert legend.with_legend("no marks here\n") == "no marks here\n"


def test_a_key_without_a_label_is_named_in_words() -> None:
    assert reader_name("value(graph_eager, params.seq_len)") == "seq len of graph eager"
    assert reader_name("fit(sweep).share(2048)") == "fit of sweep: share 2048"
    assert reader_name("paired(ablation, no-optimizer).saving") == "paired of ablation (no-optimizer): saving"
    assert reader_name("median(copy, gb_s, direction=h2d)") == "median of copy gb s (direction h2d)"
    assert reader_name("value(gemm, data.clocks.sm_mhz_before)") == "sm mhz before of gemm"
    assert reader_name("mfu(value(sweep, params.tokens) / median(sweep, step_s))#2") == "mfu of sweep (2)"
    assert "(" not in reader_name("constant(paired_alpha)")
