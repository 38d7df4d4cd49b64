"""``step-scaling``: training-step time against sequence length, at fixed batch and at fixed tokens per step.

Each (mode, S) point builds one synthetic batch on the device, warms up, and times windows of
real training steps (``measure.timing``). ``fixed_batch`` holds B and grows the tokens per step
with S; ``fixed_tokens`` holds B*S near ``tokens_per_step`` (B = tokens_per_step // S). The render
side fits step(S) = c + a*S + b*S^2 to the points (ARCHITECTURE.md §Derivations). A soft CUDA out-of-memory at one
point is recorded as that point's ``status: "oom"`` and the sweep continues. With ``--compile``
dynamo's caches are reset before every point, so each shape gets its own specialised graph and
the recompile limit never silently drops a point back to eager (what ran is observed per point).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from measure.device_check import resolve_device
from measure.errors import ProbebookError
from measure.evidence.contracts import STEP_MODES
from measure.evidence.envelope import Evidence
from measure.integrity import WatchFields
from measure.options import option
from measure.probes.common import (
    CommonConfig,
    mark_engagement,
    model_flops_per_token,
    positive,
    record_workload,
    release_device,
)
from measure.run.runner import Recorder, execute
from measure.run.sessions import in_sessions
from measure.timing import energy_field

PROBE = "step-scaling"
VERSION = 2  # 2: what the steps ran (backend, compilation, dtype) in data.observed, not params
HELP = "Training-step time at several sequence lengths, at fixed batch and at fixed tokens per step."
EXAMPLE = "probebook measure step-scaling --preset 90m --seq-lens 512,1024,2048,4096"
MODES = STEP_MODES
GPU_SEQ_LENS = (512, 1024, 2048, 4096, 6144, 8192)
CPU_SEQ_LENS = (32, 64, 96, 128, 192, 256)


@dataclass(frozen=True)
class Config(CommonConfig, WatchFields):
    """Options of the step-scaling probe."""

    seq_lens: tuple[int, ...] | None = option(None, metavar="S,S,...")
    """Sequence lengths, at least 3 distinct (default 6: 512..8192 on CUDA, 32..256 on CPU)."""
    batch: int | None = None
    """Batch size of the fixed-batch mode (default 4 on CUDA, 2 on CPU)."""
    tokens_per_step: int | None = None
    """Target B*S of the fixed-tokens mode (default 3 x the longest length)."""
    modes: tuple[str, ...] = option(MODES, choices=MODES)
    """Which modes to run: fixed_batch, fixed_tokens."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.seq_lens is not None:
            if len(set(self.seq_lens)) < 3:
                raise ProbebookError(
                    f"--seq-lens needs at least 3 distinct lengths to fit three terms, got {list(self.seq_lens)}"
                )
            if min(self.seq_lens) < 1:
                raise ProbebookError("--seq-lens must all be >= 1")
        positive("batch", self.batch)
        positive("tokens_per_step", self.tokens_per_step)
        if self.tokens_per_step and self.seq_lens and self.tokens_per_step < max(self.seq_lens):
            raise ProbebookError(
                f"--tokens-per-step {self.tokens_per_step} is below the longest sequence "
                f"{max(self.seq_lens)}: fixed-tokens batches would be empty"
            )


def plan_points(
    seq_lens: tuple[int, ...], batch: int, tokens_per_step: int, modes: tuple[str, ...]
) -> list[tuple[str, int, int]]:
    """(mode, S, B) for every point, in run order; fixed_tokens uses B = tokens_per_step // S."""
    points = []
    for mode in modes:
        for s in sorted(set(seq_lens)):
            points.append((mode, s, batch if mode == "fixed_batch" else tokens_per_step // s))
    return points


@in_sessions
def run(config: Config, journal: Any = None, progress: bool = False) -> Evidence:
    """Time the training step at every (mode, S) point; return the evidence (not stored)."""
    device = resolve_device(config.device)
    seq_lens = config.seq_lens or (GPU_SEQ_LENS if device == "cuda" else CPU_SEQ_LENS)
    batch = config.batch or (4 if device == "cuda" else 2)
    tokens_per_step = config.tokens_per_step or 3 * max(seq_lens)
    points = plan_points(tuple(seq_lens), batch, tokens_per_step, config.modes)
    params = {
        **config.params(device),
        "seq_lens": sorted(set(seq_lens)),
        "batch": batch,
        "tokens_per_step": tokens_per_step,
        "modes": list(config.modes),
    }

    def body(rec: Recorder) -> None:
        import torch

        from measure.graphs import capture
        from measure.integrity import make_watch, utilisation_row
        from measure.timing import clock_for, sm_clock, sync_for, time_windows
        from measure.workload import load_workload
        from measure.workload.observe import observe

        workload = load_workload(config.workload_options(device), config.workload)
        record_workload(rec, workload)
        if workload.layers is not None and workload.heads and workload.head_dim:
            # frozen weights accounted for: 4·P_all + 2·P_trainable + 12·L·H·Q·T (measure/evidence/flops.py)
            rec.params["model_flops_per_token"] = {
                str(s): model_flops_per_token(workload, s, config.sliding_window, config.global_every)
                for s in sorted(set(seq_lens))
            }
        else:
            rec.params["model_flops_per_token"] = None  # a plug-in without layer shapes: attention term unknown
        clock, sync, plan = clock_for(device), sync_for(device), config.plan()
        rec.data["clocks"] = {"sm_mhz_before": sm_clock(device)}
        watch, integrity, sampler, rec.data["utilisation"] = make_watch(workload.optimizer, device, config.utilisation)
        rec.data.update({"window_failures": [], "cuda_graph": [] if config.cuda_graph else None})
        observed: list[dict[str, Any]] = []

        def one_point(mode: str, s: int, b: int) -> None:
            label = f"{mode} S={s} B={b}"
            summary: dict[str, Any] = {"mode": mode, "tokens": s, "batch": b, "tokens_per_step": b * s}
            try:
                if config.compile:
                    torch.compiler.reset()
                batch_ = workload.make_batch(b, s)
                step: Any = functools.partial(workload.step, batch_)
                if config.cuda_graph:
                    step, graph = capture(step, workload.optimizer, device, warmup=plan.warmup)
                    rec.data["cuda_graph"].append({"mode": mode, "tokens": s, "batch": b, **graph})
                    if step is None:
                        summary.update({"status": "not captured", "median_step_s": None, "windows": 0})
                        rec.point([], summary, f"{label} not captured: {graph['reason']}")
                        return
                result = time_windows(integrity.wrap(step), clock, plan, sync, watch)
                del step
                seen = observe(workload, batch_, device)
                mark_engagement(
                    rec, seen, compile_requested=config.compile, device=device, dtype=config.dtype, where=label
                )
            except torch.OutOfMemoryError as exc:
                del exc
                batch_ = None
                release_device(device)
                summary.update({"status": "oom", "median_step_s": None, "cv": None, "windows": 0, "unstable": None})
                rec.point([], summary, label + " OOM")
                return
            observed.append(seen)
            if result.failures:  # a window that failed its check makes the point a failure, never a timing
                rec.data["window_failures"] += [{"mode": mode, "tokens": s, "batch": b, **f} for f in result.failures]
                summary.update({"status": "failed", "median_step_s": None, "windows": 0, "failure": result.failures[0]})
                rec.point([], summary, f"{label} failed: {result.failures[0]['failure']}")
                return
            rows = [
                {
                    "mode": mode,
                    "tokens": s,
                    "batch": b,
                    "tokens_per_step": b * s,
                    "window": i,
                    "step_s": t,
                    "sm_clock_mhz": mhz,
                    **energy_field(joules),
                    "updates": (c or {}).get("updates"),
                    **(utilisation_row((c or {}).get("utilisation")) if config.utilisation else {}),
                }
                for i, (t, c, mhz, joules) in enumerate(
                    zip(result.times_s, result.checks, result.sm_clock_mhz, result.energy_j, strict=True)
                )
            ]
            summary.update(
                {
                    "status": "ok",
                    "median_step_s": result.median_s,
                    "cv": result.cv,
                    "windows": len(result.times_s),
                    "unstable": result.unstable,
                    "sdpa_backend": seen["sdpa_backend"],
                    "compile_engaged": seen["compile_engaged"],
                }
            )
            rec.point(rows, summary, f"{label} median {result.checked_median_s * 1e3:.2f} ms cv {result.cv:.3f}")

        try:
            for mode, s, b in points:
                one_point(mode, s, b)
        finally:
            if sampler is not None:
                sampler.stop()
            integrity.close()
        rec.data["clocks"]["sm_mhz_after"] = sm_clock(device)
        if observed:
            backends = sorted({o["sdpa_backend"] or "none" for o in observed})
            rec.data["observed"] = {
                "sdpa_backend": backends[0] if len(backends) == 1 else ",".join(backends),
                "compile_engaged": all(o["compile_engaged"] for o in observed),
                "dtype": observed[0]["dtype"],
                "loss_ops": observed[0]["loss_ops"],
            }

    return execute(PROBE, VERSION, params, __file__, body, journal, progress)
