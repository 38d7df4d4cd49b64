"""Numbers inside generated sentences (a chart's alt text, a fit's warnings) as ledger rows (issue 23).

A derivation that explains itself in words (``the sample at S=2048 took 0.0412 s where the other samples
predict 0.0398 s``) puts numbers on the page that no Quantity carries. ``Said`` is such a sentence with the
evidence it is derived from; each number in it becomes a ledger row keyed ``KEY[i]`` (``i``: its place in the
sentence), with the number as shown (``text``), its value, ``%`` as its unit when it is a percent, and the
sentence as its label. Where the sentence is shown as text (a warning, not an image's alt text), each number
is linked to the evidence like a Quantity.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from render.derive import basis
from render.numbers.links import number_links, short_id, title_text

# A number as the site writes one: an optional sign (ASCII or U+2212), digits with optional thousands
# separators, decimals, an exponent, a percent sign; not part of a word (250m, sha256, SHA-256, S²) or of an
# entity (&#45;).
_NUMBER = re.compile(
    r"(?:(?<![\w.#&])[−-](?=\d)|(?<![\w.#&−-]))(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:e[+−-]?\d+)?%?(?![\w]|\.\d)"
)


def numbers_in(text: str) -> list[tuple[int, int, str, float]]:
    """(start, end, text, value) of each number in ``text``, in order: ``"2,048"`` is 2048, ``"5%"`` is 5."""
    out = []
    for m in _NUMBER.finditer(text):
        shown = m.group(0)
        plain = shown.rstrip("%").replace(",", "").replace("−", "-")
        out.append((m.start(), m.end(), shown, float(plain)))
    return out


@dataclass(frozen=True)
class Said:
    """A sentence a page shows, made by a derivation, whose numbers are ledger rows."""

    key: str
    """The ledger key its numbers' keys start with: ``fit(sweep).warnings[2]``."""
    text: str
    """The sentence as made (before escaping)."""
    evidence: tuple[str, ...]
    """The evidence ids the sentence is derived from."""
    derivation: str
    """What made it: ``fit(sweep) warning``."""


def rows(page: str, said: Said) -> list[dict[str, Any]]:
    """One ledger row per number in the sentence."""
    out = []
    for i, (_, _, shown, value) in enumerate(numbers_in(said.text)):
        out.append(
            {
                "page": page,
                "key": f"{said.key}[{i}]",
                "label": said.text,
                "value": value,
                "unit": "%" if shown.endswith("%") else "",
                "text": shown,
                "uncertainty": None,
                "evidence": list(said.evidence),
                "derivation": said.derivation,
                "basis": basis.WORDS,
            }
        )
    return out


def linked(page: str, escaped: str, said: Said) -> str:
    """``escaped`` (the sentence as ``escape_text`` made it, which leaves numbers as they are) with each number
    a link to the evidence, titled by the derivation."""
    if not said.evidence:
        return escaped
    more = f" (+{len(said.evidence) - 1} more)" if len(said.evidence) > 1 else ""
    title = title_text(f"{said.derivation}; evidence {short_id(said.evidence[0])}{more}")
    parts, at = [], 0
    found = numbers_in(escaped)
    keyed = len(found) == len(numbers_in(said.text))  # the i-th number is row KEY[i]: its link lands on its entry
    for i, (start, end, shown, _) in enumerate(found):
        parts.append(escaped[at:start])
        parts.append(number_links(page, shown, title, said.evidence, (), (page, f"{said.key}[{i}]") if keyed else None))
        at = end
    return "".join(parts) + escaped[at:]
