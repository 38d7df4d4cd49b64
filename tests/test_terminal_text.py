"""probebook.cli.output.terminal_text: what `probebook derive` prints for a table or chart in a terminal, on literal
page Markdown (links, evidence footnotes, abbreviations, escapes, control characters from evidence)."""

from __future__ import annotations

from probebook.cli.output import terminal_text

NUMBER = (
    '[40.31](evidence/c497.md#n-0270 "trace_diff(ev, ev2): a (ms/step), row 1; no interval") '
    '[\\[2\\]](evidence/735c.md#n-0270 "evidence 2 of 2: sha256:735c")'
)


def test_a_number_keeps_its_figure_and_drops_its_links() -> None:
    assert terminal_text(f"| gemm | {NUMBER} |") == "| gemm | 40.31 |"


def test_written_files_and_images_keep_their_names() -> None:
    assert terminal_text("Download: [CSV](t.csv) · [JSON](t.json)") == "Download: CSV (t.csv) · JSON (t.json)"
    assert terminal_text("![step time](chart.svg#only-light)") == "step time (chart.svg#only-light)"


def test_an_abbreviation_shows_the_page_text_unescaped() -> None:
    cell = '<abbr title="nvjet_sm90_tst_320x128_NNT &amp; more">…tst\\_320x128\\_NNT</abbr>'
    assert terminal_text(cell) == "…tst_320x128_NNT"
    assert terminal_text("a\\_b \\[x\\] &lt;T&gt;") == "a_b [x] <T>"


def test_control_characters_from_evidence_are_dropped_but_lines_stay() -> None:
    assert terminal_text("kern\x1b[31mel\x9b\tx\nnext") == "kern[31mel\tx\nnext"
