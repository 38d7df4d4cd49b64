"""Long tables of an evidence page folded under their headings (issue 42, item 6): the page's first screen says what the
document is and its table of contents shows, where the raw rows of a campaign once ran a page to 88,000 px."""

from __future__ import annotations

import re

FOLD_ROWS = 12
"""A table of more rows than this (the raw samples, a campaign's points, other data, the numbers taken) is folded
into a closed ``<details>`` under its heading (``fold``)."""

_TABLE_ROW = re.compile(r"^\|.*\|$")


def fold(markdown: str, what: str = "rows") -> str:
    """``markdown`` with each table of more than ``FOLD_ROWS`` rows (and the line after it that says what more the
    download holds) inside a closed fold, ``Show the 128 rows``; a number link landing on a row opens it (the
    browser does for a fragment, ``numbers.js`` where it does not). Shorter tables and other lines are unchanged."""
    lines, out, i = markdown.split("\n"), [], 0
    while i < len(lines):
        j = i
        while j < len(lines) and _TABLE_ROW.match(lines[j]):
            j += 1
        if j - i - 2 <= FOLD_ROWS:  # not a table, or a short one (its head and rule are two of its lines)
            out += lines[i : max(j, i + 1)]
            i = max(j, i + 1)
            continue
        block, rows = lines[i:j], j - i - 2
        k = j
        while k < len(lines) and not lines[k].strip():
            k += 1
        if k < len(lines) and lines[k].startswith("*") and lines[k].endswith("*"):  # "*12 more rows in the CSV …*"
            block += ["", lines[k]]
            j = k + 1
        out += [f'??? pb-fold "Show the {rows:,} {what}"', ""]
        out += [f"    {line}" if line else "" for line in block] + [""]
        i = j
    return "\n".join(out)
