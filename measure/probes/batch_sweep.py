"""``batch-sweep``: at each context, walk the batch up in powers of two until the first OOM or a cap.

Every (context, batch) point runs in a fresh process (``measure.run.isolate``): a hard CUDA
out-of-memory poisons the process that hits it (ARCHITECTURE.md §Lessons). The child builds the workload,
makes one synthetic batch, warms up, resets the peak, times windows of real training steps
(``measure.timing``), reads the peak (``measure.peakmem``) and profiles one more step to observe
the SDPA backend and whether compilation engaged. With ``window_s`` (version 2) the calls per
window are sized by time from the last warm-up step (``timing.calls_per_window``), and a point run
under a device lock (``measure_here``) parses that profile after giving the device back. Version 1
evidence (fixed calls per window, the profile parsed on the device) reads the same way: its rows
lack ``window_iters`` and ``calibration_step_s``. One row per point lands in ``data.samples``
with the columns render reads (``model``, ``params``, ``context``, ``batch``, ``tok_s``,
``peak_bytes``, ``status``) plus extras; each window's step time lands in ``data.windows``.

* The walk at a context stops at the first OOM (an allocation failure observed in the child:
  ``status: "oom"``, ``tok_s`` and ``peak_bytes`` null) or at the cap (``max_tokens`` = batch x
  context, and ``max_batch``). A point whose process dies without a result (a signal, a timeout)
  is recorded in ``data.failures``, the walk moves to the next context, and the evidence is
  ``partial``. Points above an OOM are listed in ``data.skipped``, never run.
* A peak above the device proves a spill; a peak below it does not prove a fit: the render side
  looks for a throughput collapse against the neighbouring batch (``render.derive.batchsweep``).
* On CPU nothing is faked: the peak is the process's peak RSS (``linux-vmhwm``) and the walk stops
  at the cap with ``ok`` rows, unless ``cpu_memory_limit_bytes`` gives every point process a real
  address-space limit (``RLIMIT_AS``), past which an allocation genuinely fails: an OOM boundary.
* Optimizer settings (version 3): ``--beta1``/``--beta2``/``--weight-decay`` are set on the workload optimizer's param
  groups and ``--clip`` clips inside every step from a step pre-hook, exactly as the ``optimizer`` probe does
  (``common.OptimizerFields``); the default is the workload's own settings and no clip, as versions 1 and 2 ran.
  What group 0 held and the clip land in ``data.optimizer_settings``.
* A sweep that changes nothing is a bug (ARCHITECTURE.md §Lessons): the child counts the elements of the batch
  it built; a context whose batches all hold the same number of elements (``make_batch`` ignored
  the batch size), or whose ok points all show the same peak and step time, is stored ``failed``.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import asdict, dataclass
from typing import Any

from measure.device_check import resolve_device
from measure.errors import ProbebookError
from measure.evidence.contracts import tokens_per_second
from measure.evidence.envelope import Evidence
from measure.integrity import WatchFields
from measure.options import config_from_dict, option
from measure.peakmem import PHASES as PEAK_PHASES
from measure.probes.common import (
    BudgetSpent,
    CommonConfig,
    OptimizerFields,
    configure_optimizer,
    mark_engagement,
    positive,
    record_facts,
    release_device,
    workload_facts,
)
from measure.run.runner import Recorder, execute
from measure.timing import energy_field

log = logging.getLogger(__name__)

PROBE = "batch-sweep"
VERSION = 3  # 2: window_s sizes windows by time; the observe profile is parsed off the device
# 3: the optimizer settings (--clip, --beta1, --beta2, --weight-decay; common.OptimizerFields) in params, and what the
# optimizer held in data.optimizer_settings
HELP = (
    "Peak memory and tokens/s while the batch doubles at each context, up to the first OOM or a cap; one "
    "fresh process per point."
)
EXAMPLE = "probebook measure batch-sweep --preset 90m --contexts 1024,2048,4096"
MODULE = "measure.probes.batch_sweep"
GPU_CONTEXTS = (1024, 2048, 4096)
CPU_CONTEXTS = (32, 64)
GPU_MAX_TOKENS = 1 << 20  # 1M tokens per step: past any batch the presets fit on a 141 GB card
CPU_MAX_TOKENS = 512


@dataclass(frozen=True)
class Config(CommonConfig, WatchFields, OptimizerFields):
    """Options of the batch-sweep probe (its optimizer settings: ``common.OptimizerFields``, no clip by default)."""

    SESSIONED = False  # each point already runs in a fresh process; a sweep's rows are one per point

    contexts: tuple[int, ...] | None = option(None, metavar="S,S,...")
    """Sequence lengths to sweep, each walked separately (default 1024,2048,4096 on CUDA; 32,64 on CPU)."""
    start_batch: int = 1
    """First batch of every walk; the next is twice the previous."""
    max_batch: int | None = None
    """Largest batch to try (default: no limit besides ``max_tokens``)."""
    max_tokens: int | None = None
    """Largest batch x context to try (default 1,048,576 on CUDA, 512 on CPU)."""
    budget_s: float | None = None
    """Stop (stored as partial) before a new point once this many seconds have passed (default: none)."""
    point_timeout_s: float = 600.0
    """Kill a point's process after this many seconds; the point is recorded as a failure."""
    window_s: float | None = None
    """Seconds each timed window should last: calls per window from the timed last warm-up step (None: --iters)."""
    cpu_memory_limit_bytes: int | None = None
    """CPU only: each point process may map this many bytes beyond its size after building the model
    (a real RLIMIT_AS limit), so a batch that needs more fails to allocate: a genuine OOM boundary."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.check_optimizer_settings()
        if self.contexts is not None:
            if not self.contexts or min(self.contexts) < 1:
                raise ProbebookError(f"--contexts must be positive integers, got {list(self.contexts)}")
            if len(set(self.contexts)) != len(self.contexts):
                raise ProbebookError(f"--contexts lists a length twice: {list(self.contexts)}")
        for name in ("start_batch", "max_batch", "max_tokens", "cpu_memory_limit_bytes"):
            positive(name, getattr(self, name))
        if self.window_s is not None and self.warmup < 1:
            raise ProbebookError("--window-s sizes windows from the last warm-up step: give --warmup >= 1")
        for name in ("budget_s", "point_timeout_s", "window_s"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ProbebookError(f"--{name.replace('_', '-')} must be > 0, got {value}")
        if self.max_batch is not None and self.max_batch < self.start_batch:
            raise ProbebookError(f"--max-batch {self.max_batch} is below --start-batch {self.start_batch}")


class PointDied(RuntimeError):
    """Some points failed or their processes died; the evidence keeps what was measured."""


def plan_batches(context: int, start: int, max_batch: int | None, max_tokens: int) -> list[int]:
    """Batches to try at one context: start, 2·start, 4·start, ... while batch·context <= max_tokens.

    A ``max_batch`` also caps the batch itself.
    """
    out, b = [], start
    while b * context <= max_tokens and (max_batch is None or b <= max_batch):
        out.append(b)
        b *= 2
    return out


def unchanged(rows: list[dict[str, Any]]) -> str | None:
    """Why a context's walk varied nothing, or None: same batch elements at every batch, or same peak and time."""
    sizes = [r["batch_elements"] for r in rows if r.get("batch_elements") is not None]
    if len(sizes) >= 2 and len(set(sizes)) == 1:
        return f"make_batch returned {sizes[0]} elements at every batch: the batch size does not reach the workload"
    ok = [r for r in rows if r["status"] == "ok"]
    if len(ok) >= 2 and len({r["peak_bytes"] for r in ok}) == 1 and len({r["step_s"] for r in ok}) == 1:
        return "every batch gave the same peak and the same step time"
    return None


# --- the child: one point -----------------------------------------------------------------------


def _elements(value: Any) -> int:
    """Elements in every tensor of a batch made of tensors, tuples, lists and dicts."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.numel()
    items = value.values() if isinstance(value, dict) else value if isinstance(value, (tuple, list)) else ()
    return sum(_elements(item) for item in items)


def measure_point(spec: dict[str, Any], facts: dict[str, Any]) -> dict[str, Any]:
    """Measure one (context, batch) point in this (fresh) process; return what the parent stores."""
    trace: list[Any] = []
    result = measure_on_device(spec, facts, trace)
    result.update(read_observation(trace))
    return result


def read_observation(trace: list[Any]) -> dict[str, Any]:
    """What the profiled step ran, read from its trace (host work only: run it after the device is given back)."""
    from measure.workload.observe import read_trace

    if not trace:
        return {}
    started = time.perf_counter()
    seen = read_trace(trace[0])
    return {
        "sdpa_backend": seen["sdpa_backend"],
        "compile_engaged": seen["compile_engaged"],
        "observed_dtype": seen["dtype"],
        "trace_s": time.perf_counter() - started,
    }


def _timed_step(step: Any, sync: Any) -> float:
    """Seconds of one call of ``step`` on a host clock read after a device synchronize."""
    sync()
    started = time.perf_counter()
    step()
    sync()
    return time.perf_counter() - started


def measure_on_device(spec: dict[str, Any], facts: dict[str, Any], trace: list[Any]) -> dict[str, Any]:
    """Everything of one point that needs the device; the observe step's unread profile is appended to ``trace``."""
    import torch

    from measure import peakmem
    from measure.graphs import capture
    from measure.integrity import make_watch, utilisation_row
    from measure.run.isolate import Phases, is_oom
    from measure.timing import WindowPlan, calls_per_window, clock_for, sync_for, time_windows
    from measure.workload import load_workload
    from measure.workload.observe import profiled_step

    config: Config = config_from_dict(Config, spec["config"])
    device, b, s = spec["device"], spec["batch"], spec["context"]
    phases = Phases(facts)
    memory = peakmem.device_memory(device)
    facts.update({"free_bytes_at_start": memory["free_bytes"], "device_total_bytes": memory["total_bytes"]})
    try:
        with torch.device(device):  # weights are made where they live: no host init, no copy
            workload = load_workload(config.workload_options(device), config.workload)
        facts.update(workload_facts(workload))
        facts["optimizer_settings"] = configure_optimizer(workload, config, device)
        batch = workload.make_batch(b, s)
        facts["batch_elements"] = _elements(batch)
        if config.cpu_memory_limit_bytes:
            facts["address_space_cap_bytes"] = peakmem.limit_address_space(config.cpu_memory_limit_bytes)
        sync = sync_for(device)
        phases.mark("setup_s")
        peaks = peakmem.PhasePeaks(device)  # setup, warm-up and capture peaks, apart from the timed one
        peaks.end("setup")
        step: Any = lambda: workload.step(batch)  # noqa: E731
        for i in range(config.warmup):
            if config.window_s is not None and i == config.warmup - 1 and not config.cuda_graph:
                facts["calibration_step_s"] = _timed_step(step, sync)  # sizes the windows (version 2)
            else:
                step()
        peaks.end("warmup")
        facts.update(peaks.peaks)
        phases.mark("warmup_s")
        if config.cuda_graph:  # the whole update captured once; its replays are timed
            step, facts["cuda_graph"] = capture(step, workload.optimizer, device, warmup=config.warmup)
            if step is None:
                return {"status": "error", "error": f"CUDA graph not captured: {facts['cuda_graph']['reason']}"}
            if config.window_s is not None:  # a replay, not an eager step, is what the windows time
                facts["calibration_step_s"] = _timed_step(step, sync)
            peaks.end("capture")
            facts.update(peaks.peaks)
        iters = config.iters
        if config.window_s is not None:
            iters = calls_per_window(config.window_s, facts["calibration_step_s"], config.iters)
        facts["window_iters"] = iters
        watch, integrity, sampler, facts["utilisation"] = make_watch(workload.optimizer, device, config.utilisation)
        plan = WindowPlan(warmup=0, windows=config.windows, iters=iters)
        try:
            timed = time_windows(integrity.wrap(step), clock_for(device), plan, sync, watch)
        finally:
            if sampler is not None:
                sampler.stop()
        peak = peakmem.read(device)
        phases.mark("timed_s")
        if timed.failures:  # a failed window is a failure of the point: never a timing, never an OOM boundary
            first = timed.failures[0]
            return {"status": "error", "error": f"window {first['window']}: {first['failure']}"}
    except Exception as exc:
        if device == "cuda" and is_oom(exc, device):
            facts["peak_before_oom_bytes"] = int(torch.cuda.max_memory_allocated())
        raise
    try:
        trace.append(profiled_step(workload, batch, device))
    except Exception as exc:  # the point is measured; one more step under the profiler must not undo it
        if not is_oom(exc, device):
            raise
        facts["observe_error"] = f"the profiled step ran out of memory: {exc}"[:300]
    phases.mark("observe_s")
    return {
        "status": "ok",
        "times_s": timed.times_s,
        "window_checks": [
            {
                "updates": (c or {}).get("updates"),
                "sm_clock_mhz": mhz,
                **energy_field(joules),
                **utilisation_row((c or {}).get("utilisation")),
            }
            for c, mhz, joules in zip(timed.checks, timed.sm_clock_mhz, timed.energy_j, strict=True)
        ],
        "median_s": timed.median_s,
        "cv": timed.cv,
        "unstable": timed.unstable,
        **peak,
        "sdpa_backend": None,  # read from the trace (``read_observation``), after the device is given back
        "compile_engaged": None,
        "observed_dtype": None,
    }


# --- the parent: the walk -----------------------------------------------------------------------


def _row(model: str, n_params: int, s: int, b: int, result: dict[str, Any], outcome: Any) -> dict[str, Any]:
    """One batch-sweep sample from a child's result (ok or oom) and how its process ended."""
    from measure.run.isolate import phase_times

    ok = result["status"] == "ok"
    total, peak = result.get("device_total_bytes"), result.get("peak_bytes") if ok else None
    return {
        "model": model,
        "params": n_params,
        "context": s,
        "batch": b,
        "tokens": b * s,
        "status": result["status"],
        "tok_s": tokens_per_second(b * s, result["median_s"]) if ok else None,
        "step_s": result["median_s"] if ok else None,
        "cv": result.get("cv"),
        "windows": len(result["times_s"]) if ok else 0,
        "unstable": result.get("unstable"),
        "peak_bytes": peak,
        # the phases before the measurement, each its own peak (a point that died in one has those before it)
        **{f"{phase}_peak_bytes": result.get(f"{phase}_peak_bytes") for phase in PEAK_PHASES},
        "reserved_bytes": result.get("reserved_bytes") if ok else None,
        "peak_before_oom_bytes": result.get("peak_before_oom_bytes"),
        "peak_method": result.get("peak_method"),
        # ARCHITECTURE.md §Lessons: a peak above the card proves a spill (False never proves a fit)
        "peak_over_device": (peak > total) if (peak is not None and total) else None,
        "free_bytes_at_start": result.get("free_bytes_at_start"),
        "device_total_bytes": total,
        "sdpa_backend": result.get("sdpa_backend"),
        "compile_engaged": result.get("compile_engaged"),
        "observed_dtype": result.get("observed_dtype"),
        "observe_error": result.get("observe_error"),
        "batch_elements": result.get("batch_elements"),
        "window_iters": result.get("window_iters") if ok else None,
        "calibration_step_s": result.get("calibration_step_s") if ok else None,
        "trace_s": result.get("trace_s") if ok else None,
        "point_wall_s": outcome.wall_s,
        **phase_times(result, outcome),
        "error": None if ok else result.get("error"),
    }


def point_spec(config: Config, device: str, context: int, batch: int) -> dict[str, Any]:
    """What one point's process needs to measure (context, batch): the spec ``measure_point`` reads."""
    return {"config": asdict(config), "device": device, "context": context, "batch": batch}


def _take(
    rec: Recorder, model: str, n_params: int | None, s: int, b: int, outcome: Any, progress: bool, config: Config
) -> dict[str, Any] | None:
    """Record one point's outcome: its row (ok or oom, returned) or a failure in ``data.failures`` (None)."""
    result = outcome.result
    where = f"context {s} batch {b}"
    if result is not None and result.get("n_params") is not None:
        n_params = result["n_params"]
    if result is not None and result.get("input_error"):
        raise ProbebookError(f"{PROBE} {where}: {result['error']}")
    how = None
    if result is None or result["status"] == "error":
        how = outcome.death() if result is None else result["error"]
    elif n_params is None:
        how = f"no parameter count: {result.get('error')}"
    if how is not None or result is None or n_params is None:
        failure = {"context": s, "batch": b, "error": how, "returncode": outcome.returncode, "wall_s": outcome.wall_s}
        rec.data["failures"].append(failure)
        if progress:
            log.warning("%s: %s failed: %s", PROBE, where, how)
        return None
    assert n_params is not None  # a missing count became a failure above
    if "workload_name" not in rec.params and "workload_source" in result:
        record_facts(rec, result)
    if "optimizer_settings" not in rec.data and "optimizer_settings" in result:
        # beside params, not in them (version 3): what the optimizer held is observed, and a new param would change
        # the run's configuration key (measure.evidence.configkey)
        rec.data["optimizer_settings"] = result["optimizer_settings"]
    row = _row(model, n_params, s, b, result, outcome)
    if row["status"] == "ok" and row["sdpa_backend"] is not None:  # observed (a point measured by a job may not be)
        mark_engagement(
            rec, row, compile_requested=config.compile, device=rec.params["device"], dtype=config.dtype, where=where
        )
    if row["status"] == "ok":
        checks = result.get("window_checks") or [{}] * len(result["times_s"])
        rec.data["windows"] += [
            {"context": s, "batch": b, "window": w, "step_s": t, **c}
            for w, (t, c) in enumerate(zip(result["times_s"], checks, strict=True))
        ]
        label = f"{where}: {row['tok_s']:,.0f} tok/s, peak {row['peak_bytes'] / 2**30:.2f} GiB"
    else:
        label = f"{where}: OOM"
    rec.point([row], None, label)
    return row


def _params(
    config: Config,
    device: str,
    planned: dict[int, list[int]],
    max_tokens: int,
    child_env: dict[str, str],
    isolation: str,
) -> dict[str, Any]:
    """The evidence params of a sweep over ``planned`` batches per context."""
    from measure import peakmem

    return {
        **config.params(device),
        "contexts": list(planned),
        "max_tokens": max_tokens,
        "planned_batches": {str(s): b for s, b in planned.items()},
        "peak_method": peakmem.method(device),
        "isolation": isolation,
        "oom_source": (
            "cuda allocator"
            if device == "cuda"
            else "RLIMIT_AS address-space limit per point process"
            if config.cpu_memory_limit_bytes
            else "none: the CPU walk stops at the cap"
        ),
        "pytorch_cuda_alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF"),
        "child_env": child_env,
    }


def measure_here(config: Config, context: int, batch: int, device_lock: Any = None, progress: bool = False) -> Evidence:
    """Measure one (context, batch) point in this process and return its evidence (one sample).

    For a caller that is itself a fresh process per point (a campaign job): the same child
    measurement (``measure_point``) and rows as ``run``, without a second process. ``device_lock``
    (a context manager) is held from before the model is built until the device memory is
    returned, so points sharing a device never overlap there; the wait and the hold are recorded
    in the row (``device_wait_s``, ``device_acquired_unix``, ``device_released_unix``). The device is
    checked once the lock is held (``measure.device_check``), never while a sibling job holds the card.
    """
    import contextlib

    from measure.run.isolate import Outcome, attempt
    from measure.workload.presets import PRESETS, param_count

    device = resolve_device(config.device)
    if config.cpu_memory_limit_bytes is not None and device != "cpu":
        raise ProbebookError("--cpu-memory-limit-bytes applies to --device cpu only; a GPU's limit is its memory")
    params = _params(config, device, {context: [batch]}, context * batch, {}, "one fresh process per point (its own)")
    model = config.preset if config.workload is None else config.workload
    expected = param_count(PRESETS[config.preset]) if config.workload is None else None

    def body(rec: Recorder) -> None:
        rec.data.update({"windows": [], "failures": [], "skipped": []})
        asked = time.perf_counter()
        facts: dict[str, Any] = {}
        trace: list[Any] = []
        with device_lock if device_lock is not None else contextlib.nullcontext():
            facts["device_wait_s"] = time.perf_counter() - asked or None
            facts["device_acquired_unix"] = time.time()
            rec.check_device()  # after the lock: the job that held the card before has let it go (issue 27)
            start = time.perf_counter()
            result = attempt(
                lambda s, f: measure_on_device(s, f, trace), point_spec(config, device, context, batch), facts
            )
            release_device(device)
            result["device_released_unix"] = time.time()
        if result["status"] == "ok":  # the profile is parsed on the host while the next point has the device
            result.update(read_observation(trace))
        trace.clear()
        outcome = Outcome(result, 0, "", time.perf_counter() - start, False, time.time())
        row = _take(rec, model, expected, context, batch, outcome, progress, config)
        if row is None:
            raise PointDied(f"context {context} batch {batch}: {rec.data['failures'][0]['error']}")
        row.update({k: result.get(k) for k in ("device_wait_s", "device_acquired_unix", "device_released_unix")})

    return execute(PROBE, VERSION, params, __file__, body, None, progress, check_device=False)


def run(config: Config, journal: Any = None, progress: bool = False) -> Evidence:
    """Walk every context up to its first OOM or the cap, one process per point; return the evidence."""
    from measure import peakmem
    from measure.run.isolate import CUDA_AHEAD, PointProcess
    from measure.workload.presets import PRESETS, param_count

    device = resolve_device(config.device)
    if config.cpu_memory_limit_bytes is not None and device != "cpu":
        raise ProbebookError("--cpu-memory-limit-bytes applies to --device cpu only; a GPU's limit is its memory")
    contexts = tuple(config.contexts or (GPU_CONTEXTS if device == "cuda" else CPU_CONTEXTS))
    max_tokens = config.max_tokens or (GPU_MAX_TOKENS if device == "cuda" else CPU_MAX_TOKENS)
    planned = {s: plan_batches(s, config.start_batch, config.max_batch, max_tokens) for s in contexts}
    empty = [s for s, batches in planned.items() if not batches]
    if empty:
        raise ProbebookError(
            f"context {empty[0]}: no batch from --start-batch {config.start_batch} fits "
            f"--max-tokens {max_tokens} (batch x context)"
        )
    child_env = peakmem.cpu_env(limited=config.cpu_memory_limit_bytes is not None) if device == "cpu" else {}
    params = _params(config, device, planned, max_tokens, child_env, "one fresh process per point")
    params["spawn_ahead"] = CUDA_AHEAD if device == "cuda" else 0
    model = config.preset if config.workload is None else config.workload
    expected_params = param_count(PRESETS[config.preset]) if config.workload is None else None

    def body(rec: Recorder) -> None:
        rec.data.update({"windows": [], "failures": [], "skipped": []})
        started = time.perf_counter()
        n_params = expected_params
        with PointProcess(
            MODULE, child_env, config.point_timeout_s, ahead=CUDA_AHEAD if device == "cuda" else 0
        ) as points:
            for s in contexts:
                rows: list[dict[str, Any]] = []
                for i, b in enumerate(planned[s]):
                    if config.budget_s is not None and rec.samples and time.perf_counter() - started > config.budget_s:
                        raise BudgetSpent(
                            f"time budget of {config.budget_s:g} s spent after {len(rec.samples)} "
                            f"points (at context {s}, batch {b})"
                        )
                    spec = point_spec(config, device, s, b)
                    outcome = points.run(spec)
                    row = _take(rec, model, n_params, s, b, outcome, progress, config)
                    if row is None:
                        break
                    n_params = row["params"]
                    rows.append(row)
                    if row["status"] == "oom":
                        rec.data["skipped"] += [
                            {"context": s, "batch": later, "reason": f"above the first OOM at batch {b}"}
                            for later in planned[s][i + 1 :]
                        ]
                        break
                why = unchanged(rows)
                if why is not None:
                    rec.fail(f"context {s}: {why} (a sweep that changes nothing is a bug)")
        if rec.data["failures"] and rec.status == "complete":
            first = rec.data["failures"][0]
            raise PointDied(
                f"{len(rec.data['failures'])} point(s) failed or died; first at "
                f"context {first['context']} batch {first['batch']}: {first['error']}"
            )

    return execute(PROBE, VERSION, params, __file__, body, journal, progress)


if __name__ == "__main__":
    from measure.run.isolate import serve

    serve(measure_point)
