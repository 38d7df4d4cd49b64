"""The project's own code names quoted in the prose (docs/, README.md, ARCHITECTURE.md) still name something.

A record, the README or the map that quotes `measure.x.y` or `render.x.y` tells a reader where to look; after a
module is merged or renamed the quote must follow it (a superseded record once named a module that no longer
existed). A name resolves when its longest importable prefix is a module and the rest are attributes of it.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
QUOTED = re.compile(r"`((?:measure|render|probebook)(?:\.[A-Za-z_][A-Za-z0-9_]*)+)`")


def quoted_names() -> dict[str, str]:
    """Each quoted dotted name of the project's packages, with the first file quoting it."""
    found: dict[str, str] = {}
    files = [ROOT / "README.md", ROOT / "ARCHITECTURE.md", *sorted((ROOT / "docs").rglob("*.md"))]
    for path in files:
        for name in QUOTED.findall(path.read_text(encoding="utf-8")):
            if not name.endswith(".py"):  # a file's name (`render.py` under bench/), not a dotted name
                found.setdefault(name, str(path.relative_to(ROOT)))
    return found


def resolves(name: str) -> bool:
    """True when ``name`` is a module, or a module's attribute chain (torch-free: render never imports torch,
    and a measure module that needs torch imports it lazily)."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def test_resolves_tells_a_moved_name_from_a_present_one() -> None:
    assert resolves("measure.evidence.reading.for_reading")
    assert not resolves("measure.evidence.older.for_reading")
    assert not resolves("render.no_such_module")


@pytest.mark.parametrize(("name", "where"), sorted(quoted_names().items()))
def test_a_quoted_code_name_exists(name: str, where: str) -> None:
    assert resolves(name), f"{where} quotes `{name}`, which names nothing in this tree"
