"""Numerical agreement between two runs of a training step: the comparison library of ``agreement``.

``agreement``, ``hvp``, ``stream`` and ``loss-memory`` all compare a variant's tensors against a
reference's through these functions, so one definition of "the same step" holds everywhere.

* Per pair of tensors (reference ``a``, other ``b``, both read in float64): the largest absolute
  difference, the relative L2 error ``||a - b|| / ||a||``, the cosine similarity
  ``a·b / (||a|| ||b||)`` and the sign agreement (the fraction of elements whose ``sign`` is equal).
* Several tensors (every gradient of a model) combine through their running sums (``Sums``), so the
  whole gradient is compared as one vector without ever concatenating it on the device.
* A verdict compares a relative L2 error against a stated limit, ``max(factor x noise floor,
  floor)``: the noise floor is the reference compared with itself run twice (non-deterministic
  kernels included); ``floor`` is the error the arm's change of arithmetic is allowed on its own.

The pure arithmetic (``metrics``, ``limit``, ``verdict``, ``relative_error``) imports nothing;
``sums_of``, ``compare_named`` and ``same_values`` import torch when called.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

from measure.errors import ProbebookError

# Limits of the relative L2 error an arm may show on top of the noise floor; stated here, recorded per arm.
# bf16 keeps 8 significant bits: unit roundoff 2^-8 ~= 3.9e-3 (IEEE 754 binary16/bfloat16 layouts);
# 1% is ~2.5 unit roundoffs, the bound issue 10 names for bf16 autocast against fp32.
BF16_FLOOR = 1e-2
# fp32 unit roundoff is 2^-24 ~= 6e-8; a changed summation order (fusion, chunking, recompute) over
# reductions of 1e4-1e5 terms moves a result by ~sqrt(n)·u to n·u (Higham, "Accuracy and Stability of
# Numerical Algorithms", 2nd ed., section 4.2): 1e-4 leaves a wide margin above that and none for a bug.
FP32_FLOOR = 1e-4
NOISE_FACTOR = 5.0  # issue 10's example: relative L2 <= 5x the noise floor


@dataclass
class Sums:
    """Running float64 sums over element pairs (reference a, other b); merge by adding field by field."""

    elements: int = 0
    """How many element pairs."""
    sq_diff: float = 0.0
    """sum (a - b)^2."""
    sq_ref: float = 0.0
    """sum a^2."""
    sq_other: float = 0.0
    """sum b^2."""
    dot: float = 0.0
    """sum a·b."""
    max_abs: float = 0.0
    """max |a - b|."""
    same_sign: int = 0
    """How many pairs have sign(a) == sign(b) (zero is its own sign)."""
    nonfinite: int = 0
    """How many pairs hold a NaN or an infinity in either tensor."""

    def merge(self, other: Sums) -> Sums:
        out = Sums()
        for f in fields(Sums):
            a, b = getattr(self, f.name), getattr(other, f.name)
            setattr(out, f.name, max(a, b) if f.name == "max_abs" else a + b)
        return out


def metrics(s: Sums) -> dict[str, Any]:
    """Max absolute error, relative L2 error, cosine similarity and sign agreement from running sums.

    ``rel_l2`` = sqrt(sq_diff / sq_ref) (a fraction): 0.0 when both are zero, None when only the
    reference is zero (undefined). ``cosine`` is None when either norm is zero; ``sign_agreement`` is
    a fraction of elements. Any non-finite element makes every metric None and ``finite`` False.
    """
    if s.nonfinite:
        return {
            "elements": s.elements,
            "finite": False,
            "max_abs_error": None,
            "rel_l2": None,
            "cosine": None,
            "sign_agreement": None,
        }
    if s.sq_ref > 0:
        rel: float | None = math.sqrt(s.sq_diff / s.sq_ref)
    else:
        rel = 0.0 if s.sq_diff == 0 else None
    norms = math.sqrt(s.sq_ref) * math.sqrt(s.sq_other)
    return {
        "elements": s.elements,
        "finite": True,
        "max_abs_error": s.max_abs,
        "rel_l2": rel,
        "cosine": s.dot / norms if norms > 0 else None,
        "sign_agreement": s.same_sign / s.elements if s.elements else None,
    }


def relative_error(reference: float, other: float) -> float:
    """|reference - other| / |reference| (a fraction) of two scalars; 0.0 when both are zero."""
    if reference == 0:
        if other == 0:
            return 0.0
        raise ProbebookError("relative error against a zero reference is undefined")
    return abs(reference - other) / abs(reference)


def limit(noise_floor: float | None, floor: float, factor: float = NOISE_FACTOR) -> float:
    """The largest relative L2 error an arm may show: max(factor x noise floor, floor) (fractions).

    A missing noise floor (the quantity does not exist in the reference) counts as 0.
    """
    return max(factor * (noise_floor or 0.0), floor)


def verdict(rel_l2: float | None, allowed: float) -> bool:
    """True when the relative L2 error is known (finite) and at most the allowed limit."""
    return rel_l2 is not None and math.isfinite(rel_l2) and rel_l2 <= allowed


# --- torch side ----------------------------------------------------------------------------------


def sums_of(a: Any, b: Any) -> Sums:
    """The running sums of one tensor pair, computed in float64 on the reference's device."""
    import torch

    if a.shape != b.shape:
        raise ProbebookError(f"cannot compare tensors of shapes {tuple(a.shape)} and {tuple(b.shape)}")
    x = a.detach().to(torch.float64).reshape(-1)
    y = b.detach().to(device=x.device, dtype=torch.float64).reshape(-1)
    bad = int((~torch.isfinite(x) | ~torch.isfinite(y)).sum())
    if bad:
        return Sums(elements=x.numel(), nonfinite=bad)
    d = x - y
    return Sums(
        elements=x.numel(),
        sq_diff=float(d.square().sum()),
        sq_ref=float(x.square().sum()),
        sq_other=float(y.square().sum()),
        dot=float((x * y).sum()),
        max_abs=float(d.abs().max()) if x.numel() else 0.0,
        same_sign=int((torch.sign(x) == torch.sign(y)).sum()),
    )


def compare(a: Any, b: Any) -> dict[str, Any]:
    """The four metrics of one tensor pair (reference ``a``)."""
    return metrics(sums_of(a, b))


def compare_named(ref: dict[str, Any], other: dict[str, Any]) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Per-name metrics of two same-keyed tensor dicts (e.g. every gradient), and the metrics of all as one vector."""
    missing = sorted(set(ref) ^ set(other))
    if missing:
        raise ProbebookError(f"cannot compare: tensors present on one side only: {', '.join(missing[:5])}")
    per: dict[str, dict[str, Any]] = {}
    total = Sums()
    for name in ref:
        s = sums_of(ref[name], other[name])
        per[name] = metrics(s)
        total = total.merge(s)
    return per, metrics(total)


def same_values(a: Any, b: Any) -> bool:
    """Whether two batches (tensors, or tuples, lists or dicts of them) hold the same values (torch when called)."""
    import torch

    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.shape == b.shape and bool(torch.equal(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_values(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(same_values(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def worst(per: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """The entry with the largest relative L2 error (a non-finite or undefined one counts as largest)."""
    if not per:
        return None

    def key(item: tuple[str, dict[str, Any]]) -> float:
        rel = item[1]["rel_l2"]
        return math.inf if rel is None else rel

    name, m = max(per.items(), key=key)
    return {"name": name, "rel_l2": m["rel_l2"], "max_abs_error": m["max_abs_error"]}


def compare_outputs(ref: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    """Compare two step outputs ``{loss, logits (or None), grads: {name: tensor}}``.

    Returns ``{loss, logits, grads, grad_worst}``: metrics of the loss, of the logits (None when
    either side has none), of every gradient as one vector, and the single worst gradient.
    """
    per, total = compare_named(ref["grads"], other["grads"])
    logits = None
    if ref.get("logits") is not None and other.get("logits") is not None:
        logits = compare(ref["logits"], other["logits"])
    return {"loss": compare(ref["loss"], other["loss"]), "logits": logits, "grads": total, "grad_worst": worst(per)}


QUANTITIES = ("loss", "logits", "grads")


def judge(result: dict[str, Any], noise: dict[str, Any], floor: float, factor: float = NOISE_FACTOR) -> dict[str, Any]:
    """Verdict of one arm: each quantity's relative L2 against max(factor x its noise floor, floor).

    ``result`` and ``noise`` are ``compare_outputs`` results (arm vs reference; reference vs itself).
    Returns ``{passed, checks: [{quantity, rel_l2, noise_floor, limit, passed}], tolerance}``.
    """
    checks = []
    for q in QUANTITIES:
        if result.get(q) is None:
            continue
        floor_q = noise[q]["rel_l2"] if noise.get(q) else None
        allowed = limit(floor_q, floor, factor)
        rel = result[q]["rel_l2"]
        checks.append(
            {"quantity": q, "rel_l2": rel, "noise_floor": floor_q, "limit": allowed, "passed": verdict(rel, allowed)}
        )
    return {
        "passed": bool(checks) and all(c["passed"] for c in checks),
        "checks": checks,
        "tolerance": {"rule": "rel_l2 <= max(factor x noise floor, floor)", "factor": factor, "floor": floor},
    }


def step_outputs(model: Any, forward: Any, batch: Any, keep_logits: bool = True) -> dict[str, Any]:
    """Run ``forward(batch) -> (loss, logits or None)`` and backward once; return loss, logits and every gradient.

    Gradients start from None (``zero_grad(set_to_none)``), so nothing from an earlier step leaks in;
    a parameter that got no gradient is compared as zeros.
    """
    import torch

    model.zero_grad(set_to_none=True)
    loss, logits = forward(batch)
    loss.backward()
    grads = {}
    for name, p in model.named_parameters():
        if p.requires_grad:
            grads[name] = p.grad.detach().clone() if p.grad is not None else torch.zeros_like(p)
    model.zero_grad(set_to_none=True)
    return {
        "loss": loss.detach().float().clone(),
        "logits": logits.detach().clone() if keep_logits and logits is not None else None,
        "grads": grads,
    }
