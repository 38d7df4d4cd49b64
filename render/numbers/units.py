"""Units a Quantity is kept and shown in: SI and binary prefixes on a few base units, and larger units of time.

``conversion_factor`` is the one rule for moving a value between two spellings of one unit (``ms`` and ``s``,
``GiB`` and ``B``); anything else is a ``UnitError``.
"""

from __future__ import annotations

from measure.errors import ProbebookError

# SI and binary (IEC 80000-13) prefixes; "u" is accepted as an ASCII spelling of "µ".
_PREFIXES: dict[str, float] = {
    "Ki": 1024.0,
    "Mi": 1024.0**2,
    "Gi": 1024.0**3,
    "Ti": 1024.0**4,
    "P": 1e15,
    "T": 1e12,
    "G": 1e9,
    "M": 1e6,
    "k": 1e3,
    "m": 1e-3,
    "µ": 1e-6,
    "u": 1e-6,
    "n": 1e-9,
    "": 1.0,
}
# Base units a prefix may attach to; the unit's tail after the base ("/token", "/s") must match.
_BASES = ("FLOP", "tok", "s", "B", "J")
_PREFIX_ORDER = sorted(_PREFIXES, key=len, reverse=True)
# Larger units of time, as multiples of a second (a Quantity in s may be shown in h, say).
TIME = {"min": 60.0, "h": 3600.0, "d": 86400.0}


class UnitError(ProbebookError):
    """A unit conversion between incompatible units."""


TIMED_BASES = ("s", "s/token", "tok/s", "FLOP/s", "B/s")
"""Base units of a time or a rate: what a session's clocks, host and allocator move, so what an across-sessions
interval, a direction's need of an interval and a table cell's interval name are about (issue 38)."""


def is_timed_unit(unit: str) -> bool:
    """Whether ``unit`` (any prefix: ``ms``, ``Mtok/s``) is a time or a rate (``TIMED_BASES``)."""
    split = split_unit(unit)
    return split is not None and split[1] in TIMED_BASES


def split_unit(unit: str) -> tuple[float, str] | None:
    """``"ms/token"`` -> ``(1e-3, "s/token")``: the prefix factor and the prefix-free unit."""
    if unit in TIME:
        return TIME[unit], "s"
    for prefix in _PREFIX_ORDER:
        if not unit.startswith(prefix):
            continue
        rest = unit[len(prefix) :]
        for base in _BASES:
            if rest == base or (rest.startswith(base) and rest[len(base)] in "/·²³ "):
                if base == "s" and prefix in ("Ki", "Mi", "Gi", "Ti"):
                    continue  # binary prefixes are for bytes only
                return _PREFIXES[prefix], rest
    return None


def conversion_factor(from_unit: str, to_unit: str) -> float:
    """Multiply a value in ``from_unit`` by this to express it in ``to_unit`` (same base, other prefix)."""
    if from_unit == to_unit:
        return 1.0
    a, b = split_unit(from_unit), split_unit(to_unit)
    if a is None or b is None or a[1] != b[1]:
        raise UnitError(f"cannot show a value in {from_unit!r} as {to_unit!r}: the units differ by more than a prefix")
    return a[0] / b[0]


def percent(fraction: float | None, spec: str = ".1f") -> str:
    """A fraction of 1 as percent text: ``percent(0.1234)`` is ``12.3%``, ``percent(0.042, "+.3g")`` is ``+4.2%``;
    ``n/a`` when undefined."""
    if fraction is None:
        return "n/a"
    return f"{fraction * 100:{spec}}%"
