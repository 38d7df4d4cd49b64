"""Evidence pages fold their long tables (raw samples, points, other data, numbers taken) under their headings, so the
first screen says what the document is; short tables and the lines around them stay as they were (literal inputs)."""

from __future__ import annotations

import copy
import re

from test_evidence_pages import DOC, ID

from render.evidence import folds
from render.evidence import pages as ep


def _table(rows: int) -> str:
    return "\n".join(["| # | t |", "|---:|---|", *(f"| {i} | {i / 10} |" for i in range(rows))])


def test_a_table_of_more_rows_than_the_limit_is_folded_with_its_count() -> None:
    text = "Intro line.\n\n" + _table(folds.FOLD_ROWS + 1) + "\n\n*3 more rows in the CSV download.*\n\n## Next"
    out = folds.fold(text, "raw samples")
    assert out.startswith('Intro line.\n\n??? pb-fold "Show the 13 raw samples"\n\n    | # | t |\n    |---:|---|\n')
    assert "    | 12 | 1.2 |\n\n    *3 more rows in the CSV download.*\n" in out  # the note folds with its table
    assert out.endswith("\n## Next")  # the next heading is outside the fold
    assert "| 0 | 0.0 |" in out and out.count("??? ") == 1


def test_a_table_at_the_limit_and_lines_without_a_table_are_unchanged() -> None:
    text = "Intro.\n\n" + _table(folds.FOLD_ROWS) + "\n\nAfter."
    assert folds.fold(text) == text
    assert folds.fold("") == ""


def test_the_raw_samples_of_an_evidence_page_fold_and_keep_their_row_anchors() -> None:
    doc = copy.deepcopy(DOC)
    doc["data"]["samples"] = [{"tokens": 512 * (i + 1), "step_s": 0.1 + i / 1000} for i in range(30)]
    page = ep.page_markdown(ID, doc, [])
    head = page[: page.index("## Raw samples")]
    assert "??? " not in head  # what the document is, its envelope and params: open at the top
    raw = page[page.index("## Raw samples (30)") :]
    assert raw.index('??? pb-fold "Show the 30 raw samples"') < raw.index('    | <span id="row-29"></span>29 |')
    assert re.search(r'<span id="samples"></span>Numbers show six', raw)  # the note stays outside the fold
