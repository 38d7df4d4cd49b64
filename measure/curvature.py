"""Curvature along a direction and how a low-precision H·v errs against a reference: the ``hvp`` probe's statistics.

For the loss L(θ) (nats per token, the mean cross-entropy), a direction v and the Hessian H:

* the quadratic form ``vᵀHv`` (nats, for v in the parameters' own units) and its sign: positive is
  upward curvature along v, negative is a saddle or concave direction;
* the Rayleigh quotient ``vᵀHv / vᵀv`` (nats per squared parameter unit), the curvature along v
  independent of the length of v.

A candidate's H·v ``b`` against the reference's ``a`` (fp32 or float64, same weights, batch and v)
splits its error into direction and curvature. With the norm ratio ``r = ||b|| / ||a||`` and the
cosine ``c = a·b / (||a|| ||b||)``, the squared relative L2 error is exactly

    ||b - a||² / ||a||² = r² - 2rc + 1 = (r - 1)² + 2r(1 - c)

(expand ``||b - a||² = ||b||² - 2a·b + ||a||²`` and divide by ``||a||²``): ``(r - 1)²`` is the part a
right direction with a wrong length would show (curvature), ``2r(1 - c)`` the part a right length in
a wrong direction would show (direction). Their shares sum to 1.

The verdict compares the relative L2 error of H·v and the relative error of ``vᵀHv`` with one stated
tolerance, and requires the sign of ``vᵀHv`` to agree. Pure arithmetic on float sums; imports nothing.

Over an epoch (``hvp --epoch-batches N``): the same comparison on N distinct data batches, same weights and v;
``epoch_statistics`` summarises a candidate's rows (one per batch) by named fields. Their spread is across
batches of one run, not across sessions: it says how much the curvature and the error move with the data.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

# A stated choice, recorded beside every verdict (``--tolerance`` changes it): curvature measured
# within 5% keeps a sharpness or learning-rate analysis's comparisons (which move by tens of percent
# over training) readable. bf16's unit roundoff is 2^-8 ~= 3.9e-3, so 5% is ~13 roundoffs: room for
# the forward, the backward and the tangent pass each rounding in bf16, and none for a broken H·v.
TOLERANCE = 0.05


def quadratic_form(v_dot_hv: float, v_sq: float) -> dict[str, Any]:
    """``vᵀHv`` (nats), its sign (+1, 0, -1) and the Rayleigh quotient ``vᵀHv / vᵀv`` (nats per squared unit).

    ``v_dot_hv`` is Σ v·(Hv) over every parameter, ``v_sq`` is Σ v² (both in float64 by the caller).
    """
    sign = (v_dot_hv > 0) - (v_dot_hv < 0)
    rayleigh = v_dot_hv / v_sq if v_sq > 0 else None
    return {"vhv_nats": v_dot_hv, "vhv_sign": sign, "rayleigh_nats": rayleigh}


def error_split(ref_sq: float, other_sq: float, dot: float) -> dict[str, Any]:
    """How H·v ``b`` errs against the reference ``a``, from Σa², Σb² and Σa·b (all dimensionless ratios).

    Returns the norm ratio ``r``, the cosine ``c``, the angle in degrees, the relative L2 error
    ``sqrt((r - 1)² + 2r(1 - c))`` and the shares of its square due to curvature ``(r - 1)²`` and to
    direction ``2r(1 - c)``; None where the reference or the other is all zeros.
    """
    if ref_sq <= 0 or other_sq <= 0:
        return dict.fromkeys(("norm_ratio", "cosine", "angle_deg", "rel_l2", "curvature_share", "direction_share"))
    r = math.sqrt(other_sq / ref_sq)
    c = max(-1.0, min(1.0, dot / math.sqrt(ref_sq * other_sq)))  # rounding can leave |c| a hair above 1
    curvature = (r - 1.0) ** 2
    direction = 2.0 * r * (1.0 - c)
    total = curvature + direction
    return {
        "norm_ratio": r,
        "cosine": c,
        "angle_deg": math.degrees(math.acos(c)),
        "rel_l2": math.sqrt(total),
        "curvature_share": curvature / total if total > 0 else None,
        "direction_share": direction / total if total > 0 else None,
    }


def quadratic_error(reference_vhv: float, other_vhv: float) -> float | None:
    """Relative error of ``vᵀHv``: |other - reference| / |reference| (None when the reference is 0)."""
    if reference_vhv == 0:
        return None
    return abs(other_vhv - reference_vhv) / abs(reference_vhv)


def verdict(split: dict[str, Any], reference_vhv: float, other_vhv: float, tolerance: float) -> dict[str, Any]:
    """``within tolerance`` or why not: the sign of vᵀHv, or the larger part (direction or curvature) of the error.

    Passes when the signs of ``vᵀHv`` agree, the relative L2 error of H·v is at most ``tolerance``
    and so is the relative error of ``vᵀHv``.
    """
    quad = quadratic_error(reference_vhv, other_vhv)
    same_sign = (reference_vhv > 0) == (other_vhv > 0) and (reference_vhv < 0) == (other_vhv < 0)
    if split["rel_l2"] is None or quad is None:
        result = "undefined: a zero reference"
    elif not same_sign:
        result = "fails: the sign of vᵀHv"
    elif split["rel_l2"] <= tolerance and quad <= tolerance:
        result = "within tolerance"
    elif split["rel_l2"] > tolerance:
        part = "direction" if split["direction_share"] >= split["curvature_share"] else "curvature"
        result = f"fails: {part}"
    else:
        result = "fails: curvature (vᵀHv)"
    return {"verdict": result, "tolerance": tolerance, "vhv_rel_error": quad, "vhv_sign_agrees": same_sign}


EPOCH_ROW = (
    "vhv_nats",
    "vhv_sign",
    "rayleigh_nats",
    "reference_vhv_nats",
    "rel_l2_vs_float64",
    "rel_l2_vs_fp32",
    "vhv_rel_error",
    "vhv_sign_agrees",
    "verdict",
)
"""A ``data.epoch`` row's figures for one candidate and batch (beside the candidate's key and ``epoch_batch``)."""
EPOCH_FIELDS = ("vhv_nats", "rel_l2_vs_float64", "rel_l2_vs_fp32", "vhv_rel_error")
"""A batch row's figures that ``epoch_statistics`` summarises (each as ``spread``)."""
EPOCH_BASIS = "across the epoch's data batches of one run (same weights and v), not across sessions"
"""What an epoch statistic's spread is over, recorded beside it."""


def spread(values: list[float]) -> dict[str, Any]:
    """``n``, ``mean``, ``sd`` (the sample standard deviation, n - 1; None below 2 values), ``min`` and ``max`` of
    ``values``, in their unit; all None but ``n`` for no values."""
    if not values:
        return {"n": 0, "mean": None, "sd": None, "min": None, "max": None}
    return {
        "n": len(values),
        "mean": statistics.fmean(values),
        "sd": statistics.stdev(values) if len(values) > 1 else None,
        "min": min(values),
        "max": max(values),
    }


def epoch_statistics(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """A candidate's epoch summary from its batch rows (the first the timed batch): ``spread`` of each of
    ``EPOCH_FIELDS`` over the rows that have it (a number), and the shares of the batches whose ``verdict`` is the
    first batch's (``verdict_agrees_share``), is ``within tolerance`` and whose vᵀHv sign agrees with fp32's."""
    if not rows:
        raise ValueError("an epoch has at least one batch row")

    def share(hit: int) -> float:
        return hit / len(rows)

    def numbers(field: str) -> list[float]:
        return [
            float(r[field]) for r in rows if isinstance(r.get(field), (int, float)) and not isinstance(r[field], bool)
        ]

    first = rows[0].get("verdict")
    return {
        "batches": len(rows),
        "basis": EPOCH_BASIS,
        **{field: spread(numbers(field)) for field in EPOCH_FIELDS},
        "verdict_agrees_share": share(sum(r.get("verdict") == first for r in rows)),
        "within_tolerance_share": share(sum(r.get("verdict") == "within tolerance" for r in rows)),
        "sign_agrees_share": share(sum(r.get("vhv_sign_agrees") is True for r in rows)),
    }
