"""Derived numbers of the correctness probes: ``agreement``, ``hvp`` and ``stream`` evidence (pure, no torch).

* agreement: an arm's relative L2 error per quantity (loss, logits, every gradient as one vector)
  with the noise floor and the stated limit it was judged against, as the probe recorded them,
  and the error in multiples of the noise floor.
* hvp: one candidate's warm and first-call time, peaks, H·v tokens/s and relative error against
  the float64 reference; the speed-up of one candidate over another is the ratio of warm medians.
* stream: one arm's median step, tokens/s, stall share and per-layer copy times; the loads, stores and bytes it
  moves per step, counted from its visits, and their rate over the step.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from measure.errors import ProbebookError

QUANTITIES = ("loss", "logits", "grads")


def times_noise(rel_l2: float | None, noise_floor: float | None) -> float | None:
    """An error in multiples of the noise floor (a ratio); None when the floor is zero or either is unknown."""
    if rel_l2 is None or not noise_floor:
        return None
    return rel_l2 / noise_floor


def speedup(slow_s: float, fast_s: float) -> float:
    """How many times faster ``fast`` is: ``slow_s / fast_s`` (seconds over seconds, a ratio)."""
    if not fast_s > 0:
        raise ProbebookError(f"speed-up over a non-positive time {fast_s!r}")
    return slow_s / fast_s


def first_call_extra(first_call_s: float, warm_s: float) -> float:
    """Seconds the first call took beyond a warm one: compilation, autotuning and allocator growth (seconds)."""
    return first_call_s - warm_s


def agreement_arm(data: dict[str, Any], arm: str) -> dict[str, Any]:
    """An agreement arm's recorded figures: ``<q>_rel_l2``, ``<q>_noise``, ``<q>_limit``, ``<q>_times_noise``
    for q in loss, logits, grads; ``grads_cosine``, ``grads_sign``, ``grads_max_abs``; ``passed``, ``floor``."""
    arms = {a.get("arm"): a for a in data.get("arms") or []}
    if arm not in arms:
        raise ProbebookError(f"no arm {arm!r} in the agreement evidence (arms: {', '.join(map(str, arms))})")
    info = arms[arm]
    if info.get("status") != "ok":
        raise ProbebookError(f"agreement arm {arm!r} did not run: {info.get('status')}: {info.get('error')}")
    rows = {r["quantity"]: r for r in data.get("samples") or [] if r.get("arm") == arm}
    out: dict[str, Any] = {"passed": 1 if info.get("passed") else 0, "floor": info.get("floor")}
    for q in QUANTITIES:
        r = rows.get(q) or {}
        out[f"{q}_rel_l2"] = r.get("rel_l2")
        out[f"{q}_noise"] = r.get("noise_floor")
        out[f"{q}_limit"] = r.get("limit")
        out[f"{q}_times_noise"] = times_noise(r.get("rel_l2"), r.get("noise_floor"))
    g = rows.get("grads") or {}
    out.update(
        {
            "grads_cosine": g.get("cosine"),
            "grads_sign": g.get("sign_agreement"),
            "grads_max_abs": g.get("max_abs_error"),
        }
    )
    return out


@dataclass(frozen=True)
class Candidate:
    """Which H·v candidate: method, eager or compiled, dtype, batch."""

    method: str
    mode: str
    dtype: str
    batch: int

    def __str__(self) -> str:
        return f"{self.method}, {self.mode}, {self.dtype}, batch {self.batch}"


def hvp_candidate(data: dict[str, Any], which: Candidate) -> dict[str, Any]:
    """One candidate's recorded figures: warm and first-call seconds, peaks, ``tok_s``, ``rel_l2_vs_float64``."""
    for c in data.get("candidates") or []:
        if (c.get("method"), c.get("mode"), c.get("dtype"), c.get("batch")) == (
            which.method,
            which.mode,
            which.dtype,
            which.batch,
        ):
            if c.get("status") != "ok":
                raise ProbebookError(f"hvp candidate {which} failed: {c.get('status')}: {c.get('error')}")
            return {
                **c,
                "first_call_extra_s": first_call_extra(c["first_call_s"], c["warm_median_s"]),
                "reference_vhv_nats": reference_vhv(data, which.batch),
                "within_tolerance": within_tolerance(c.get("verdict")),
            }
    raise ProbebookError(f"no hvp candidate {which} in the evidence")


EPOCH_SPREADS = {
    "vhv": "vhv_nats",
    "error": "rel_l2_vs_float64",
    "error_fp32": "rel_l2_vs_fp32",
    "vhv_error": "vhv_rel_error",
}
"""An hvp epoch's spreads by the name a page reads them under (``<name>_mean`` ...), and the row field of each."""
EPOCH_SHARES = {"agree": "verdict_agrees_share", "within": "within_tolerance_share", "sign": "sign_agrees_share"}
"""An hvp epoch's shares of batches by the name a page reads them under."""


def hvp_epoch(data: dict[str, Any], which: Candidate) -> dict[str, Any]:
    """One candidate's epoch statistics (hvp v4, ``--epoch-batches N``), flat: ``batches``, ``basis``, then for each
    of ``EPOCH_SPREADS`` ``<name>_mean _sd _min _max`` and each of ``EPOCH_SHARES``, as the probe recorded them
    (``measure.curvature.epoch_statistics``: across the run's data batches, not sessions). Refused, naming why, for
    a candidate measured on one batch (or by an hvp before version 4)."""
    cand = hvp_candidate(data, which)
    epoch = cand.get("epoch")
    if not isinstance(epoch, dict):
        why = cand.get("epoch_error") or "it was measured on one batch (hvp v4's --epoch-batches N, N > 1, adds them)"
        raise ProbebookError(f"hvp candidate {which} has no epoch statistics: {why}")
    out: dict[str, Any] = {"batches": epoch.get("batches"), "basis": epoch.get("basis")}
    for name, field in EPOCH_SPREADS.items():
        spread = epoch.get(field) or {}
        out.update({f"{name}_{stat}": spread.get(stat) for stat in ("mean", "sd", "min", "max")})
    out.update({name: epoch.get(field) for name, field in EPOCH_SHARES.items()})
    return out


def reference_vhv(data: dict[str, Any], batch: int) -> float | None:
    """vᵀHv (nats) of the fp32 double-backward reference at ``batch``; None in evidence without references (hvp v1)."""
    for r in data.get("references") or []:
        if r.get("batch") == batch:
            value = (r.get("fp32") or {}).get("vhv_nats")
            return float(value) if isinstance(value, (int, float)) else None
    return None


def within_tolerance(verdict: Any) -> int | None:
    """1 when the probe's verdict is ``within tolerance``, 0 when it ``fails: ...``; None when there is none (hvp v1)
    or it is ``undefined`` (a zero reference)."""
    if verdict is None or (isinstance(verdict, str) and verdict.startswith("undefined")):
        return None
    if verdict == "within tolerance":
        return 1
    if isinstance(verdict, str) and verdict.startswith("fails"):
        return 0
    raise ProbebookError(f"unknown hvp verdict {verdict!r}")


def hvp_selected(data: dict[str, Any], dtype: str) -> Candidate:
    """The candidate the probe selected for ``dtype`` (fastest among ok ones within the memory limit)."""
    best = ((data.get("selection") or {}).get("best") or {}).get(dtype)
    if not best:
        raise ProbebookError(f"the hvp evidence selected no candidate for {dtype}")
    return Candidate(best["method"], best["mode"], best["dtype"], int(best["batch"]))


def stream_arm(data: dict[str, Any], arm: str) -> dict[str, Any]:
    """A stream arm's summary (``median_step_s``, ``tok_s``, ``stall_s``, ``stall_share``, ``layer_copy_s``, ...)."""
    for a in data.get("arms") or []:
        if a.get("arm") == arm:
            found: dict[str, Any] = a
            return found
    names = ", ".join(str(a.get("arm")) for a in data.get("arms") or [])
    raise ProbebookError(f"no arm {arm!r} in the stream evidence (arms: {names})")


def stream_step_windows(rows: list[dict[str, Any]], arm: str) -> dict[str, list[float]]:
    """The windows behind a stream arm's event figures, from its ``visit`` rows (one per layer visit of each
    observed step, seconds): ``stall``, each observed step's summed stall; ``layer_copy`` and ``layer_grad_copy``,
    every visit's copy time that was recorded. The probe's figures are their medians (``measure.probes.stream``)."""
    visits = [r for r in rows if isinstance(r, dict) and r.get("kind") == "visit" and r.get("arm") == arm]
    stalls: dict[Any, float] = {}
    for r in visits:
        if isinstance(r.get("stall_s"), (int, float)):
            stalls[r.get("step")] = stalls.get(r.get("step"), 0.0) + float(r["stall_s"])
    return {
        "stall": list(stalls.values()),
        "layer_copy": [float(r["copy_s"]) for r in visits if isinstance(r.get("copy_s"), (int, float))],
        "layer_grad_copy": [float(r["grad_copy_s"]) for r in visits if isinstance(r.get("grad_copy_s"), (int, float))],
    }


def stream_moved(rows: list[dict[str, Any]], arm: str, block_bytes: Any) -> dict[str, Any] | None:
    """What a stream arm moved each step, counted from its ``visit`` rows: ``loads_per_step`` (block weights copied
    to the device: visits with a timed copy), ``stores_per_step`` (block gradients copied back: visits with a timed
    gradient copy) and ``bytes_per_step``, both ways, each copy one block's flat fp32 buffer of ``block_bytes``.
    Medians over the observed steps (the schedule makes the same copies every step); None for an arm with no
    visit rows (``resident``); no bytes where ``block_bytes`` is not a whole number >= 1."""
    steps: dict[Any, list[int]] = {}
    for r in rows:
        if isinstance(r, dict) and r.get("kind") == "visit" and r.get("arm") == arm:
            counts = steps.setdefault(r.get("step"), [0, 0])
            counts[0] += r.get("copy_s") is not None
            counts[1] += r.get("grad_copy_s") is not None
    if not steps:
        return None
    loads = statistics.median_low(c[0] for c in steps.values())
    stores = statistics.median_low(c[1] for c in steps.values())
    known = not isinstance(block_bytes, bool) and isinstance(block_bytes, int) and block_bytes >= 1
    return {
        "loads_per_step": loads,
        "stores_per_step": stores,
        "bytes_per_step": (loads + stores) * block_bytes if known else None,  # None: no block size recorded
    }


def bytes_per_s(bytes_per_step: int, step_s: float) -> float:
    """The rate a streamed step moves its bytes at over the whole step (bytes/s): what the copies demand of the
    host link when they are hidden behind compute, and a lower bound of the link's rate when they are not."""
    if step_s <= 0:
        raise ProbebookError(f"a stream step must take a positive time, got {step_s!r} s")
    return bytes_per_step / step_s
