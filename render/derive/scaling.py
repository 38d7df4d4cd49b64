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
