"""The page functions' names for the CLI's help, read from the decorators without importing a page function.

``probebook derive --help`` lists the page functions; importing them for that (``registry.registry``)
would load numpy, jinja2 and the page machinery into every ``probebook`` process (ARCHITECTURE.md §Fast processes).
So this module reads the same fact, the ``@page_function`` line above each function
in this package's modules, from their text: a millisecond, no imports, and no second list to keep
(an ``ast`` parse of the same files took about 20 times as long). ``tests/test_page_function_lists.py``
holds it equal to the registry, order included.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

_DECORATED = re.compile(r"^@(?:registry\.)?page_function\n(?:async )?def (\w+)\(", re.M)
"""A module-level ``@page_function`` (or ``@registry.page_function``) and the ``def`` right below it."""


@functools.lru_cache(maxsize=1)
def functions() -> tuple[str, ...]:
    """Every page function's name, by module name and then by line (the registry's order)."""
    names: list[str] = []
    for path in sorted(Path(__file__).parent.glob("*.py")):
        names += _DECORATED.findall(path.read_text(encoding="utf-8"))
    return tuple(names)
