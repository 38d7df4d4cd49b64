"""The prose lint: no hand-typed measurement in a page, no unchecked comparative sentence (ARCHITECTURE.md §Pages).

A hand-typed measurement is a number with a decimal point, a number with a percent sign, or a
number followed by a unit, found in prose: outside fenced code, inline code, Jinja tags (where
numbers come from evidence as Quantities), link targets, URLs and character references.
Titles and errata in front matter are prose too. Numbers inside words (H200, fp16, v2) are not
measurements; a plain count ("20 layers") is not either, nor a version ("Python 3.11", "CUDA 12.4", "3.11.7").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from measure.errors import ProbebookError
from render.pages import comparative
from render.pages.sources import SourcePage

_UNITS = (
    # time
    r"ns|µs|us|ms|s|secs?|seconds?|mins?|minutes?|h|hrs?|hours?|GPU-h|GPU-hours?",
    # memory
    r"B|KB|MB|GB|TB|KiB|MiB|GiB|TiB|bytes?",
    # rates, compute, power, clocks, ratios
    r"tok/s|tokens/s|tokens per second|samples/s|it/s|FLOP/s|FLOPS|[kMGTP]FLOP/s|[kMGTP]FLOPS|"
    r"W|kW|MHz|GHz|°C|x|×|"
    # energy (issue 43: joules per token, a projection's kilowatt-hours)
    r"J|mJ|kJ|MJ|GJ|Wh|kWh|MWh|GWh|J/tok|mJ/tok",
)
_NUMBER = r"(?<![\w.,])\d[\d,]*(?:\.\d+)?"
MEASUREMENT = re.compile(
    rf"{_NUMBER}\s?%"  # 12% / 12.5 %
    rf"|{_NUMBER}\s?(?:{'|'.join(_UNITS)})(?![\w/])"  # 12 ms, 3.4GiB, 1,200 tok/s, 2x
    r"|(?<![\w.])\d+\.\d+(?![\d])"  # any number with a decimal point
)

_JINJA = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", re.DOTALL)
_FENCE = re.compile(r"^[ \t>]*(`{3,}|~{3,})")
_INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL)
_LINK_TARGET = re.compile(r"\]\([^)\n]*\)")
_REF_DEFINITION = re.compile(r"^[ \t]*\[[^\]\n]+\]:[^\n]*$", re.MULTILINE)
_URL = re.compile(r"<?(?:https?|mailto|ftp):[^\s>)]*>?")
_ENTITY = re.compile(r"&#?\w+;")
_PRODUCTS = (
    "Python|CPython|PyPy|CUDA|cuDNN|cuBLAS|NCCL|ROCm|torch|PyTorch|Triton|JAX|transformers|numpy|NumPy|"
    "driver|version|Version|release|Ubuntu|Debian|RHEL|Linux|kernel|GCC|gcc|clang|Slurm|mkdocs|MkDocs|Zensical|"
    "Chrome|Chromium|Firefox|SM|sm|compute capability"
)
_VERSION = re.compile(
    rf"(?<![\w.])(?:(?:{_PRODUCTS})[ \t]+v?|v)\d+(?:\.\d+)+(?![\w.%])"  # Python 3.11, CUDA 12.4, v2.13
    r"|(?<![\w.])\d+\.\d+\.\d+(?:\.\d+)*(?![\w.])"  # 3.11.7: three parts are a version, never a measurement
)
_UNIT_AFTER = re.compile(rf"\s?(?:%|(?:{'|'.join(_UNITS)})(?![\w/]))")
"""A version string: a number with a point right after a product's name (or ``v``), or any three-part number.
Not a measurement (issue 40: "Python 3.11" was refused); a unit after it (``CUDA 12.4 ms``) still is one."""


class LintError(ProbebookError):
    """Prose holds a hand-typed measurement or an unchecked comparative sentence."""


@dataclass(frozen=True)
class Hit:
    """One hand-typed measurement."""

    where: str
    """The source file."""
    line: int
    """1-based line in the file."""
    column: int
    """1-based column."""
    text: str
    """What was found, e.g. ``12.3 ms``."""

    def __str__(self) -> str:
        return (
            f"{self.where} line {self.line} column {self.column}: hand-typed measurement {self.text!r} in prose; "
            "template it from evidence ({{ ... }}) or put it in `code`"
        )


def _blank(match: re.Match[str]) -> str:
    """Replace a match by spaces, keeping its newlines so lines and columns stay put."""
    return re.sub(r"[^\n]", " ", match.group(0))


def mask(text: str) -> str:
    """``text`` with everything that is not prose blanked out (same length, same lines)."""
    text = _JINJA.sub(_blank, text)
    lines = text.split("\n")
    fence: str | None = None
    for i, line in enumerate(lines):
        m = _FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)
            lines[i] = " " * len(line)
        elif fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line[m.end() :].strip():
                fence = None
            lines[i] = " " * len(line)
    text = "\n".join(lines)
    for pattern in (_INLINE_CODE, _LINK_TARGET, _REF_DEFINITION, _URL, _ENTITY):
        text = pattern.sub(_blank, text)
    return _VERSION.sub(_version, text)


def _version(match: re.Match[str]) -> str:
    """A version string blanked, unless a unit follows it (then the lint still sees a measurement)."""
    return match.group(0) if _UNIT_AFTER.match(match.string, match.end()) else _blank(match)


def find(text: str, where: str, first_line: int = 1) -> list[Hit]:
    """Every hand-typed measurement in ``text`` (whose first line is file line ``first_line``)."""
    hits = []
    for offset, line in enumerate(mask(text).split("\n")):
        for m in MEASUREMENT.finditer(line):
            hits.append(Hit(where, first_line + offset, m.start() + 1, m.group(0).strip()))
    return hits


def is_measurement(text: str) -> bool:
    """Whether a piece of text (a template string, say) holds a hand-typed measurement."""
    return MEASUREMENT.search(text) is not None


def lint_page(page: SourcePage) -> list[Hit]:
    """Hits in a page's prose, title, headline labels, answer, changes and errata."""
    hits = find(page.body, str(page.path))
    if page.title and page.title_in_front_matter:
        hits += [
            Hit(str(page.path), page.lines.get("title", 1), h.column, h.text) for h in find(page.title, str(page.path))
        ]
    for headline in page.summary:
        hits += [
            Hit(str(page.path), page.lines.get("summary", 1), h.column, h.text)
            for h in find(headline.label, str(page.path))
        ]
    for text in [v.text for v in page.answer] + ([page.changes] if page.changes else []):
        hits += [
            Hit(str(page.path), page.lines.get("answer" if text != page.changes else "changes", 1), h.column, h.text)
            for h in find(text, str(page.path))
        ]
    for erratum in page.errata:
        hits += [
            Hit(str(page.path), page.lines.get("errata", 1), h.column, h.text)
            for h in find(erratum.text, str(page.path))
        ]
    return sorted(hits, key=lambda h: (h.line, h.column))


def check(pages: tuple[SourcePage, ...] | list[SourcePage]) -> None:
    """Raise ``LintError`` naming the first hit (and how many more) when any page has one."""
    hits: list[Hit | comparative.Hit] = [h for page in pages for h in lint_page(page)]
    hits += [h for page in pages for h in comparatives(page)]
    if hits:
        more = f" ({len(hits) - 1} more: `probebook lint` lists them)" if len(hits) > 1 else ""
        raise LintError(f"{hits[0]}{more}")


COMPARATIVE_KINDS = ("record", "playbook")
"""The pages whose comparative sentences must be checked (``render.pages.comparative``)."""


def comparatives(page: SourcePage) -> list[comparative.Hit]:
    """Comparative sentences in a record's or playbook page's prose that are neither claims nor marked context."""
    if page.kind not in COMPARATIVE_KINDS:
        return []
    return comparative.find(page.body, mask(page.body), str(page.path))
