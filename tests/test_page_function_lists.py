"""The page-function list lives once: names.FUNCTIONS, PageFunctions, library.py's table and README's table agree."""

from __future__ import annotations

import re

from conftest import REPO

from render.functions import library
from render.functions.names import FUNCTIONS


def _called(text: str) -> set[str]:
    """Every ``name(`` that opens a cell of a function table."""
    return set(re.findall(r"(?<![.\w])([a-z_]+)\(", text))


def test_every_listed_name_is_a_method_of_page_functions() -> None:
    assert len(FUNCTIONS) == len(set(FUNCTIONS))
    for name in FUNCTIONS:
        assert callable(getattr(library.PageFunctions, name, None)), name


def _table(doc: str) -> str:
    """The rows of the reStructuredText table at the top of library.py's docstring."""
    return doc[doc.index("======") : doc.rindex("======")]


def test_the_module_docstring_table_lists_exactly_the_functions() -> None:
    assert _called(_table(library.__doc__ or "")) == set(FUNCTIONS)


def test_readme_table_lists_exactly_the_functions() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if line.startswith("| `") and "(" in line.split("|")[1]]
    assert _called(" ".join(row.split("|")[1] for row in rows)) == set(FUNCTIONS)


def test_a_missing_name_is_found() -> None:
    assert _called("``fit(sweep, ...)``  ``.share(W)``  median(arm)") == {"fit", "median"}
