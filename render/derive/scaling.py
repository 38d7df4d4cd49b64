"""Data-parallel scaling from ``ddp`` evidence: efficiency, communication share, bandwidths, a projection.

Pure functions of literal numbers (seconds, bytes, counts), and ``summarize`` which reads the
probe's rows (medians of its windows and steps) and applies them. Bandwidths follow nccl-tests'
definitions (NVIDIA nccl-tests, doc/PERFORMANCE.md, "all_reduce"): algorithm bandwidth is
``bytes / time``; bus bandwidth is ``algbw · 2(n−1)/n``, the rate each link carries in a ring
all-reduce, which is comparable across rank counts and with the hardware's link peak.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

import numpy as np

from measure.errors import ProbebookError


def ring_factor(n: int) -> float:
    """``2(n−1)/n``: bytes each rank sends (and receives) per byte reduced in a ring all-reduce (dimensionless)."""
    if n < 1:
        raise ProbebookError(f"a rank count must be >= 1, got {n}")
    return 2.0 * (n - 1) / n


def scaling_efficiency(step_1_s: float, step_n_s: float) -> float:
    """Per-GPU tokens/s at N GPUs over 1 GPU, same per-rank batch: ``step_1_s / step_n_s`` (fraction)."""
    return step_1_s / step_n_s


def all_gpus_tok_s(per_gpu_tok_s: float, gpus: int) -> float:
    """Tokens/s of ``gpus`` data-parallel ranks together: ``gpus × per_gpu_tok_s`` (each rank steps through its
    own batch of ``tokens_per_rank`` in one step of the whole job, so the job does N times one rank's tokens)."""
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
        raise ProbebookError(f"throughput of all GPUs needs a whole number of GPUs >= 1, got {gpus!r}")
    return gpus * per_gpu_tok_s


def paired_efficiency(local_s: list[float], ddp_s: list[float]) -> float:
    """Median over interleaved rounds of ``local_s[i] / ddp_s[i]`` (fraction): the no-communication step
    over the DDP step, each pair measured back to back, so slow drift cancels within a pair."""
    if not local_s or len(local_s) != len(ddp_s):
        raise ProbebookError(f"paired rounds need as many no_sync as DDP times, got {len(local_s)} and {len(ddp_s)}")
    return float(statistics.median(a / b for a, b in zip(local_s, ddp_s, strict=True)))


def algorithm_bandwidth_b_s(nbytes: float, time_s: float) -> float:
    """Algorithm bandwidth in bytes/s of an all-reduce of ``nbytes`` taking ``time_s`` (nccl-tests ``algbw``)."""
    return nbytes / time_s


def bus_bandwidth_b_s(nbytes: float, time_s: float, n: int) -> float:
    """Bus bandwidth in bytes/s (nccl-tests ``busbw``): ``algbw · 2(n−1)/n``; 0 on one rank (nothing moves)."""
    return algorithm_bandwidth_b_s(nbytes, time_s) * ring_factor(n)


def ring_allreduce_s(nbytes: float, n: int, bus_b_s: float) -> float:
    """Seconds for a ring all-reduce of ``nbytes`` over ``n`` ranks at bus bandwidth ``bus_b_s`` bytes/s."""
    return nbytes * ring_factor(n) / bus_b_s


def share(part_s: float, whole_s: float) -> float:
    """``part_s / whole_s``: e.g. communication seconds per step over step seconds (fraction)."""
    return part_s / whole_s


def overlap_fraction(comm_s: float, exposed_s: float) -> float:
    """Fraction of the all-reduce time hidden behind backward: ``1 − exposed_s / comm_s``."""
    return 1.0 - exposed_s / comm_s


def unexplained_s(step_1_s: float, step_n_s: float, exposed_s: float) -> float:
    """Seconds of the N-GPU step beyond the 1-GPU step that exposed all-reduce time does not account for.

    ``step_n_s − step_1_s − exposed_s``: e.g. DDP's bucket copies, NCCL kernels taking SMs from
    backward while they overlap it, the hook path; negative when exposed time is over-counted.
    """
    return step_n_s - step_1_s - exposed_s


def projected_step_s(step_n_s: float, allreduce_n_s: float, n_measured: int, n_target: int) -> float:
    """PROJECTION of the step time in seconds at ``n_target`` ranks from the terms measured at ``n_measured``.

    Model (stated, not measured): the per-rank compute, DDP's overhead and the exposed all-reduce
    tail stay as measured in ``step_n_s`` (same per-rank batch); a ring all-reduce of the gradient
    moves ``ring_factor(n)`` bytes per byte, so at the bus bandwidth measured with the standalone
    all-reduce of the gradient (``allreduce_n_s`` on ``n_measured`` ranks) it takes
    ``c(n) = allreduce_n_s · ring_factor(n) / ring_factor(N)``; none of the added time is assumed
    hidden, so ``step(n) = step_n_s + c(n) − allreduce_n_s``. It holds only where the bus
    bandwidth at ``n`` equals the one measured (one NVLink domain); across nodes the bandwidth
    drops, so the projected efficiency is an upper bound there.
    """
    if n_measured < 2:
        raise ProbebookError("a projection needs communication measured on at least 2 ranks")
    return step_n_s + allreduce_n_s * ring_factor(n_target) / ring_factor(n_measured) - allreduce_n_s


@dataclass(frozen=True)
class ScalingSummary:
    """The medians of one ``ddp`` evidence document, and what is derived from them (None where N = 1)."""

    gpus: int
    tokens_per_rank: int
    step_1_s: float
    step_n_s: float | None
    tok_s_1: float
    tok_s_n: float | None
    """Tokens/s of one GPU among N (per GPU, like ``tok_s_1``)."""
    tok_s_all: float | None
    """Tokens/s of all N GPUs together: ``gpus × tok_s_n``."""
    efficiency: float | None
    paired_efficiency: float | None
    """No-communication step over DDP step, paired per interleaved round (probe version 2 and later)."""
    comm_s: float | None
    exposed_s: float | None
    instrumented_step_s: float | None
    comm_share: float | None
    exposed_share: float | None
    overlap: float | None
    other_s: float | None
    """``step_n − step_1 − exposed``: the slowdown under DDP that exposed all-reduce time does not explain."""
    other_share: float | None
    grad_bytes: int
    grad_allreduce_s: float | None
    grad_algbw_b_s: float | None
    grad_busbw_b_s: float | None
    sweep_busbw_b_s: dict[int, float]
    """Bus bandwidth (bytes/s) of the standalone sweep, keyed by bytes."""


def _median(rows: list[dict[str, Any]], field: str, what: str) -> float:
    values = [r[field] for r in rows if isinstance(r.get(field), (int, float))]
    if not values:
        raise ProbebookError(f"ddp evidence has no {field!r} values for {what}")
    return float(statistics.median(values))


def summarize(doc: dict[str, Any]) -> ScalingSummary:
    """Medians of the step, comm and all-reduce rows of ``ddp`` evidence, with every derived term."""
    rows = (doc.get("data") or {}).get("samples") or []
    gpus = int(doc["params"]["gpus"])
    tokens = int(doc["params"]["tokens_per_rank"])
    step_1 = _median([r for r in rows if r.get("phase") == "step" and r.get("gpus") == 1], "step_s", "1 GPU")
    out: dict[str, Any] = dict.fromkeys(ScalingSummary.__dataclass_fields__)
    out.update(
        gpus=gpus,
        tokens_per_rank=tokens,
        step_1_s=step_1,
        tok_s_1=tokens / step_1,
        grad_bytes=int(doc["data"]["grad_bytes"]),
        sweep_busbw_b_s={},
    )
    n_steps = [r for r in rows if r.get("phase") == "step" and r.get("gpus") == gpus and gpus > 1]
    if n_steps:
        step_n = _median(n_steps, "step_s", f"{gpus} GPUs")
        comm_rows = [r for r in rows if r.get("phase") == "comm" and r.get("gpus") == gpus]
        comm, exposed = _median(comm_rows, "comm_s", "comm"), _median(comm_rows, "exposed_s", "comm")
        out.update(
            step_n_s=step_n,
            tok_s_n=tokens / step_n,
            tok_s_all=all_gpus_tok_s(tokens / step_n, gpus),
            efficiency=scaling_efficiency(step_1, step_n),
            comm_s=comm,
            exposed_s=exposed,
            instrumented_step_s=_median(comm_rows, "step_s", "comm"),
            comm_share=share(comm, step_n),
            exposed_share=share(exposed, step_n),
            overlap=overlap_fraction(comm, exposed) if comm > 0 else None,
            other_s=unexplained_s(step_1, step_n, exposed),
            other_share=share(unexplained_s(step_1, step_n, exposed), step_n),
        )
        paired = [r for r in rows if r.get("phase") == "paired" and r.get("gpus") == gpus]
        if paired:
            by_arm = {
                arm: [r["step_s"] for r in sorted(paired, key=lambda r: r["round"]) if r["arm"] == arm]
                for arm in ("no_sync", "ddp")
            }
            out["paired_efficiency"] = paired_efficiency(by_arm["no_sync"], by_arm["ddp"])
        reduce_rows = [r for r in rows if r.get("phase") == "allreduce" and r.get("gpus") == gpus]
        for kind in ("gradient", "sweep"):
            for nbytes in sorted({r["bytes"] for r in reduce_rows if r["kind"] == kind}):
                t = _median([r for r in reduce_rows if r["kind"] == kind and r["bytes"] == nbytes], "time_s", kind)
                if kind == "gradient":
                    out.update(
                        grad_allreduce_s=t,
                        grad_algbw_b_s=algorithm_bandwidth_b_s(nbytes, t),
                        grad_busbw_b_s=bus_bandwidth_b_s(nbytes, t, gpus),
                    )
                else:
                    out["sweep_busbw_b_s"][int(nbytes)] = bus_bandwidth_b_s(nbytes, t, gpus)
    return ScalingSummary(**out)


def projected_efficiency(summary: ScalingSummary, n_target: int) -> float | None:
    """PROJECTION of the scaling efficiency at ``n_target`` GPUs (``projected_step_s``); None when N = 1."""
    if summary.step_n_s is None or summary.grad_allreduce_s is None:
        return None
    step = projected_step_s(summary.step_n_s, summary.grad_allreduce_s, summary.gpus, n_target)
    return scaling_efficiency(summary.step_1_s, step)


# -- 95% intervals (issue 23): every median's windows resampled, the derived terms replicate by replicate ---------


def replicates(doc: dict[str, Any], key: str) -> dict[str, Any]:
    """Bootstrap replicates (``render.derive.intervals.draws``) of each median ``summarize`` takes, by the name of
    the field it gives (``step_1_s``, ``step_n_s``, ``comm_s``, ``exposed_s``, ``instrumented_step_s``,
    ``grad_allreduce_s``, ``sweep:<bytes>``), and ``paired_efficiency``'s from its rounds' ratios. The fields of
    one set of rows (a comm window's comm, exposed and step times) share their resampling indices, seeded by
    ``key`` and the rows; different rows are independent samples. A median of fewer than ``MIN_SAMPLES`` windows
    has none."""
    from render.derive import intervals  # numpy loads only where a figure needs it

    rows = [r for r in (doc.get("data") or {}).get("samples") or [] if isinstance(r, dict)]
    gpus = int(doc["params"]["gpus"])

    def drawn(picked: list[dict[str, Any]], field: str, name: str) -> Any:
        values = [float(r[field]) for r in picked if isinstance(r.get(field), (int, float))]
        recipe = intervals.median_recipe(values, f"{key}|{name}") if len(values) == len(picked) else None
        return None if recipe is None else intervals.draws(recipe)

    def phase(name: str, n: int) -> list[dict[str, Any]]:
        return [r for r in rows if r.get("phase") == name and r.get("gpus") == n]

    out: dict[str, Any] = {"step_1_s": drawn(phase("step", 1), "step_s", "step 1")}
    if gpus > 1:
        out["step_n_s"] = drawn(phase("step", gpus), "step_s", f"step {gpus}")
        for field in ("comm_s", "exposed_s"):
            out[field] = drawn(phase("comm", gpus), field, "comm")
        out["instrumented_step_s"] = drawn(phase("comm", gpus), "step_s", "comm")
        reduce_rows = phase("allreduce", gpus)
        for kind in ("gradient", "sweep"):
            for nbytes in sorted({r["bytes"] for r in reduce_rows if r.get("kind") == kind}):
                picked = [r for r in reduce_rows if r.get("kind") == kind and r["bytes"] == nbytes]
                name = "grad_allreduce_s" if kind == "gradient" else f"sweep:{int(nbytes)}"
                out[name] = drawn(picked, "time_s", f"allreduce {kind} {nbytes}")
        paired = sorted(phase("paired", gpus), key=lambda r: r["round"])
        local = [r["step_s"] for r in paired if r.get("arm") == "no_sync"]
        ddp = [r["step_s"] for r in paired if r.get("arm") == "ddp"]
        if local and len(local) == len(ddp):
            ratios = [a / b for a, b in zip(local, ddp, strict=True)]
            recipe = intervals.median_recipe(ratios, f"{key}|paired")
            out["paired_efficiency"] = None if recipe is None else intervals.draws(recipe)
    return out


def summary_intervals(summary: ScalingSummary, reps: dict[str, Any]) -> dict[str, tuple[float, float] | None]:
    """95% percentile intervals of ``summary``'s fields from ``replicates``: each derived term computed replicate
    by replicate with the same functions ``summarize`` applies (a share, the overlap, the bandwidths); None where
    a median it needs has no replicates. ``sweep:<bytes>`` gives each swept size's bus bandwidth."""
    from render.derive import intervals

    def span(values: Any) -> tuple[float, float] | None:
        if values is None or not np.all(np.isfinite(values)):
            return None
        low, high = np.percentile(values, [100 * (1 - intervals.LEVEL) / 2, 100 * (1 + intervals.LEVEL) / 2])
        return float(low), float(high)

    r = reps
    tokens, gpus = summary.tokens_per_rank, summary.gpus
    terms: dict[str, Any] = {name: r.get(name) for name in ("step_1_s", "step_n_s", "comm_s", "exposed_s")}
    terms.update(instrumented_step_s=r.get("instrumented_step_s"), paired_efficiency=r.get("paired_efficiency"))
    one, n, comm, exposed = r.get("step_1_s"), r.get("step_n_s"), r.get("comm_s"), r.get("exposed_s")
    with np.errstate(divide="ignore", invalid="ignore"):
        if one is not None:
            terms["tok_s_1"] = tokens / one
        if n is not None:
            terms.update(tok_s_n=tokens / n, tok_s_all=gpus * tokens / n)
            if one is not None:
                terms.update(efficiency=one / n)
            if comm is not None and exposed is not None:
                terms.update(comm_share=comm / n, exposed_share=exposed / n)
                if summary.overlap is not None:
                    terms["overlap"] = 1.0 - exposed / comm
                if one is not None:
                    terms.update(other_s=n - one - exposed, other_share=(n - one - exposed) / n)
        t = r.get("grad_allreduce_s")
        if t is not None and gpus > 1:
            terms.update(grad_allreduce_s=t, grad_algbw_b_s=summary.grad_bytes / t)
            terms["grad_busbw_b_s"] = summary.grad_bytes / t * ring_factor(gpus)
        for name, values in r.items():
            if name.startswith("sweep:") and values is not None:
                terms[name] = int(name.split(":")[1]) / values * ring_factor(gpus)
    return {name: span(values) for name, values in terms.items()}


def projected_interval(summary: ScalingSummary, reps: dict[str, Any], n_target: int) -> tuple[float, float] | None:
    """95% percentile interval of ``projected_efficiency`` at ``n_target`` GPUs: ``projected_step_s`` and the
    efficiency computed replicate by replicate from the 1-GPU step, the N-GPU step and the gradient all-reduce
    (the projection's model stays as stated; the interval is only the measured terms' window noise)."""
    from render.derive import intervals

    one, n, t = reps.get("step_1_s"), reps.get("step_n_s"), reps.get("grad_allreduce_s")
    if one is None or n is None or t is None or summary.gpus < 2:
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        values = one / (n + t * ring_factor(n_target) / ring_factor(summary.gpus) - t)
    if not np.all(np.isfinite(values)):
        return None
    low, high = np.percentile(values, [100 * (1 - intervals.LEVEL) / 2, 100 * (1 + intervals.LEVEL) / 2])
    return float(low), float(high)
