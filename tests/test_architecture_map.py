"""ARCHITECTURE.md stays a map: every ``ARCHITECTURE.md §Heading`` cited in the code names one of its headings."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from conftest import REPO

_CITE = re.compile(r"ARCHITECTURE\.md\s+§")
_MORE = re.compile(r",\s*§")
SUFFIXES = (".py", ".md", ".toml", ".js", ".css", ".sh", ".yml", ".cfg", ".txt")


def headings(text: str) -> list[str]:
    """The headings of a Markdown text, longest first (so the longest that prefixes a citation wins)."""
    found = [m.group(1).strip() for m in re.finditer(r"^#{1,6} (.+)$", text, re.M)]
    return sorted(found, key=len, reverse=True)


def unresolved(text: str, known: list[str], cite: re.Pattern[str] = _CITE) -> list[str]:
    """Each ``ARCHITECTURE.md §X`` (and each ``, §Y`` after it) in ``text`` whose X names no heading in ``known``;
    ``cite``: what opens a citation (in the map itself, a bare ``§``)."""
    bad = []
    for found in cite.finditer(text):
        at = found.end()
        while True:
            rest = text[at:]
            name = next((h for h in known if rest.startswith(h) and not rest[len(h) : len(h) + 1].isalnum()), None)
            if name is None:
                bad.append(rest[:40].split("\n")[0])
                break
            more = _MORE.match(text, at + len(name))
            if more is None:
                break
            at = more.end()
    return bad


def _tracked() -> list[str]:
    out = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    mine = Path(__file__).resolve().relative_to(REPO).as_posix()  # its examples cite missing headings on purpose
    return [f for f in out.split() if f.endswith(SUFFIXES) and f not in ("ARCHITECTURE.md", mine)]


def test_every_citation_in_the_repository_names_a_heading() -> None:
    known = headings((REPO / "ARCHITECTURE.md").read_text(encoding="utf-8"))
    bad = {}
    for name in _tracked():
        found = unresolved((REPO / name).read_text(encoding="utf-8", errors="replace"), known)
        if found:
            bad[name] = found
    assert bad == {}


def test_the_map_cites_itself_by_name_too() -> None:
    text = (REPO / "ARCHITECTURE.md").read_text(encoding="utf-8")
    assert unresolved(text, headings(text), re.compile("§")) == []
    assert len(text.encode("utf-8")) <= 15_000  # a map of things that rarely change, not an atlas (issue 44: 15 KB)


def test_a_citation_of_a_missing_heading_is_found() -> None:
    known = headings("# Map\n## Invariants\n### A probe\n### A page function\n")
    assert unresolved("see ARCHITECTURE.md §Invariants, item 7 and ARCHITECTURE.md §A page function.", known) == []
    assert unresolved("(ARCHITECTURE.md §6.4)", known) == ["6.4)"]
    assert unresolved("(ARCHITECTURE.md §A probe, §Timing)", known) == ["Timing)"]
    assert unresolved("ARCHITECTURE.md\n§Invariantsx", known) == ["Invariantsx"]
