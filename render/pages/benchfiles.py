"""Benchmark paths in prose as links: `` `bench/ddp.py` `` links to the *Benchmarks* page, which shows the file.

Records cite the scripts and logs under ``bench/`` that produced or checked their evidence. The site is built
without a network and may be read from disk, so a link to a code host would be a guess at an address; instead
every ``bench/`` path a page names in inline code, and that is a regular file of the repository beside ``docs/``,
links to one generated page (``bench.md``) that lists each with its size, SHA-256 and the sources' commit, and
shows its text in a fenced block (inert: Markdown escapes it) when it is small UTF-8 text. A path that is not such a
file stays plain code. Nothing is run; a link, a folder or a file outside ``bench/`` is never read.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from markdown.extensions.toc import slugify

from render.numbers.links import escape_text, relative_link
from render.pages.sources import Sources

PAGE = "bench.md"
"""The tree path of the generated *Benchmarks* page."""
MAX_SHOWN = 64 * 1024
"""The largest file whose text the page shows (bytes); a larger one is listed with its hash only."""
_CODE = re.compile(r"(?<!`)`(bench/[A-Za-z0-9_][A-Za-z0-9_./-]{0,199})`(?!`)")


@dataclass(frozen=True)
class BenchFile:
    """One file under ``bench/`` that a page names."""

    path: str
    """Its POSIX path in the repository, ``bench/ddp.py``."""
    data: bytes
    """Its bytes as read at build time."""

    @property
    def anchor(self) -> str:
        """The id the engine gives the file's heading on ``PAGE`` (Python-Markdown's ``toc`` slug of the path)."""
        return slugify(self.path, "-")


def found(src: Sources) -> dict[str, BenchFile]:
    """The ``bench/`` files the pages name in inline code that exist as regular files beside ``docs/``, by path."""
    root = Path(src.root).resolve().parent
    bench = root / "bench"
    names = sorted({m.group(1) for page in src.pages for m in _CODE.finditer(page.body)})
    out = {}
    for name in names:
        if ".." in name.split("/") or not bench.is_dir() or bench.is_symlink():
            continue
        path = root / name
        if path.is_symlink() or not path.is_file() or not path.resolve().is_relative_to(bench.resolve()):
            continue
        out[name] = BenchFile(name, path.read_bytes())
    return out


def link(text: str, rel: str, files: dict[str, BenchFile]) -> str:
    """``text`` (a page's Markdown) with each named bench file's inline code linked to its entry on ``PAGE``."""
    if not files:
        return text

    def one(m: re.Match[str]) -> str:
        known = files.get(m.group(1))
        if known is None:
            return m.group(0)
        return f"[{m.group(0)}]({relative_link(rel, PAGE)}#{known.anchor})"

    return _CODE.sub(one, text)


def page(files: dict[str, BenchFile], commit: str) -> str:
    """The *Benchmarks* page: each file with its size, SHA-256 and, when small text, its contents."""
    out = ["# Benchmarks", ""]
    out += [
        f"The benchmark scripts and results the pages cite, as the sources held them at `{escape_text(commit)}`.",
        "",
    ]
    for f in files.values():
        out += [f"## {escape_text(f.path)}", ""]
        out += [f"{len(f.data):,} bytes, SHA-256 `{hashlib.sha256(f.data).hexdigest()}`.", ""]
        try:
            text = f.data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is not None and len(f.data) <= MAX_SHOWN:
            fence = "`" * max(3, 1 + max((len(r) for r in re.findall(r"`+", text)), default=0))
            out += [f"{fence}text", text.rstrip("\n"), fence, ""]
        else:
            out += ["Not shown here: larger than the page shows, or not text.", ""]
    return "\n".join(out) + "\n"
