"""What the step-scaling fit reads: the samples of a step-scaling evidence document (the rows of one mode and
one batch, the points flagged unstable) and the ``--terms`` and ``--tokens`` text of the command line.

``render.derive.fit`` fits what these return; ``width_key`` names a width the way both show it.
"""

from __future__ import annotations

import math
from typing import Any

from measure.errors import ProbebookError
from render.derive.fit_numerics import TERMS
from render.derive.lossmem import unstable

# -- parsing -------------------------------------------------------------------------


def parse_terms(text: str) -> str | tuple[str, ...]:
    """``"auto"`` or terms joined by ``+`` (``"a+b"``) -> ``"auto"`` or a canonical tuple."""
    raw = text.strip().lower()
    if raw == "auto":
        return "auto"
    parts = [p.strip() for p in raw.split("+")]
    bad = [p for p in parts if p not in TERMS]
    if bad or not parts:
        raise ProbebookError(
            f"--terms {text!r}: unknown term {bad[0] if bad else text!r}; give auto or "
            "terms from c, a, b joined by + (e.g. c+a, a+b, c+a+b)"
        )
    if len(set(parts)) != len(parts):
        raise ProbebookError(f"--terms {text!r}: a term is repeated")
    return tuple(t for t in TERMS if t in parts)


def parse_token_range(text: str) -> tuple[float | None, float | None]:
    """``"LO:HI"``, ``"LO:"`` or ``":HI"`` (tokens, inclusive) -> ``(lo, hi)`` with None for open."""
    if text.count(":") != 1:
        raise ProbebookError(f"--tokens {text!r}: give a range LO:HI, LO: or :HI (e.g. 512:4096)")
    bounds: list[float | None] = []
    for part in text.split(":"):
        part = part.strip()
        if not part:
            bounds.append(None)
            continue
        try:
            value = float(part)
        except ValueError:
            raise ProbebookError(f"--tokens {text!r}: {part!r} is not a number") from None
        if not math.isfinite(value) or value < 0:
            raise ProbebookError(f"--tokens {text!r}: bounds must be non-negative numbers")
        bounds.append(value)
    lo, hi = bounds
    if lo is not None and hi is not None and lo > hi:
        raise ProbebookError(f"--tokens {text!r}: the lower bound is above the upper bound")
    return lo, hi


def width_key(width: float) -> str:
    """The text key for a width in ``quadratic_share``: ``4096`` not ``4096.0``."""
    w = float(width)
    return str(int(w)) if w.is_integer() else repr(w)


# -- evidence ------------------------------------------------------------------------


def _rows(doc: dict[str, Any], mode: str | None) -> tuple[list[dict[str, Any]], float]:
    samples = (doc.get("data") or {}).get("samples")
    if not isinstance(samples, list) or not samples:
        raise ProbebookError(f"{doc.get('probe', 'evidence')} evidence has no data.samples to fit")
    modes = sorted({str(r["mode"]) for r in samples if r.get("mode") is not None})
    if mode is None and modes:
        mode = "fixed_batch"  # the S² fit needs the batch held fixed while S grows
    rows = [r for r in samples if mode is None or r.get("mode") == mode]
    if not rows:
        raise ProbebookError(f"no samples with mode {mode!r} (modes present: {', '.join(modes) or 'none'})")
    batches = sorted({float(r.get("batch") or 1) for r in rows})
    if len(batches) > 1:
        shown = ", ".join(width_key(b) for b in batches)
        raise ProbebookError(f"samples have batch {shown}; the fit needs a single batch value (choose a mode)")
    return rows, batches[0]


def step_samples(doc: dict[str, Any], mode: str | None = None) -> list[tuple[float, float]]:
    """``(S, step_s)`` pairs of a step-scaling evidence document, one per sample.

    Where a ``mode`` column exists, rows of ``mode`` (default ``fixed_batch``) only; samples
    without a time (failed windows, ``step_s`` null) are skipped.
    """
    rows, _ = _rows(doc, mode)
    return [
        (float(r["tokens"]), float(r["step_s"]))
        for r in rows
        if r.get("tokens") is not None and r.get("step_s") is not None
    ]


def step_batch(doc: dict[str, Any], mode: str | None = None) -> float:
    """The single batch (sequences per step) of the rows ``step_samples`` returns."""
    return _rows(doc, mode)[1]


def unstable_tokens(doc: dict[str, Any], mode: str | None = None) -> set[float]:
    """Sequence lengths (tokens) of the rows ``step_samples`` returns whose point was flagged unstable.

    The probe flags a point (its windows' CV over 5%) in ``data.points``; an imported row may carry
    its own ``unstable`` or ``cv`` column (``render.derive.lossmem.unstable``).
    """
    rows, batch = _rows(doc, mode)
    modes = {r.get("mode") for r in rows}
    flagged = {float(r["tokens"]) for r in rows if r.get("tokens") is not None and unstable(r)}
    for point in (doc.get("data") or {}).get("points") or []:
        if (
            isinstance(point, dict)
            and point.get("tokens") is not None
            and point.get("mode") in modes
            and float(point.get("batch") or 1) == batch
            and unstable(point)
        ):
            flagged.add(float(point["tokens"]))
    return flagged
