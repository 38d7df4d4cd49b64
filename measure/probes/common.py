"""Config fields and helpers shared by the workload probes (not a probe itself; imports no torch at load)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from measure.errors import ProbebookError
from measure.options import check_choices, option
from measure.timing import TimingFields, WindowPlan
from measure.workload import WorkloadFields, WorkloadOptions, check_window
from measure.workload.presets import PRESETS

DEVICE_CHOICES = ("auto", "cpu", "cuda")


class BudgetSpent(RuntimeError):
    """A probe's ``--budget-s`` ran out before every planned point was measured.

    Raised between points, never inside a timed window; ``measure.run.runner.execute`` turns it into
    ``partial`` evidence holding the points measured so far, with this message as its ``error``.
    """


@dataclass(frozen=True)
class CommonConfig(TimingFields, WorkloadFields):
    """Options every workload probe takes: the workload's and the timing's fields, the device and a plug-in."""

    device: str = option("auto", choices=DEVICE_CHOICES)
    """Where to run: ``cpu``, ``cuda``, or ``auto`` (cuda when torch sees one, else cpu)."""
    workload: str | None = option(None, metavar="PKG.MOD:FACTORY")
    """Time your own harness, ``package.module:factory`` returning (model, make_batch, step[, optimizer])."""

    def __post_init__(self) -> None:
        check_window(self.sliding_window, self.global_every)
        if self.workload is None and self.preset not in PRESETS:
            raise ProbebookError(f"--preset {self.preset!r} is unknown; choose one of {', '.join(PRESETS)}")
        check_choices(self)
        super().__post_init__()

    def plan(self) -> WindowPlan:
        return WindowPlan(warmup=self.warmup, windows=self.windows, iters=self.iters)

    def params(self, device: str) -> dict[str, Any]:
        """The config as evidence params, with the device as resolved."""
        out = asdict(self)
        out["device"] = device
        out["device_requested"] = self.device
        out["iters_per_window"] = self.iters
        return out

    def workload_options(self, device: str) -> WorkloadOptions:
        return WorkloadOptions(**{f.name: getattr(self, f.name) for f in fields(WorkloadFields)}, device=device)


@dataclass(frozen=True)
class OneStepConfig(CommonConfig):
    """Options of the probes that time one step shape (kernels, ablate, optimizer)."""

    batch: int | None = None
    """Batch size (default 4 on CUDA, 2 on CPU)."""
    seq_len: int | None = None
    """Sequence length (default 2048 on CUDA, 128 on CPU)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        positive("batch", self.batch)
        positive("seq_len", self.seq_len)

    def step_shape(self, device: str) -> tuple[int, int]:
        """(batch, seq_len) as given, or the defaults for the resolved device."""
        return (self.batch or (4 if device == "cuda" else 2), self.seq_len or (2048 if device == "cuda" else 128))


def tokens_per_second(step_tokens: int, step_s: float) -> float:
    """Training throughput in tokens/s: the step's tokens over its seconds."""
    return step_tokens / step_s


def positive(name: str, value: int | None) -> None:
    """Refuse a non-positive option with one line naming it."""
    if value is not None and value < 1:
        raise ProbebookError(f"--{name.replace('_', '-')} must be >= 1, got {value}")


def resolve_device(requested: str) -> str:
    """``auto`` -> cuda when torch sees a device, else cpu; ``cuda`` without one is a one-line error."""
    try:
        import torch
    except ImportError:
        raise ProbebookError(
            "probes need torch, which is not installed here: pip install torch (CPU-only: pip install torch==2.13.0)"
        ) from None
    available = torch.cuda.is_available()
    if requested == "auto":
        return "cuda" if available else "cpu"
    if requested == "cuda" and not available:
        raise ProbebookError("--device cuda: torch sees no CUDA device here; use --device cpu")
    return requested


def tree_map(fn: Any, value: Any) -> Any:
    """Apply ``fn`` to every tensor in a batch made of tensors, tuples, lists and dicts."""
    import torch

    if isinstance(value, torch.Tensor):
        return fn(value)
    if isinstance(value, tuple):
        return tuple(tree_map(fn, v) for v in value)
    if isinstance(value, list):
        return [tree_map(fn, v) for v in value]
    if isinstance(value, dict):
        return {k: tree_map(fn, v) for k, v in value.items()}
    return value


def free_device_memory(device: str) -> None:
    """Return cached blocks after an OOM so the next point starts clean."""
    if device == "cuda":
        import torch

        torch.cuda.empty_cache()
