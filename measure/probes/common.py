"""Config fields and helpers shared by the workload probes (not a probe itself; imports no torch at load)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from measure.errors import ProbebookError
from measure.timing import WindowPlan
from measure.workload import DTYPES, WorkloadOptions, check_window
from measure.workload.presets import PRESETS

DEVICE_CHOICES = ("auto", "cpu", "cuda")


@dataclass(frozen=True)
class CommonConfig:
    """Options every workload probe takes."""

    preset: str = "tiny"
    """Reference preset (``--preset``); ignored by a plug-in that does not read it."""
    device: str = "auto"
    """``cpu``, ``cuda``, or ``auto`` (cuda when torch sees one)."""
    compile: bool = False
    """Compile the model's blocks with torch.compile."""
    checkpointing: bool = False
    """Activation checkpointing per block."""
    dtype: str = "bf16"
    """Compute dtype: ``bf16`` autocast or ``fp32``."""
    workload: str | None = None
    """``package.module:factory`` of a user's harness; None for the reference decoder."""
    seed: int = 0
    """Seed for weights, tokens and random operands."""
    warmup: int = 3
    """Untimed calls before timing each point or arm."""
    windows: int = 5
    """Timed windows (or interleaved rounds) per point."""
    iters: int = 3
    """Calls per window."""
    sliding_window: int | None = None
    """Reference decoder: local layers attend to the last W keys (None: every layer global)."""
    global_every: int | None = None
    """With a window: every K-th layer stays global (None: every layer local)."""

    def __post_init__(self) -> None:
        check_window(self.sliding_window, self.global_every)
        if self.workload is None and self.preset not in PRESETS:
            raise ProbebookError(f"--preset {self.preset!r} is unknown; choose one of {', '.join(PRESETS)}")
        if self.device not in DEVICE_CHOICES:
            raise ProbebookError(f"--device must be one of {', '.join(DEVICE_CHOICES)}, got {self.device!r}")
        if self.dtype not in DTYPES:
            raise ProbebookError(f"--dtype must be one of {', '.join(DTYPES)}, got {self.dtype!r}")
        for name, low in (("warmup", 0), ("windows", 1), ("iters", 1)):
            if getattr(self, name) < low:
                raise ProbebookError(f"--{name} must be >= {low}, got {getattr(self, name)}")

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
        return WorkloadOptions(
            preset=self.preset,
            device=device,
            compile=self.compile,
            checkpointing=self.checkpointing,
            dtype=self.dtype,
            seed=self.seed,
            sliding_window=self.sliding_window,
            global_every=self.global_every,
        )


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
