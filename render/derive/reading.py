"""How a number reads on the site: significant figures, SI prefixes, intervals, minus signs (ARCHITECTURE.md §Numbers).

Pure text functions, no state: ``render.numbers.quantity`` calls them to show a Quantity, the tables and
the evidence pages call them for their cells. The rules, from the SI Brochure (9th edition,
§5.4: a space between number and unit, prefixes attached to the unit) and the GUM (JCGM 100:2008,
§7.2.6: an uncertainty to at most two significant digits, the value to the same decimal place):

- a number and its unit are joined by a narrow no-break space (U+202F), so they never part at a
  line end: ``4.23 TB/s``, ``46.5 µs``;
- the prefix is chosen so the number lies in [1, 1000): ``4.23 TB/s``, never ``4.23e+03 GB/s``;
  bytes take binary prefixes (GiB) where the page asked for them, decimal ones (GB) otherwise, and
  a bare byte count reads ``bytes`` (never a ``B`` that reads as billions);
- three significant figures unless an interval says how many the number has: two significant
  figures of its smaller half-width set the last decimal shown, for the value and its bounds alike
  (``3.9 µs/token (1.7–5.8)``);
- a negative number has a true minus sign (U+2212);
- no exponent anywhere: a unitless count of a million or more reads ``9.84 billion``, a unitless
  ratio under 0.001 reads in parts per million or billion (``1.17 ppm``).
"""

from __future__ import annotations

import decimal
import math
import re

NNBSP = "\u202f"
"""Narrow no-break space: between a number and its unit (SI Brochure §5.4.3)."""
MINUS = "\u2212"
"""The minus sign (U+2212), not a hyphen."""
SIG = 3
"""Significant figures of a number with no interval."""
MAX_SIG = 4
"""An interval never asks for more figures than this (a bootstrap interval is itself uncertain)."""

_DECIMAL = [("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3), ("", 1.0)]
_SMALL = [("m", 1e-3), ("µ", 1e-6), ("n", 1e-9)]
_BINARY = [("Ti", 2.0**40), ("Gi", 2.0**30), ("Mi", 2.0**20), ("Ki", 2.0**10), ("", 1.0)]
# Which prefixes each base unit takes: time only shrinks (nobody reads "ks"), bytes and rates only grow.
_LADDERS: dict[str, list[tuple[str, float]]] = {
    "s": [("", 1.0), *_SMALL],
    "B": _DECIMAL,
    "FLOP": _DECIMAL,
    "tok": _DECIMAL,
}
# Every prefix a unit may be written with; "u" is the ASCII spelling of "µ".
_PARSED = _BINARY[:-1] + _DECIMAL + _SMALL + [("u", 1e-6)]
_WORDS = [("trillion", 1e12), ("billion", 1e9), ("million", 1e6)]


def minus(text: str) -> str:
    """``-3.2`` -> ``−3.2``: hyphen-minus signs in formatted number text become true minus signs."""
    return text.replace("-", MINUS)


def decimals_for(value: float, sig: int) -> int:
    """Decimal places that show ``value`` to ``sig`` significant figures (negative: round left of the point)."""
    if value == 0 or not math.isfinite(value):
        return 0
    return sig - 1 - math.floor(math.log10(abs(value)))


def fixed(value: float, decimals: int, group: bool = True) -> str:
    """``value`` rounded to ``decimals`` places (rounding to tens or more when negative), no exponent.

    Thousands are grouped with commas; a rounded zero has no sign.
    """
    if decimals < 0:
        step = 10.0**-decimals
        value = round(value / step) * step
        decimals = 0
    text = f"{value:{',' if group else ''}.{decimals}f}"
    if text.lstrip("-").strip("0.,") == "":
        text = text.lstrip("-")
    return minus(text)


def significant(value: float, sig: int = SIG) -> str:
    """``value`` to ``sig`` significant figures in fixed notation: ``0.00417``, ``46.5``, ``3,600``, ``−1.2``;
    a non-finite value as Python writes it (``nan``, ``inf``)."""
    if value == 0:
        return "0"
    if not math.isfinite(value):
        return str(value)
    rounded = float(f"{value:.{sig - 1}e}")  # round first: 999.95 is 1000 at 4 figures, not "999.9" or "1000.0"
    return fixed(rounded, max(decimals_for(rounded, sig), 0))


def interval_decimals(value: float, low: float, high: float) -> int | None:
    """Decimal places that two significant figures of the interval's smaller half-width ask for (GUM §7.2.6).

    None when the interval gives no width (a bound equal to the value); the value then shows ``SIG`` figures.
    The value keeps at least one and at most ``MAX_SIG`` significant figures.
    """
    half = min(abs(value - low), abs(high - value))
    if half == 0 or not math.isfinite(half):
        return None
    places = decimals_for(half, 2)
    if value != 0:
        places = max(min(places, decimals_for(value, MAX_SIG)), decimals_for(value, 1))
    return places


def interval(low: str, high: str, suffix: str = "") -> str:
    """``(1.7–5.8)``; ``(−1.2 to 5.8)`` when a bound is negative, since an en dash beside a minus misreads."""
    joint = " to " if low.startswith(MINUS) or high.startswith(MINUS) else "–"
    return f"({low}{suffix}{joint}{high}{suffix})" if joint == " to " else f"({low}{joint}{high}{suffix})"


def split_base(unit: str) -> tuple[float, str, str] | None:
    """``"GB/s"`` -> ``(1e9, "B", "/s")``: the prefix's factor, the base it attaches to, and the unit's tail.

    None for a unit no prefix attaches to (``MHz``, ``h``, ``""``).
    """
    for base in _LADDERS:
        for prefix, factor in _PARSED:
            head = prefix + base
            if unit == head or (unit.startswith(head) and unit[len(head)] in "/·²³ "):
                if prefix in ("Ki", "Mi", "Gi", "Ti") and base != "B":
                    continue  # binary prefixes are for bytes only
                return factor, base, unit[len(head) :]
    return None


def choose_unit(value: float, unit: str, binary: bool = False) -> tuple[float, str]:
    """The prefix of ``unit``'s base that puts ``value`` (given in ``unit``) in [1, 1000), after rounding to 3 figures.

    Returns (the value in the chosen unit, the chosen unit): ``choose_unit(4231.2, "GB/s")`` is
    ``(4.2312, "TB/s")``, ``choose_unit(4.651e-5, "s")`` is ``(46.51, "µs")``. Bytes take binary
    prefixes when ``binary``; a unit no prefix attaches to comes back unchanged.
    """
    parts = split_base(unit)
    if parts is None or value == 0 or not math.isfinite(value):
        return value, unit
    factor, base, tail = parts
    base_value = value * factor
    ladder = _BINARY if (binary and base == "B") else _LADDERS[base]
    magnitude = abs(float(f"{base_value:.{SIG - 1}e}"))  # 999.7 µs rounds to 1.00 ms, not "1,000 µs"
    chosen = ladder[-1]
    for prefix, size in ladder:  # largest first: the first prefix not larger than the value
        if magnitude >= size * (1 - 1e-12):
            chosen = (prefix, size)
            break
    return base_value / chosen[1], chosen[0] + base + tail


def unit_text(unit: str) -> str:
    """A unit as a reader sees it: a bare ``B`` reads ``bytes`` (a ``B`` beside a number reads as billions)."""
    if unit == "B":
        return "bytes"
    if unit.startswith("u") and split_base(unit) is not None:
        return "µ" + unit[1:]  # "us", the ASCII spelling a page may ask for, reads "µs"
    return unit


def count_words(value: float, sig: int = SIG, space: str = NNBSP) -> str | None:
    """A unitless count of a million or more in words: ``9.84 billion``; None below a million."""
    for word, size in _WORDS:
        if abs(value) >= size * (1 - 5 * 10.0 ** -(sig + 1)):
            return f"{significant(value / size, sig)}{space}{word}"
    return None


def small_ratio(value: float, sig: int = SIG, space: str = NNBSP) -> str | None:
    """A unitless ratio under 0.001 in parts per million or billion: ``1.17 ppm``, ``90.3 ppb``; None otherwise."""
    if value == 0 or abs(value) >= 1e-3:
        return None
    if abs(value) >= 1e-6:
        return f"{significant(value * 1e6, sig)}{space}ppm"
    return f"{significant(value * 1e9, sig)}{space}ppb"


def with_unit(number: str, unit: str, space: str = NNBSP) -> str:
    """``46.5`` and ``µs`` -> ``46.5 µs`` joined by ``space`` (narrow no-break); a bare number without a unit."""
    return f"{number}{space}{unit_text(unit)}" if unit else number


def general(value: float, sig: int = 4) -> str:
    """A plain number in running text (a derivation, a change) without an exponent: ``2.5e8`` -> ``250 million``.

    A million or more in words, anything else to ``sig`` significant figures in fixed notation.
    """
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else str(value)
    words = count_words(value, sig, " ")
    if words:
        number, word = words.split(" ")
        return f"{_trim(number)} {word}"
    return _trim(significant(value, sig))


def _trim(text: str) -> str:
    """``250.0`` -> ``250``, ``0.001500`` -> ``0.0015``: trailing zeros a plain number in prose does not need."""
    return text.rstrip("0").rstrip(".") if "." in text else text


def exact(value: float) -> str:
    """A number in a key or identifier, exactly and without an exponent: ``2.5e8`` -> ``250000000``."""
    if isinstance(value, int) or (math.isfinite(value) and float(value).is_integer()):
        return str(int(value))
    return format(decimal.Decimal(repr(value)), "f")  # the float's shortest round-trip digits, in fixed notation


def readable_float(value: float) -> str:
    """A raw stored float as a reader reads it: at most 6 significant figures, no exponent, true minus.

    ``0.07376980586416063`` -> ``0.0737698``; ``2.835223151023669e-05`` -> ``0.0000283522``; ``0.0015`` stays;
    ``1e+21`` -> ``1,000,000,000,000,000,000,000``. The exact value stays in the archived JSON.
    """
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else str(value)
    return _trim(significant(value, 6))  # a raw value states no precision: no padding zeros


MAX_FORMAT_WIDTH = 200
"""The widest field or precision a format spec may ask for: ``'999999999.2f'`` would build a gigabyte string."""


def wide_format(spec: str) -> bool:
    """Whether a format spec asks for a field or precision wider than ``MAX_FORMAT_WIDTH``, or a nested one.

    ``\\d`` matches every Unicode decimal digit, as Python's format-spec parser accepts them (``'２０１'``)."""
    if "{" in spec or "*" in spec:
        return True
    return any(int(n) > MAX_FORMAT_WIDTH for n in re.findall(r"\d+", spec))


_WHOLE = re.compile(r"[−-]?(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)")


def reads_whole(shown: str, value: float | None) -> bool:
    """Whether a number a page showed as ``shown`` is a whole count or shape param (``2048``, ``24,576``): its text
    has no decimals, exponent or unit and its value is whole. Such a number is shown again as the integer it is,
    never to three figures (``2,050``) or padded (``4.00``)."""
    if value is None or not math.isfinite(value) or not float(value).is_integer():
        return False
    return bool(_WHOLE.fullmatch(shown.strip()))


def counted(n: float, noun: str) -> str:
    """``2 GPUs``, ``1 GPU``: a whole count and its noun, plural unless the count is one (never ``GPU(s)``)."""
    whole = int(n) if float(n).is_integer() else n
    return f"{whole} {noun}" + ("" if whole == 1 else "s")
