"""``optimizer``: the optimizer step's share of the iteration, timed inside the real step.

The ``instrumented`` arm registers ``Optimizer.register_step_pre_hook``/``post_hook`` (public
torch API) around each call and records a CUDA event pair on the compute stream at those
hooks (host ``perf_counter`` on CPU, where execution is synchronous), so the optimizer is timed
exactly where the real step calls it. The ``baseline`` arm is the same step with no hooks. The
two arms are interleaved per round; the relative difference of their medians is the
instrumentation's own cost, measured rather than assumed. Rows: ``optimizer_s`` is the mean
optimizer time per step in that round (null on baseline).

Clipping (version 2): with ``--clip C`` (default 1.0, the sweep protocol's; 0 turns it off) every
arm runs ``torch.nn.utils.clip_grad_norm_(max_norm=C)`` on the optimizer's parameters from a
step pre-hook, so it is inside the real step just before the update, for any workload. In the
instrumented arm the clip runs after the start event, so ``optimizer_s`` is clip + update.

``--mode captured`` (CUDA only; refused on CPU in one line): forward, backward, the clip and the
optimizer update (``capturable=True``; ``--beta1``/``--beta2``/``--weight-decay`` set on its param
groups where given) are captured in one CUDA graph (``measure.graphs.capture``: warm-up on a side
stream, as torch's CUDA-graph notes prescribe). The clip + update share is taken by **paired replay**:
a second graph holds the same forward and backward with no clip and no update, the two are
replayed as interleaved arms, and the share is ``(full - no_update) / full``. Why not CUDA events
inside the graph: an event recorded during capture becomes an event node only when created as an
external event, and timing it adds a node and a dependency inside the very graph whose time is
measured; paired replay leaves the measured graph exactly the one a captured training loop runs.
Both graphs are single-stream, so the difference is the segment's own time (no overlap hides it).

Burst weighting: a timed sample is a burst of ``iters`` calls (replays in captured mode, steps in
eager mode) whose time is their mean; ``burst_weighted_mean`` weights each sample by its burst
length, so a sample of more calls counts for more. With a fixed ``--iters`` every weight is equal
and it equals the plain mean; the medians stay the headline values.

Overhead flag (version 3): hooks that cost more than ``measure.constants.OVERHEAD_LIMIT`` (5%) of the step have
changed the step they time, so the instrumented optimizer share is then not trusted (the original protocol's rule).
The overhead is itself a measured difference, so it is judged by its 95% interval (``overhead_interval``: the
interleaved rounds resampled jointly, each round's instrumented step with its own baseline step):
``data.summary.overhead_verdict`` is ``above`` (the interval's low end is above the limit; ``overhead_flagged`` is
true), ``below``, or ``not resolved`` (the interval reaches the limit), with ``overhead_limit`` the limit it used.
Captured mode has no hooks in the timed graph, so it has no overhead and no flag.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from measure.constants import OVERHEAD_LIMIT, WINDOWS, overhead_verdict
from measure.device_check import resolve_device
from measure.errors import ProbebookError
from measure.evidence.envelope import Evidence
from measure.integrity import WatchFields
from measure.options import option
from measure.probes.common import (
    OneStepConfig,
    OptimizerFields,
    apply_hyperparameters,
    clipper,
    mark_engagement,
    record_workload,
)
from measure.run.runner import Recorder, execute
from measure.run.sessions import in_sessions
from measure.timing import energy_field

PROBE = "optimizer"
VERSION = 3  # 2: gradient clipping in every arm (--clip 1.0 by default), --mode captured, burst-weighted means
# 3: the instrumentation overhead's 95% interval and its verdict against OVERHEAD_LIMIT (data.summary.overhead_flagged)
HELP = "optimizer.step's share of the step by CUDA events inside the real step, or inside the captured update."
MODES = ("eager", "captured")
EXAMPLE = "probebook measure optimizer --preset 250m"


@dataclass(frozen=True)
class Config(OneStepConfig, WatchFields, OptimizerFields):
    """Options of the optimizer probe (its optimizer settings: ``common.OptimizerFields``)."""

    windows: int = option(WINDOWS, aliases=("--rounds",))
    """Interleaved rounds: every arm runs once per round, in the same order (``--rounds`` is the same option)."""
    mode: str = option("eager", choices=MODES)
    """eager: CUDA events at the optimizer hooks in the real step; captured: paired replay of the update graph."""
    clip: float = 1.0  # the sweep protocol's clip, where OptimizerFields (batch-sweep) defaults to none
    """Clip the gradients' total norm to this inside every step, just before the update (clip_grad_norm_ from an
    optimizer step pre-hook); 0 turns clipping off (default 1.0, the original sweep protocol's)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.check_optimizer_settings()
        if self.mode == "captured":
            if self.device == "cpu":
                raise ProbebookError(CPU_REFUSAL)
            if self.cuda_graph:
                raise ProbebookError("--cuda-graph: --mode captured already times the captured update; drop it")


CPU_REFUSAL = "--mode captured needs a CUDA device (it replays a CUDA graph); use --mode eager on a CPU"


def share(optimizer_s: float, step_s: float) -> float:
    """Fraction of the step spent in ``optimizer.step`` (both in seconds)."""
    return optimizer_s / step_s


def burst_weighted_mean(seconds_per_call: list[float], bursts: list[int]) -> float:
    """Mean seconds per call over samples that each time a burst of calls, weighted by burst length.

    ``sum(t_i·n_i) / sum(n_i)``: the total time over the total calls, so a sample of more calls counts more.
    """
    if not seconds_per_call or len(seconds_per_call) != len(bursts) or min(bursts) < 1:
        raise ProbebookError("burst_weighted_mean needs one positive burst length per sample")
    return sum(t * n for t, n in zip(seconds_per_call, bursts, strict=True)) / sum(bursts)


RESAMPLES = 20_000
"""Bootstrap resamples of ``overhead_interval``: as many as render's intervals draw (``render.derive.intervals``)."""
LEVEL = 0.95


def overhead_interval(
    pairs: list[tuple[float, float]], resamples: int = RESAMPLES, seed: int = 0
) -> tuple[float, float] | None:
    """95% percentile interval of the instrumentation overhead ``median(instrumented) / median(baseline) - 1`` over
    interleaved rounds resampled jointly: ``pairs`` is one (instrumented step s, baseline step s) per round that
    timed both, and one set of indices draws both, so each round keeps its pairing. None for fewer than 3 rounds.
    Seeded, so one run's rows give one interval."""
    if len(pairs) < 3:
        return None
    import numpy as np

    rounds = np.asarray(pairs, dtype=float)
    picks = np.random.default_rng(seed).integers(0, len(rounds), size=(resamples, len(rounds)))
    drawn = np.median(rounds[picks, 0], axis=1) / np.median(rounds[picks, 1], axis=1) - 1
    low, high = np.percentile(drawn, [100 * (1 - LEVEL) / 2, 100 * (1 + LEVEL) / 2])
    return float(low), float(high)


def overhead_fields(overhead: float, pairs: list[tuple[float, float]]) -> dict[str, Any]:
    """The summary's overhead flag: the limit used, the overhead's interval (named ends; None for fewer than 3
    paired rounds, when the figure is judged as a line), its verdict and whether it is flagged (``above``)."""
    span = overhead_interval(pairs)
    judged = overhead_verdict(*(span or (overhead, overhead)))
    return {
        "overhead_limit": OVERHEAD_LIMIT,
        "instrumentation_overhead_interval": {"low": span[0], "high": span[1]} if span else None,
        "overhead_verdict": judged,
        "overhead_flagged": judged == "above",
    }


@in_sessions
def run(config: Config, journal: Any = None, progress: bool = False) -> Evidence:
    """Interleave instrumented and baseline steps; return the evidence (not stored)."""
    device = resolve_device(config.device)
    if config.mode == "captured" and device != "cuda":
        raise ProbebookError(CPU_REFUSAL)
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
        rec.params["optimizer_settings"] = apply_hyperparameters(opt, config)
        data = workload.make_batch(batch, seq_len)
        clip = clipper(opt, config.clip, device)

        def clipped(fn: Any) -> Any:
            """``fn`` with the clip registered as a step pre-hook (removed after)."""

            def call() -> Any:
                handle = opt.register_step_pre_hook(lambda *_: clip())
                try:
                    return fn()
                finally:
                    handle.remove()

            return call

        if config.mode == "captured":
            captured_update(rec, config, workload, data, device, clipped)
            return
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
            clip()  # after the start event: optimizer_s is clip + update

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
        from measure.integrity import make_watch

        arms = {"instrumented": instrumented, "baseline": clipped(lambda: workload.step(data))}
        plan = config.plan()
        rec.data["cuda_graph"] = None
        if config.cuda_graph:  # the whole update captured once, replayed as an arm of its own
            replay, rec.data["cuda_graph"] = capture(
                clipped(lambda: workload.step(data)), opt, device, warmup=plan.warmup
            )
            if replay is not None:
                arms["graph"] = replay
        rec.data["clocks"] = {"sm_mhz_before": sm_clock(device)}
        watch, integrity, sampler, rec.data["utilisation"] = make_watch(opt, device, config.utilisation)
        arms = {name: integrity.wrap(fn) for name, fn in arms.items()}
        per_round: list[float] = []
        paired: list[tuple[float, float]] = []  # (instrumented, baseline) step of each round that timed both

        def persist(
            r: int, times: dict[str, float], clocks: dict[str, int | None], energy: dict[str, float | None]
        ) -> None:
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
            if "instrumented" in times and "baseline" in times:
                paired.append((times["instrumented"], times["baseline"]))
            rows = [
                {
                    "arm": arm,
                    "round": r,
                    "step_s": t,
                    "optimizer_s": t_o if arm == "instrumented" else None,
                    "sm_clock_mhz": clocks.get(arm),
                    **energy_field(energy.get(arm)),
                }
                for arm, t in times.items()
            ]
            rec.point(rows, None, f"round {r}: " + ", ".join(f"{a} {t * 1e3:.2f} ms" for a, t in times.items()))

        try:
            result = time_interleaved(arms, clock_for(device), plan, sync_for(device), on_round=persist, watch=watch)
        finally:
            if sampler is not None:
                sampler.stop()
            integrity.close()
        record_rounds(rec, result, device)
        instr, base = result.arms["instrumented"], result.arms["baseline"]
        graph = result.arms.get("graph")
        from measure.workload.observe import observe

        seen = observe(workload, data, device)  # what the timed step ran (one extra, untimed step)
        mark_engagement(rec, seen, compile_requested=config.compile, device=device, dtype=config.dtype)
        rec.params.update({("observed_dtype" if k == "dtype" else k): v for k, v in seen.items()})
        overhead = relative_change(instr.median_s, base.median_s)
        rec.data["summary"] = {
            "instrumented_median_s": instr.median_s,
            "baseline_median_s": base.median_s,
            "optimizer_median_s": median(per_round),
            "optimizer_burst_weighted_s": burst_weighted_mean(per_round, [plan.iters] * len(per_round)),
            "clip_max_norm": config.clip or None,
            "timed_segment": "clip_grad_norm_ + optimizer.step" if config.clip else "optimizer.step",
            "optimizer_share": share(median(per_round), instr.median_s),
            "instrumentation_overhead": overhead,
            **overhead_fields(overhead, paired),
            "instrumented_cv": instr.cv,
            "baseline_cv": base.cv,
            "unstable": instr.unstable or base.unstable,
            "graph_median_s": graph.median_s if graph else None,
            "graph_cv": graph.cv if graph else None,
            "graph_vs_baseline": relative_change(graph.median_s, base.median_s) if graph else None,
        }

    return execute(PROBE, VERSION, params, __file__, body, journal, progress)


def record_rounds(rec: Recorder, result: Any, device: str) -> None:
    """After the interleaved rounds (eager or captured): the clock after, each arm's failed windows, and
    every window's update count and utilisation, as ``rec.data`` keeps them."""
    from measure.integrity import utilisation_row
    from measure.timing import sm_clock

    rec.data["clocks"]["sm_mhz_after"] = sm_clock(device)
    rec.data["window_failures"] = [{"arm": a, **f} for a, arm in result.arms.items() for f in arm.failures]
    rec.data["windows"] = [
        {"arm": a, "round": i, "updates": (c or {}).get("updates"), **utilisation_row((c or {}).get("utilisation"))}
        for a, arm in result.arms.items()
        for i, c in enumerate(arm.checks)
    ]


def captured_update(rec: Recorder, config: Config, workload: Any, data: Any, device: str, clipped: Any) -> None:
    """``--mode captured``: the whole update and the same step without clip and update, captured and replayed as
    interleaved arms (paired replay, module docstring); rows per arm and round, the share in ``data.summary``."""
    from measure.graphs import capture
    from measure.integrity import Integrity, WindowWatch, make_watch
    from measure.timing import CudaEventClock, Watch, median, sm_clock, sync_for, time_interleaved

    opt, forward = workload.optimizer, workload.forward
    if forward is None:
        raise ProbebookError(
            f"workload {workload.name} has no forward (Workload.forward): --mode captured pairs the update's graph "
            "with a graph of the same forward and backward"
        )

    def no_update() -> Any:
        loss = forward(data)[0]
        loss.backward()
        opt.zero_grad(set_to_none=True)
        return loss

    plan = config.plan()
    full, rec.data["cuda_graph"] = capture(clipped(lambda: workload.step(data)), opt, device, warmup=plan.warmup)
    if full is None:
        raise ProbebookError(
            f"--mode captured: the whole update could not be captured: {rec.data['cuda_graph']['reason']}"
        )
    bare, rec.data["cuda_graph_no_update"] = capture(
        no_update, None, device, warmup=plan.warmup, scope="forward, backward and zero_grad (no clip, no update)"
    )
    if bare is None:
        reason = rec.data["cuda_graph_no_update"]["reason"]
        raise ProbebookError(f"--mode captured: the step without its update could not be captured: {reason}")
    rec.params["optimizer_settings"]["capturable"] = bool(opt.param_groups[0].get("capturable"))
    rec.data["clocks"] = {"sm_mhz_before": sm_clock(device)}
    watch, integrity, sampler, rec.data["utilisation"] = make_watch(opt, device, config.utilisation)
    still = Integrity(opt, device, per_call=0)  # the paired graph must not update
    arms = {"captured": integrity.wrap(full), "captured-no-update": still.wrap(bare)}
    watches: dict[str, Watch] = {"captured": watch, "captured-no-update": WindowWatch(still, sampler)}

    def persist(
        r: int, times: dict[str, float], clocks: dict[str, int | None], energy: dict[str, float | None]
    ) -> None:
        rows = [
            {
                "arm": arm,
                "round": r,
                "step_s": t,
                "burst": plan.iters,
                "sm_clock_mhz": clocks.get(arm),
                **energy_field(energy.get(arm)),
            }
            for arm, t in times.items()
        ]
        rec.point(rows, None, f"round {r}: " + ", ".join(f"{a} {t * 1e3:.3f} ms" for a, t in times.items()))

    try:
        result = time_interleaved(arms, CudaEventClock(), plan, sync_for(device), on_round=persist, watch=watches)
    finally:
        if sampler is not None:
            sampler.stop()
        integrity.close()
        still.close()
    record_rounds(rec, result, device)
    whole, rest = result.arms["captured"], result.arms["captured-no-update"]
    weighted = {
        name: burst_weighted_mean(arm.times_s, [plan.iters] * len(arm.times_s)) for name, arm in result.arms.items()
    }
    segment = whole.median_s - rest.median_s
    rec.data["summary"] = {
        "method": "paired replay: the whole-update graph against the same graph without clip and update",
        "timed_segment": "clip_grad_norm_ + optimizer.step" if config.clip else "optimizer.step",
        "clip_max_norm": config.clip or None,
        "captured_median_s": whole.median_s,
        "captured_no_update_median_s": rest.median_s,
        "optimizer_median_s": segment,
        "optimizer_share": share(segment, whole.median_s),
        "captured_burst_weighted_s": weighted["captured"],
        "captured_no_update_burst_weighted_s": weighted["captured-no-update"],
        "optimizer_burst_weighted_share": share(
            weighted["captured"] - weighted["captured-no-update"], weighted["captured"]
        ),
        "burst_calls": plan.iters,
        "captured_cv": whole.cv,
        "captured_no_update_cv": rest.cv,
        "unstable": whole.unstable or rest.unstable,
        # rounds pair up only when neither arm lost one to its checks
        "median_of_round_differences_s": median([a - b for a, b in zip(whole.times_s, rest.times_s, strict=True)])
        if len(whole.times_s) == len(rest.times_s)
        else None,
    }
