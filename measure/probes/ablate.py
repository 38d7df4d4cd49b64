"""``ablate``: what removing one term of the training step buys, by interleaved arms.

A profile attributes time; an ablation says what removing a term saves (ARCHITECTURE.md §Lessons). Arms run
A, B, C, ... in every round (``measure.timing.time_interleaved``) so drift cannot favour one.

* ``baseline``: the real step, with its input batch copied host->device (from pinned memory,
  asynchronously) at the start of every step, as a data loader would deliver it.
* ``no-input-copy``: the same step on a batch already on the device (CUDA only; on CPU there is
  no host->device copy to remove and the arm is recorded as skipped).
* the workload's own arms, each also fed by the host->device copy: for the reference decoder
  ``no-optimizer`` (skip ``optimizer.step``), ``no-loss-head`` (mean-square surrogate loss on
  the hidden state instead of head + cross-entropy) and ``no-attention`` (SDPA replaced by
  identity on the values); a plug-in's ``Workload.arms`` are the user-defined arms.

An arm that no longer computes the same mathematics is labelled ``timing_only``: its time is
a measurement of the remaining work, not a faster way to train.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from measure.constants import WINDOWS
from measure.device_check import resolve_device
from measure.errors import ProbebookError
from measure.evidence.envelope import Evidence
from measure.options import option
from measure.probes.common import OneStepConfig, add_marks, mark_engagement, record_workload, tree_map
from measure.run.runner import Recorder, execute
from measure.run.sessions import in_sessions
from measure.timing import energy_field

PROBE = "ablate"
VERSION = 2  # 2: what the step ran (backend, compilation, dtype) in data.observed, not params
HELP = "Interleaved arms that each remove one term of the step (optimizer, loss/head, attention, input copy)."
EXAMPLE = "probebook measure ablate --preset 90m --rounds 7"


@dataclass(frozen=True)
class Config(OneStepConfig):
    """Options of the ablate probe."""

    arms: tuple[str, ...] | None = None
    """Arms to run besides baseline (default: no-input-copy and every arm the workload offers)."""
    windows: int = option(WINDOWS, aliases=("--rounds",))
    """Interleaved rounds: every arm runs once per round, in the same order (``--rounds`` is the same option)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.arms is not None and ("baseline" in self.arms or not self.arms):
            raise ProbebookError("--arms lists the arms besides baseline (which always runs); give at least one")


def summarize(
    name: str, times_s: list[float], baseline_median_s: float, timing_only: bool, removes: str
) -> dict[str, Any]:
    """One arm's median, IQR and change against the baseline median (a fraction; negative is faster)."""
    from measure.timing import cv, iqr, median, relative_change

    med = median(times_s)
    return {
        "arm": name,
        "median_s": med,
        "iqr_s": iqr(times_s),
        "cv": cv(times_s),
        "delta_vs_baseline": relative_change(med, baseline_median_s),
        "timing_only": timing_only,
        "removes": removes,
    }


@in_sessions
def run(config: Config, journal: Any = None, progress: bool = False) -> Evidence:
    """Time the baseline and every arm, interleaved; return the evidence (not stored)."""
    device = resolve_device(config.device)
    batch, seq_len = config.step_shape(device)
    params = {**config.params(device), "batch": batch, "seq_len": seq_len, "rounds": config.windows}

    def body(rec: Recorder) -> None:
        from measure.timing import clock_for, sm_clock, sync_for, time_interleaved
        from measure.workload import Arm, load_workload

        workload = load_workload(config.workload_options(device), config.workload)
        on_device = workload.make_batch(batch, seq_len)
        if device == "cuda":
            host = tree_map(lambda t: t.cpu().pin_memory(), on_device)

            def fetch() -> Any:
                return tree_map(lambda t: t.to(device, non_blocking=True), host)
        else:

            def fetch() -> Any:
                return on_device

        offered: dict[str, Arm] = {}
        skipped = []
        if device == "cuda":
            offered["no-input-copy"] = Arm(
                lambda _b: workload.step(on_device), timing_only=False, removes="host->device copy of the input batch"
            )
        else:
            skipped.append({"arm": "no-input-copy", "reason": "on CPU there is no host->device input copy"})
        offered.update(workload.arms)
        chosen = list(config.arms) if config.arms else list(offered)
        unknown = [a for a in chosen if a not in offered and a not in {s["arm"] for s in skipped}]
        if unknown:
            raise ProbebookError(
                f"--arms: {', '.join(unknown)} not offered by {workload.name}; choose from {', '.join(offered)}"
            )
        runnable = [a for a in chosen if a in offered]
        if not runnable:  # a baseline alone compares nothing: refused before anything is timed (exit 2)
            why = "; ".join(f"{s['arm']} skipped: {s['reason']}" for s in skipped) or "no arm given"
            raise ProbebookError(
                f"ablate: nothing to compare: {workload.name} offers no arm on {device} besides baseline ({why}); "
                "give the workload arms (Workload.arms, README 'Measure your own model') or run on cuda"
            )
        record_workload(rec, workload)  # after the refusal above, so bad input stays one line
        arms: dict[str, Any] = {"baseline": lambda: workload.step(fetch())}
        for name in chosen:
            if name in offered:
                arm = offered[name]
                arms[name] = (
                    (lambda a=arm: a.step(on_device)) if name == "no-input-copy" else (lambda a=arm: a.step(fetch()))
                )
        rec.params["arms"] = list(arms)
        rec.data["skipped"] = skipped
        add_marks(
            rec,
            [
                {
                    "kind": "arm-skipped",
                    "where": s["arm"],
                    "observed": None,
                    "message": f"ablate arm {s['arm']} skipped: {s['reason']}",
                }
                for s in skipped
                if s["arm"] in chosen or config.arms is None
            ],
        )
        rec.data["clocks"] = {"sm_mhz_before": sm_clock(device)}

        def persist(
            r: int, times: dict[str, float], clocks: dict[str, int | None], energy: dict[str, float | None]
        ) -> None:
            rec.point(
                [
                    {"arm": a, "round": r, "step_s": t, "sm_clock_mhz": clocks.get(a), **energy_field(energy.get(a))}
                    for a, t in times.items()
                ],
                None,
                f"round {r}: " + ", ".join(f"{a} {t * 1e3:.2f} ms" for a, t in times.items()),
            )

        from measure.integrity import Integrity, WindowWatch

        # every window checked: finite losses, and one optimizer update per step in the arms whose updates are
        # known (none in the reference's no-optimizer arm); a plug-in's own arms: finite losses only
        known = {"baseline", "no-input-copy"} | (
            set(workload.arms) if workload.name.startswith("reference:") else set()
        )
        checks = {
            name: Integrity(
                workload.optimizer if name in known else None, device, per_call=0 if name == "no-optimizer" else 1
            )
            for name in arms
        }
        arms = {name: checks[name].wrap(fn) for name, fn in arms.items()}
        watches: dict[str, Any] = {name: WindowWatch(check) for name, check in checks.items()}
        try:
            result = time_interleaved(
                arms, clock_for(device), config.plan(), sync_for(device), on_round=persist, watch=watches
            )
        finally:
            for check in checks.values():
                check.close()
        rec.data["window_failures"] = [{"arm": a, **f} for a, arm in result.arms.items() for f in arm.failures]
        rec.data["clocks"]["sm_mhz_after"] = sm_clock(device)
        rec.data["order"] = [{"round": r, "arm": a} for r, a in result.order]
        base = result.arms["baseline"].median_s
        summaries = []
        for name, arm_result in result.arms.items():
            info = offered.get(name)
            summary = summarize(
                name,
                arm_result.times_s,
                base,
                bool(info and info.timing_only),
                info.removes if info else "nothing (the full step)",
            )
            summary["unstable"] = arm_result.unstable
            summaries.append(summary)
        rec.data["arms"] = summaries
        from measure.workload.observe import observe

        seen = observe(workload, on_device, device)  # what the timed step ran (one extra, untimed step)
        rec.data["observed"] = seen
        mark_engagement(rec, seen, compile_requested=config.compile, device=device, dtype=config.dtype)

    return execute(PROBE, VERSION, params, __file__, body, journal, progress)
