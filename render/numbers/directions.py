"""Labels that state a direction (speed-up, saving, slower, faster) checked against their number, like a claim.

A headline's label is prose the build would otherwise never check, and a label can turn a true number
into a false statement: "forward-over-reverse against double backward (speed-up): 1.93" reads as
forward-over-reverse being the faster, when the number says double backward is (issue 23, item 4).
``check_label`` reads the direction a label states and refuses it when the number does not have it:

- a ratio of times (a unitless number not in a percent format) states a speed-up or a slowdown when it
  is above 1;
- a fractional change (a percent format: a saving, a slowdown) or a difference in a unit (seconds saved
  per epoch) states its direction when it is above 0;
- a number that names what it compares (``Quantity.order``: the faster, the slower) must be named in
  the label in the order the direction word reads: the faster first for a speed-up, a saving or
  "faster", the slower first for a slowdown or "slower".
"""

from __future__ import annotations

import re

from render.numbers.claims import checking
from render.numbers.quantity import COMPARE, ClaimError, Comparison, Quantity

WORDS: dict[str, str] = {
    "speed-up": "faster",
    "speedup": "faster",
    "faster": "faster",
    "saving": "faster",
    "saves": "faster",
    "slowdown": "slower",
    "slower": "slower",
}
"""Each direction word and what it says of the thing a label names first."""
_WORD = re.compile(r"(?<![a-z])(" + "|".join(re.escape(w) for w in WORDS) + r")(?![a-z])")


def stated_direction(label: str) -> str | None:
    """``"faster"`` or ``"slower"``: what a label's first direction word says of what it names first (None: no word)."""
    m = _WORD.search(label.lower())
    return WORDS[m.group(1)] if m else None


def _plain(text: str) -> str:
    return re.sub(r"[-_\s]+", " ", text.lower())


def check_label(label: str, q: Quantity, where: str) -> None:
    """Refuse (one line naming ``where``) a label whose direction word the number ``q`` does not bear out."""
    direction = stated_direction(label)
    if direction is None or q.value is None or not checking():  # a reproduction's render records, never refuses
        return
    change = q.fmt.endswith("%") or bool(q.unit)  # a fraction of a whole, or a difference in its unit
    holds = q.value > 0 if change else q.value > 1
    if not holds:
        bound = ("0%" if q.fmt.endswith("%") else "0") if change else "1"
        raise ClaimError(f"{where}: the label {label!r} says {direction}, but {q.key} = {q.text} is not above {bound}")
    if q.order is None:
        return
    text = _plain(label)
    first, second = q.order if direction == "faster" else q.order[::-1]
    at_first, at_second = text.find(_plain(first)), text.find(_plain(second))
    if at_first >= 0 and at_second >= 0 and at_second < at_first:
        raise ClaimError(
            f"{where}: the label {label!r} names {second} first and says {direction}, but {q.key} = {q.text} "
            f"says {q.order[0]} is the faster"
        )


UNRESOLVED = "within noise"
"""The mark a headline carries when its interval contains zero: it does not resolve a direction."""


def headline_mark(q: Quantity) -> str | None:
    """The visible mark a headline's number needs beyond its own: ``within noise`` when its 95% interval
    contains zero (a saving or a difference that the evidence does not tell from none), else None."""
    if q.uncertainty is None or q.value is None:
        return None
    lo, hi = q.uncertainty
    return UNRESOLVED if lo <= 0 <= hi else None


VERDICT_WORDS = (
    "faster", "slower", "quicker", "speed-up", "speedup", "speeds", "slowdown", "slows", "save", "saves", "saving",
    "saved", "cost", "costs", "costlier", "cheaper", "larger", "smaller", "bigger", "more", "less", "fewer", "higher",
    "lower", "above", "below", "exceed", "exceeds", "fails", "fail", "passes", "pass", "beats", "wins", "outruns",
    "grows", "shrinks", "gains", "loses", "raises", "lowers", "cuts", "bounds", "dominates",
)  # fmt: skip
"""Words by which an Answer's sentence states a direction (one thing above, below, faster than another)."""
_VERDICT = re.compile(r"(?<![a-z-])(" + "|".join(re.escape(w) for w in VERDICT_WORDS) + r")(?![a-z-])")


def verdict_direction(text: str) -> str | None:
    """The first word by which an Answer's sentence states a direction (None: it states none)."""
    m = _VERDICT.search(text.lower())
    return m.group(1) if m else None


def unresolved(c: Comparison) -> str | None:
    """Why the 95% intervals do not resolve comparison ``c`` (None: they do).

    A side without an interval counts as its value. ``a > b`` is resolved when ``a``'s low end is above ``b``'s
    high end (``a < b`` the mirror), so a difference inside the noise cannot carry a direction, the rule
    ``headline_mark`` applies to one number: an interval that contains zero does not tell a change from none.
    """
    left, right = c.left, c.right
    if left.value is None or right.value is None:
        return f"{c.text} has a side with no value"
    lo_a, hi_a = left.uncertainty or (left.value, left.value)
    lo_b, hi_b = (x * c.factor for x in (right.uncertainty or (right.value, right.value)))
    if c.op in (">", ">="):
        held = COMPARE[c.op](lo_a, hi_b)
        ends = f"the low end of {left.key} ({lo_a:.4g}) is not above the high end of {right.key} ({hi_b:.4g})"
    else:
        held = COMPARE[c.op](hi_a, lo_b)
        ends = f"the high end of {left.key} ({hi_a:.4g}) is not below the low end of {right.key} ({lo_b:.4g})"
    return None if held else f"{c.text}, but {ends}: the 95% intervals overlap, so it is not resolved"
