"""``optimizer``: the optimizer step's share of the iteration, timed inside the real step.

The ``instrumented`` arm registers ``Optimizer.register_step_pre_hook``/``post_hook`` (public
torch API) around each call and records a CUDA event pair on the compute stream at those
hooks (host ``perf_counter`` on CPU, where execution is synchronous), so the optimizer is timed
exactly where the real step calls it. The ``baseline`` arm is the same step with no hooks. The
two arms are interleaved per round; the relative difference of their medians is the
instrumentation's own cost, measured rather than assumed. Rows: ``optimizer_s`` is the mean
optimizer time per step in that round (null on baseline).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from measure.errors import ProbebookError
from measure.evidence.envelope import Evidence
from measure.integrity import WatchFields
from measure.options import option
from measure.probes.common import OneStepConfig, mark_engagement, record_workload, resolve_device
from measure.run.runner import Recorder, execute

PROBE = "optimizer"
VERSION = 1
HELP = "optimizer.step's share of the step by CUDA events inside the real step, paired with an uninstrumented baseline."
EXAMPLE = "probebook measure optimizer --preset 250m"


@dataclass(frozen=True)
class Config(OneStepConfig, WatchFields):
    """Options of the optimizer probe."""

    windows: int = option(7, aliases=("--rounds",))
    """Interleaved rounds: every arm runs once per round, in the same order (``--rounds`` is the same option)."""


def share(optimizer_s: float, step_s: float) -> float:
    """Fraction of the step spent in ``optimizer.step`` (both in seconds)."""
    return optimizer_s / step_s


def run(config: Config, journal: Any = None, progress: bool = False) -> Evidence:
    """Interleave instrumented and baseline steps; return the evidence (not stored)."""
    device = resolve_device(config.device)
    batch, seq_len = config.step_shape(device)
    params = {**config.params(device), "batch": batch, "seq_len": seq_len, "rounds": config.windows}

    def body(rec: Recorder) -> None:
        import torch

        from measure.timing import clock_for, median, relative_change, sm_clock, sync_for, time_interleaved
        from measure.workload import load_workload

        workload = load_workload(config.workload_options(device), config.workload)
        opt = workload.optimizer
        if opt is None:
            raise ProbebookError(
                f"workload {workload.name} does not expose its optimizer; return it as the "
                "4th item of the factory's tuple (or Workload.optimizer)"
            )
        record_workload(rec, workload)
        rec.params["optimizer_class"] = type(opt).__name__
        data = workload.make_batch(batch, seq_len)
        pairs: list[tuple[Any, Any]] = []  # one (start, end) per instrumented optimizer.step call
        open_: list[Any] = []

        def stamp() -> Any:
            if device == "cuda":
                event = torch.cuda.Event(enable_timing=True)
                event.record()
                return event
            return time.perf_counter()

        def pre(*_: Any) -> None:
            open_.append(stamp())

        def post(*_: Any) -> None:
            pairs.append((open_.pop(), stamp()))

        def instrumented() -> None:
            handles = (opt.register_step_pre_hook(pre), opt.register_step_post_hook(post))
            try:
                workload.step(data)
            finally:
                for h in handles:
                    h.remove()

        def elapsed(start: Any, end: Any) -> float:
            return start.elapsed_time(end) / 1000.0 if device == "cuda" else end - start

        from measure.graphs import capture
        from measure.integrity import make_watch, utilisation_row

        arms = {"instrumented": instrumented, "baseline": lambda: workload.step(data)}
        plan = config.plan()
        rec.data["cuda_graph"] = None
        if config.cuda_graph:  # the whole update captured once, replayed as an arm of its own
            replay, rec.data["cuda_graph"] = capture(lambda: workload.step(data), opt, device, warmup=plan.warmup)
            if replay is not None:
                arms["graph"] = replay
        rec.data["clocks"] = {"sm_mhz_before": sm_clock(device)}
        watch, integrity, sampler, rec.data["utilisation"] = make_watch(opt, device, config.utilisation)
        arms = {name: integrity.wrap(fn) for name, fn in arms.items()}
        per_round: list[float] = []

        def persist(r: int, times: dict[str, float]) -> None:
            # this round's instrumented calls: after the warm-up calls, plan.iters per round
            first = plan.warmup + r * plan.iters
            calls = pairs[first : first + plan.iters]
            if len(calls) != plan.iters:
                raise ProbebookError(
                    f"workload {workload.name}: optimizer.step ran {len(pairs)} times in the "
                    "instrumented arm; expected once per step"
                )
            t_o = sum(elapsed(s, e) for s, e in calls) / plan.iters
            if "instrumented" in times:  # a round that failed its check is no timing (time_interleaved leaves it out)
                per_round.append(t_o)
            rows = [
                {"arm": arm, "round": r, "step_s": t, "optimizer_s": t_o if arm == "instrumented" else None}
                for arm, t in times.items()
            ]
            rec.point(rows, None, f"round {r}: " + ", ".join(f"{a} {t * 1e3:.2f} ms" for a, t in times.items()))

        try:
            result = time_interleaved(arms, clock_for(device), plan, sync_for(device), on_round=persist, watch=watch)
        finally:
            if sampler is not None:
                sampler.stop()
            integrity.close()
        rec.data["clocks"]["sm_mhz_after"] = sm_clock(device)
        rec.data["window_failures"] = [{"arm": a, **f} for a, arm in result.arms.items() for f in arm.failures]
        rec.data["windows"] = [
            {"arm": a, "round": i, "updates": (c or {}).get("updates"), **utilisation_row((c or {}).get("utilisation"))}
            for a, arm in result.arms.items()
            for i, c in enumerate(arm.checks)
        ]
        instr, base = result.arms["instrumented"], result.arms["baseline"]
        graph = result.arms.get("graph")
        from measure.workload.observe import observe

        seen = observe(workload, data, device)  # what the timed step ran (one extra, untimed step)
        mark_engagement(rec, seen, compile_requested=config.compile, device=device, dtype=config.dtype)
        rec.params.update({("observed_dtype" if k == "dtype" else k): v for k, v in seen.items()})
        rec.data["summary"] = {
            "instrumented_median_s": instr.median_s,
            "baseline_median_s": base.median_s,
            "optimizer_median_s": median(per_round),
            "optimizer_share": share(median(per_round), instr.median_s),
            "instrumentation_overhead": relative_change(instr.median_s, base.median_s),
            "instrumented_cv": instr.cv,
            "baseline_cv": base.cv,
            "unstable": instr.unstable or base.unstable,
            "graph_median_s": graph.median_s if graph else None,
            "graph_cv": graph.cv if graph else None,
            "graph_vs_baseline": relative_change(graph.median_s, base.median_s) if graph else None,
        }

    return execute(PROBE, VERSION, params, __file__, body, journal, progress)
