"""``loss-memory``: peak memory of a training step against microbatch size, per loss implementation.

Two arms train the same reference model with the same step (forward, backward, fused AdamW) and
differ only in how the loss is computed:

* ``materialized``: the reference workload's own step. The head makes the full logits
  [tokens x vocab] (bf16 under autocast) and ``F.cross_entropy`` runs on them (autocast runs it
  in fp32), so memory for logits, their fp32 copy and their gradient grows with every token.
* ``chunked``: the final hidden state is split into chunks of ``chunk_tokens`` tokens; each
  chunk's head matmul and cross-entropy (summed, then divided by the step's tokens: the same
  mean) runs under ``torch.utils.checkpoint``, which keeps only the chunk's inputs and recomputes
  its logits in backward. Full logits never exist; at most one chunk's do.

Each (arm, microbatch) point runs in a fresh process (``measure.run.isolate``), so every peak starts
from an empty allocator and an OOM cannot poison the next point. Arms alternate within each
microbatch so slow drift lands on both. The child warms up, resets the peak, times windows of
steps (``measure.timing``), reads the peak (``measure.peakmem``) and profiles one more step: the
loss path that actually ran is read from that trace (how many ``aten::_log_softmax`` calls, in
forward and backward, and the largest logits they saw), never inferred from the arm's name; a
point whose observed path is not its arm's makes the evidence ``failed``. Before any training it
also computes the loss once without gradients; the two arms' values must agree (same model, same
batch, same mathematics).

Columns (ARCHITECTURE.md §Evidence, read by ``render.derive.lossmem``): ``microbatch`` is the step's batch in
sequences of ``context`` tokens; ``tokens_per_step`` is, as ``bytes_per_logit_element`` reads it,
the tokens one more unit of ``microbatch`` adds, i.e. one sequence: ``context``. Then the
difference of the two arms' slopes of ``peak_bytes`` against ``microbatch``, divided by
``tokens_per_step x vocab``, is the bytes each logit element costs the materialized arm. The
step's own tokens are ``step_tokens`` = microbatch x context. A microbatch that runs out of
memory is recorded in ``data.oom`` (it has no peak to fit) and that arm stops there.
"""

from __future__ import annotations

import sys
import time
from dataclasses import asdict, dataclass
from typing import Any

from measure.compare import relative_error
from measure.device_check import resolve_device
from measure.errors import ProbebookError
from measure.evidence.contracts import tokens_per_second
from measure.evidence.envelope import Evidence
from measure.options import config_from_dict, option
from measure.probes.common import BudgetSpent, CommonConfig, positive, record_facts
from measure.run.runner import Recorder, execute
from measure.timing import energy_field
from measure.workload.losses import chunked_cross_entropy
from measure.workload.observe import workload_facts

PROBE = "loss-memory"
VERSION = 1
HELP = "Peak memory per microbatch for the materialized loss (full logits) against a chunked, recomputed loss."
EXAMPLE = "probebook measure loss-memory --preset 250m --context 2048 --microbatches 1,2,4,8,16"
MODULE = "measure.probes.loss_memory"
ARMS = ("materialized", "chunked")
MICROBATCHES = (1, 2, 4, 8, 16)
LOSS_AGREEMENT = 1e-2  # relative: bf16 logits from GEMMs of different M round differently, nothing more


@dataclass(frozen=True)
class Config(CommonConfig):
    """Options of the loss-memory probe."""

    SESSIONED = False  # each point already runs in a fresh process; its rows are keyed by point

    context: int | None = None
    """Sequence length in tokens (default 2048 on CUDA, 256 on CPU)."""
    microbatches: tuple[int, ...] = MICROBATCHES
    """Microbatch sizes in sequences; at least 2 distinct, for a slope."""
    arms: tuple[str, ...] = option(ARMS, choices=ARMS)
    """Loss implementations to compare: materialized, chunked."""
    chunk_tokens: int | None = None
    """Tokens per chunk of the chunked arm (default 1024 on CUDA, 64 on CPU)."""
    budget_s: float | None = None
    """Stop (stored as partial) before a new point once this many seconds have passed (default: none)."""
    point_timeout_s: float = 600.0
    """Kill a point's process after this many seconds; the point is recorded as a failure."""

    def __post_init__(self) -> None:
        super().__post_init__()
        positive("context", self.context)
        positive("chunk_tokens", self.chunk_tokens)
        if len(set(self.microbatches)) < 2 or min(self.microbatches) < 1:
            raise ProbebookError(
                f"--microbatches needs at least 2 distinct sizes >= 1 for a slope, got {list(self.microbatches)}"
            )
        if len(set(self.arms)) != len(self.arms):
            raise ProbebookError(f"--arms lists an arm twice: {list(self.arms)}")
        for name in ("budget_s", "point_timeout_s"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ProbebookError(f"--{name.replace('_', '-')} must be > 0, got {value}")


class PointDied(RuntimeError):
    """Some points failed or their processes died; the evidence keeps what was measured."""


def loss_path(forward_calls: int, backward_calls: int, rows_max: int, step_tokens: int, chunk_tokens: int) -> str:
    """Name the loss path from a profiled step's ``aten::_log_softmax`` calls (forward, backward) and largest rows.

    ``materialized``: one softmax over all the step's tokens. ``chunked``: one per chunk of
    ``chunk_tokens`` (the last may be shorter), each run twice in forward because the checkpoint
    recomputes it for backward. Anything else is ``other``.
    """
    if forward_calls == 1 and backward_calls == 1 and rows_max == step_tokens:
        return "materialized"
    chunks = -(-step_tokens // chunk_tokens)
    if backward_calls == chunks and forward_calls == 2 * chunks and rows_max == min(chunk_tokens, step_tokens):
        return "chunked"
    return "other"


# --- the child: one point -----------------------------------------------------------------------


def _arm_loss(workload: Any, arm: str, device: str, dtype: str, chunk_tokens: int) -> Any:
    """``loss(batch)`` for an arm: the workload's own forward (materialized) or its hidden state and head
    weight (``Workload.head``) through the chunked loss, under the step's autocast."""
    import torch

    if arm == "materialized":
        forward = workload.forward
        if forward is None:
            raise ProbebookError(
                f"workload {workload.name} has no forward(batch) -> (loss, logits); set Workload.forward"
            )
        return lambda batch: forward(batch)[0]
    head = workload.head
    if head is None:
        raise ProbebookError(
            f"--arms chunked: workload {workload.name} has no head(batch) -> (hidden, head_weight, targets); "
            "set Workload.head or drop the arm"
        )

    def loss(batch: Any) -> Any:
        with torch.autocast(device, dtype=torch.bfloat16, enabled=dtype == "bf16"):
            hidden, weight, targets = head(batch)
            return chunked_cross_entropy(hidden, targets, weight, chunk_tokens)

    return loss


def _vocab(workload: Any, batch: Any) -> int | None:
    """The output head's rows (its weight's, or the logits' last dimension); None if neither is exposed."""
    if workload.head is not None:
        return int(workload.head(batch)[1].shape[0])
    logits = workload.forward(batch)[1] if workload.forward is not None else None
    return None if logits is None else int(logits.shape[-1])


def _observe_loss(step: Any, batch: Any, device: str) -> dict[str, int]:
    """Profile one step; count the softmax calls of the loss and the largest logits they saw."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from measure.progress import profiler_stderr

    with profiler_stderr(), profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        step(batch)
        if device == "cuda":
            torch.cuda.synchronize()
    forward = backward = rows = 0
    for event in prof.key_averages(group_by_input_shape=True):
        if event.key == "aten::_log_softmax":
            forward += event.count
            shapes = event.input_shapes[0] if event.input_shapes else []
            rows = max(rows, int(shapes[0]) if len(shapes) == 2 else 0)
        elif event.key == "aten::_log_softmax_backward_data":
            backward += event.count
    return {"loss_forward_calls": forward, "loss_backward_calls": backward, "logits_rows_max": rows}


def measure_point(spec: dict[str, Any], facts: dict[str, Any]) -> dict[str, Any]:
    """Measure one (arm, microbatch) point in this (fresh) process; return what the parent stores."""
    import torch

    from measure import peakmem
    from measure.run.isolate import Phases
    from measure.timing import WindowPlan, clock_for, sync_for, time_windows
    from measure.workload import load_workload

    config: Config = config_from_dict(Config, spec["config"])
    device, arm, mb, s = spec["device"], spec["arm"], spec["microbatch"], spec["context"]
    phases = Phases(facts)
    options = config.workload_options(device)
    memory = peakmem.device_memory(device)
    facts.update({"free_bytes_at_start": memory["free_bytes"], "device_total_bytes": memory["total_bytes"]})
    with torch.device(device):  # weights are made where they live: no host init, no copy
        workload = load_workload(options, config.workload)
    facts.update(workload_facts(workload))
    loss = _arm_loss(workload, arm, device, options.dtype, spec["chunk_tokens"])
    if arm == "materialized":
        step = workload.step  # the reference workload's own training step, unchanged
    else:
        optimizer = workload.optimizer

        def step(batch: Any) -> Any:
            value = loss(batch)
            value.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            return value

    batch = workload.make_batch(mb, s)
    with torch.no_grad():
        facts["first_loss"] = float(loss(batch))
        facts["vocab"] = _vocab(workload, batch)
    sync = sync_for(device)
    phases.mark("setup_s")
    peaks = peakmem.PhasePeaks(device)  # setup and warm-up peaks, apart from the timed one
    peaks.end("setup")
    for _ in range(config.warmup):
        step(batch)
    peaks.end("warmup")
    facts.update(peaks.peaks)
    phases.mark("warmup_s")
    from measure.integrity import Integrity, WindowWatch

    plan = WindowPlan(warmup=0, windows=config.windows, iters=config.iters)
    check = Integrity(workload.optimizer, device)  # finite losses, one update per step, in every window
    timed = time_windows(check.wrap(lambda: step(batch)), clock_for(device), plan, sync, WindowWatch(check))
    peak = peakmem.read(device)
    phases.mark("timed_s")
    if timed.failures:  # a failed window is a failure of the point: never a timing, never an OOM boundary
        return {"status": "error", "error": f"window {timed.failures[0]['window']}: {timed.failures[0]['failure']}"}
    seen = _observe_loss(step, batch, device)
    phases.mark("observe_s")
    return {
        "status": "ok",
        "times_s": timed.times_s,
        "sm_clock_mhz": timed.sm_clock_mhz,
        "energy_j": timed.energy_j,
        "median_s": timed.median_s,
        "cv": timed.cv,
        "unstable": timed.unstable,
        **peak,
        **seen,
    }


# --- the parent -----------------------------------------------------------------------------------


def _row(arm: str, mb: int, s: int, chunk: int, result: dict[str, Any], outcome: Any) -> dict[str, Any]:
    """One loss-memory sample from a child's ok result and how its process ended."""
    from measure.run.isolate import phase_times

    step_tokens = mb * s
    return {
        "arm": arm,
        "microbatch": mb,
        "tokens_per_step": s,
        "vocab": result["vocab"],
        "context": s,
        "step_tokens": step_tokens,
        "chunk_tokens": chunk if arm == "chunked" else None,
        "peak_bytes": result["peak_bytes"],
        "setup_peak_bytes": result.get("setup_peak_bytes"),
        "warmup_peak_bytes": result.get("warmup_peak_bytes"),
        "reserved_bytes": result.get("reserved_bytes"),
        "peak_method": result["peak_method"],
        "tok_s": tokens_per_second(step_tokens, result["median_s"]),
        "step_s": result["median_s"],
        "cv": result["cv"],
        "windows": len(result["times_s"]),
        "unstable": result["unstable"],
        "loss_path": loss_path(
            result["loss_forward_calls"], result["loss_backward_calls"], result["logits_rows_max"], step_tokens, chunk
        ),
        "loss_forward_calls": result["loss_forward_calls"],
        "loss_backward_calls": result["loss_backward_calls"],
        "logits_rows_max": result["logits_rows_max"],
        "first_loss": result["first_loss"],
        "free_bytes_at_start": result.get("free_bytes_at_start"),
        "device_total_bytes": result.get("device_total_bytes"),
        "n_params": result["n_params"],
        "point_wall_s": outcome.wall_s,
        **phase_times(result, outcome),
    }


def _checks(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each row ran its arm's loss path; at every microbatch the arms' loss values agree."""
    out = [
        {
            "check": "loss path",
            "arm": r["arm"],
            "microbatch": r["microbatch"],
            "observed": r["loss_path"],
            "passed": r["loss_path"] == r["arm"],
        }
        for r in rows
    ]
    by_mb: dict[int, dict[str, float]] = {}
    for r in rows:
        by_mb.setdefault(r["microbatch"], {})[r["arm"]] = r["first_loss"]
    for mb, losses in sorted(by_mb.items()):
        if len(losses) == 2:
            diff = relative_error(losses["materialized"], losses["chunked"])
            out.append(
                {"check": "same loss", "microbatch": mb, "relative_difference": diff, "passed": diff <= LOSS_AGREEMENT}
            )
    return out


def run(config: Config, journal: Any = None, progress: bool = False) -> Evidence:
    """Measure every (microbatch, arm) point, arms alternating, one process per point; return the evidence."""
    from measure import peakmem
    from measure.run.isolate import CUDA_AHEAD, PointProcess

    device = resolve_device(config.device)
    context = config.context or (2048 if device == "cuda" else 256)
    chunk = config.chunk_tokens or (1024 if device == "cuda" else 64)
    microbatches = sorted(set(config.microbatches))
    child_env = peakmem.cpu_env() if device == "cpu" else {}
    params = {
        **config.params(device),
        "context": context,
        "chunk_tokens": chunk,
        "microbatches": microbatches,
        "arms": list(config.arms),
        "peak_method": peakmem.method(device),
        "isolation": "one fresh process per point",
        "spawn_ahead": CUDA_AHEAD if device == "cuda" else 0,
        "child_env": child_env,
        "tokens_per_step_meaning": "tokens one more microbatch unit (one sequence) adds: the context",
    }

    def body(rec: Recorder) -> None:
        rec.data.update({"windows": [], "oom": [], "failures": [], "checks": []})
        started = time.perf_counter()
        stopped: set[str] = set()
        with PointProcess(
            MODULE, child_env, config.point_timeout_s, ahead=CUDA_AHEAD if device == "cuda" else 0
        ) as points:
            for mb in microbatches:
                for arm in config.arms:
                    if arm in stopped:
                        continue
                    if config.budget_s is not None and rec.samples and time.perf_counter() - started > config.budget_s:
                        raise BudgetSpent(
                            f"time budget of {config.budget_s:g} s spent after {len(rec.samples)} "
                            f"points (at microbatch {mb}, arm {arm})"
                        )
                    spec = {
                        "config": asdict(config),
                        "device": device,
                        "arm": arm,
                        "microbatch": mb,
                        "context": context,
                        "chunk_tokens": chunk,
                    }
                    outcome = points.run(spec)
                    result = outcome.result
                    where = f"arm {arm} microbatch {mb}"
                    if result is not None and result.get("input_error"):
                        raise ProbebookError(f"{PROBE} {where}: {result['error']}")
                    if result is None or result["status"] != "ok":
                        entry = {
                            "arm": arm,
                            "microbatch": mb,
                            "returncode": outcome.returncode,
                            "wall_s": outcome.wall_s,
                            "error": outcome.death() if result is None else result["error"],
                        }
                        oom = result is not None and result["status"] == "oom"
                        rec.data["oom" if oom else "failures"].append(entry)
                        stopped.add(arm)  # a larger microbatch of this arm would fare no better
                        if progress:  # the point's progress line on stderr, as the runner prints the others
                            print(  # noqa: T201
                                f"probebook: {PROBE}: {where}: {'OOM' if oom else 'failed'}: {entry['error']}",
                                file=sys.stderr,
                                flush=True,
                            )
                        continue
                    row = _row(arm, mb, context, chunk, result, outcome)
                    if "workload_name" not in rec.params:
                        record_facts(rec, result)
                    clocks = result.get("sm_clock_mhz") or [None] * len(result["times_s"])
                    energy = result.get("energy_j") or [None] * len(result["times_s"])
                    rec.data["windows"] += [
                        {"arm": arm, "microbatch": mb, "window": w, "step_s": t, "sm_clock_mhz": c, **energy_field(e)}
                        for w, (t, c, e) in enumerate(zip(result["times_s"], clocks, energy, strict=True))
                    ]
                    rec.point(
                        [row],
                        None,
                        f"{where}: peak {row['peak_bytes'] / 2**30:.3f} GiB, "
                        f"{row['tok_s']:,.0f} tok/s, loss path {row['loss_path']}",
                    )
        rec.data["checks"] = _checks(rec.samples)
        failed = [c for c in rec.data["checks"] if not c["passed"]]
        if failed:
            rec.fail(f"{len(failed)} check(s) failed, first: {failed[0]}")
        elif rec.data["failures"]:
            first = rec.data["failures"][0]
            raise PointDied(
                f"{len(rec.data['failures'])} point(s) failed or died; first at "
                f"arm {first['arm']} microbatch {first['microbatch']}: {first['error']}"
            )

    return execute(PROBE, VERSION, params, __file__, body, journal, progress)


if __name__ == "__main__":
    from measure.run.isolate import serve

    serve(measure_point)
