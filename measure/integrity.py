"""Per-window integrity of a timed training step: every loss finite, exactly one optimizer update per step.

A window whose step produced a NaN or infinite loss, or whose optimizer applied a different number
of updates than the window ran steps, did not time a training step: it is recorded as a failed
window, never as a timing and never as an out-of-memory boundary (issue 10).

* Losses: each call's returned loss is folded into a device-side count of non-finite values
  (one tiny kernel per step, no host synchronisation); the count is read after the window's end.
* Updates: read from the optimizer's own state, the ``step`` counter that Adam-family optimizers
  keep per parameter (``torch.optim.Adam``/``AdamW`` state), before and after the window; it counts
  updates that ran, also inside a replayed CUDA graph where no Python hook fires. An optimizer
  without such a counter is counted through ``register_step_post_hook`` calls instead (eager only).
* A step that returns no tensor (a plug-in's) cannot be checked for finiteness; that is recorded.

Imports torch only when a checker is built.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


def judge_window(calls: int, updates: int | None, nonfinite: int | None, per_call: int = 1) -> str | None:
    """Why a window of ``calls`` steps failed, or None: a non-finite loss, or updates != ``per_call`` x calls.

    ``updates`` None: the optimizer is unknown (not checked); ``nonfinite`` None: no loss to check.
    ``per_call`` is 0 for a step that must not update (an ablation arm without the optimizer).
    """
    if nonfinite:
        return f"{nonfinite} of {calls} losses were not finite"
    if updates is not None and updates != per_call * calls:
        return f"the optimizer applied {updates} updates in a window of {calls} steps"
    return None


class Integrity:
    """Wraps a step function and judges each timed window of it."""

    def __init__(self, optimizer: Any = None, device: str = "cpu", per_call: int = 1):
        import torch

        self.torch, self.optimizer, self.per_call = torch, optimizer, per_call
        self.bad = torch.zeros((), dtype=torch.int64, device=device)
        self.saw_loss = False
        self.hook_updates = 0
        self._handle = optimizer.register_step_post_hook(self._on_step) if optimizer is not None else None
        self._start: tuple[float | None, int] = (None, 0)
        self.counter: str | None = None
        """How the last window's updates were counted: ``optimizer state step``, ``step post-hook`` or None."""

    def _on_step(self, *_: Any) -> None:
        self.hook_updates += 1

    def state_step(self) -> float | None:
        """The ``step`` counter in the optimizer's state of its first parameter that has one (None: none yet)."""
        if self.optimizer is None:
            return None
        for group in self.optimizer.param_groups:
            for p in group["params"]:
                state = self.optimizer.state.get(p)
                if state and "step" in state:
                    return float(state["step"])
        return None

    def wrap(self, step: Callable[[], Any]) -> Callable[[], Any]:
        """``step`` with its returned loss folded into the non-finite count (on the device, no sync)."""
        torch = self.torch

        def checked() -> Any:
            loss = step()
            if isinstance(loss, torch.Tensor):
                self.saw_loss = True
                self.bad.add_((~torch.isfinite(loss.detach())).sum())
            return loss

        return checked

    def begin(self) -> None:
        """Before a window: zero the loss count, remember both update counters."""
        self.bad.zero_()
        self._start = (self.state_step(), self.hook_updates)

    def end(self, calls: int) -> dict[str, Any]:
        """After a window (the device synchronised): ``{calls, updates, counter, nonfinite_losses, failure}``."""
        state_before, hooks_before = self._start
        state_now = self.state_step()
        updates: int | None
        if state_now is not None:  # the optimizer's own count; 0 before its first step
            self.counter = "optimizer state step"
            updates = round(state_now - (state_before or 0.0))
        elif self.optimizer is not None:
            self.counter = "step post-hook"
            updates = self.hook_updates - hooks_before
        else:
            self.counter, updates = None, None
        nonfinite = int(self.bad) if self.saw_loss else None
        return {
            "calls": calls,
            "updates": updates,
            "counter": self.counter,
            "nonfinite_losses": nonfinite,
            "failure": judge_window(calls, updates, nonfinite, self.per_call),
        }

    def close(self) -> None:
        if self._handle is not None:
            self._handle.remove()
            self._handle = None


class WindowWatch:
    """What each timed window checks (``Integrity``) and samples (a ``measure.utilisation.Sampler``), either optional.

    ``end`` returns ``{calls, updates, counter, nonfinite_losses, failure}`` (the integrity check, or
    only ``failure: None`` without one) plus ``utilisation``: the sampler's summary of the readings
    taken between the host times around the window, when a sampler runs.
    """

    def __init__(self, integrity: Integrity | None = None, sampler: Any = None):
        self.integrity, self.sampler = integrity, sampler
        self._t0 = 0.0

    def begin(self) -> None:
        import time

        if self.integrity is not None:
            self.integrity.begin()
        self._t0 = time.perf_counter()

    def end(self, calls: int) -> dict[str, Any]:
        import time

        t1 = time.perf_counter()
        out: dict[str, Any] = self.integrity.end(calls) if self.integrity is not None else {"failure": None}
        if self.sampler is not None:
            out["utilisation"] = self.sampler.window_summary(self._t0, t1)
        return out


@dataclass(frozen=True)
class WatchFields:
    """Options of the probes that time whole training steps (step-scaling, optimizer, batch-sweep)."""

    utilisation: bool = False
    """Sample SM and memory clocks, power, temperature and SM/memory utilisation through NVML in every timed window."""
    cuda_graph: bool = False
    """Capture the whole update (forward, backward, optimizer) as one CUDA graph and time its replays."""


ROW_FIELDS = (
    ("sm_clock_mhz", ("min", "median")),
    ("mem_clock_mhz", ("median",)),
    ("power_w", ("median", "max")),
    ("temperature_c", ("max",)),
    ("sm_util_pct", ("median",)),
    ("mem_util_pct", ("median",)),
)


def utilisation_row(summary: dict[str, Any] | None) -> dict[str, Any]:
    """A window's utilisation summary as flat sample columns (``sm_clock_mhz_min``, ``power_w_median``, ...).

    Every column is present (None without a reading), so rows with and without sampling have one shape.
    """
    out: dict[str, Any] = {"nvml_readings": summary.get("readings") if summary else None}
    for field, stats in ROW_FIELDS:
        values = (summary or {}).get(field) or {}
        for stat in stats:
            out[f"{field}_{stat}"] = values.get(stat)
    return out


def make_watch(optimizer: Any, device: str, utilisation: bool) -> tuple[WindowWatch, Integrity, Any, dict[str, Any]]:
    """The watch a step-timing probe gives its windows: integrity always, NVML sampling when asked and possible.

    Returns ``(watch, integrity, sampler or None, info)``; ``info`` says whether sampling ran and why not.
    The caller stops the sampler (``sampler.stop()``) when its timing is done.
    """
    from measure.utilisation import INTERVAL_S, Sampler, nvml_reader

    integrity = Integrity(optimizer, device)
    sampler: Any = None
    info: dict[str, Any] = {"requested": utilisation, "sampling": False, "why_not": None, "interval_s": None}
    if utilisation:
        read, why = nvml_reader() if device == "cuda" else (None, "no NVML on a CPU run")
        if read is None:
            info["why_not"] = why
        else:
            sampler = Sampler(read).start()
            info.update({"sampling": True, "interval_s": INTERVAL_S, "nvml_device": getattr(read, "device", None)})
    return WindowWatch(integrity, sampler), integrity, sampler, info
