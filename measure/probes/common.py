"""Config fields and helpers shared by the workload probes (not a probe itself; imports no torch at load)."""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, fields
from typing import Any

from measure.errors import ProbebookError
from measure.options import check_choices, option
from measure.timing import SessionFields, TimingFields, WindowPlan
from measure.workload import WorkloadFields, WorkloadOptions, check_window
from measure.workload.observe import workload_facts
from measure.workload.presets import PRESETS

DEVICE_CHOICES = ("auto", "cpu", "cuda")
log = logging.getLogger(__name__)


class BudgetSpent(RuntimeError):
    """A probe's ``--budget-s`` ran out before every planned point was measured.

    Raised between points, never inside a timed window; ``measure.run.runner.execute`` turns it into
    ``partial`` evidence holding the points measured so far, with this message as its ``error``.
    """


@dataclass(frozen=True)
class CommonConfig(TimingFields, SessionFields, WorkloadFields):
    """Options every workload probe takes: the workload's, the timing's and the sessions' fields, the device and a
    plug-in."""

    device: str = option("auto", choices=DEVICE_CHOICES)
    """Where to run: ``cpu``, ``cuda``, or ``auto`` (cuda when torch sees one, else cpu)."""
    workload: str | None = option(None, metavar="PKG.MOD:FACTORY")
    """Time your own model: ``package.module:factory`` returning a Workload or (model, make_batch, step[, optimizer]);
    the contract, what each field enables and an example: README.md, "Measure your own model"."""

    def __post_init__(self) -> None:
        check_window(self.sliding_window, self.global_every)
        if self.workload is None and self.preset not in PRESETS:
            raise ProbebookError(f"--preset {self.preset!r} is unknown; choose one of {', '.join(PRESETS)}")
        check_choices(self)
        self.check_sessions()
        super().__post_init__()

    def plan(self) -> WindowPlan:
        return WindowPlan(warmup=self.warmup, windows=self.windows, iters=self.iters)

    def params(self, device: str) -> dict[str, Any]:
        """The config as evidence params, with the device as resolved."""
        out = asdict(self)
        out["device"] = device
        out["device_requested"] = self.device
        out["iters_per_window"] = self.iters
        out["sessions"] = self.session_count(device)  # as resolved: how many processes measured the run
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


@dataclass(frozen=True)
class OptimizerFields:
    """The optimizer settings of the probes that run the workload's training step (optimizer, batch-sweep), declared
    here only: ``apply_hyperparameters`` sets them on the optimizer's param groups and ``clipper`` clips inside the
    step, so both probes run the same update for the same options."""

    clip: float = 0.0
    """Clip the gradients' total norm to this inside every step, just before the update (clip_grad_norm_ from an
    optimizer step pre-hook); 0 (the default) turns clipping off, as the workload's own step does not clip."""
    beta1: float | None = None
    """Adam beta1 set on the optimizer's param groups (None: the workload's own)."""
    beta2: float | None = None
    """Adam beta2 set on the optimizer's param groups (None: the workload's own)."""
    weight_decay: float | None = None
    """Weight decay set on the optimizer's param groups (None: the workload's own)."""

    def check_optimizer_settings(self) -> None:
        """Refuse a negative clip, a beta outside [0, 1) or a negative weight decay, in one line naming the option."""
        if self.clip < 0:
            raise ProbebookError(f"--clip must be >= 0 (0 turns clipping off), got {self.clip}")
        for name in ("beta1", "beta2"):
            value = getattr(self, name)
            if value is not None and not 0 <= value < 1:
                raise ProbebookError(f"--{name} must be in [0, 1), got {value}")
        if self.weight_decay is not None and self.weight_decay < 0:
            raise ProbebookError(f"--weight-decay must be >= 0, got {self.weight_decay}")

    def sets_optimizer(self) -> bool:
        """Whether any setting reaches the optimizer (a clip, or a beta or weight decay given)."""
        return self.clip > 0 or any(v is not None for v in (self.beta1, self.beta2, self.weight_decay))


def apply_hyperparameters(optimizer: Any, config: OptimizerFields) -> dict[str, Any]:
    """Set ``--beta1``/``--beta2``/``--weight-decay`` where given on every param group; return what group 0 holds."""
    for group in optimizer.param_groups:
        if "betas" in group and (config.beta1 is not None or config.beta2 is not None):
            b1, b2 = group["betas"]
            group["betas"] = (
                b1 if config.beta1 is None else config.beta1,
                b2 if config.beta2 is None else config.beta2,
            )
        if config.weight_decay is not None and "weight_decay" in group:
            group["weight_decay"] = config.weight_decay
    first = optimizer.param_groups[0]
    betas = first.get("betas")
    return {
        "betas": [float(b) for b in betas] if betas is not None else None,
        "weight_decay": first.get("weight_decay"),
        "lr": float(first["lr"]) if "lr" in first else None,
    }


def clipper(optimizer: Any, max_norm: float, device: str) -> Any:
    """The clip both probes run inside the step: ``clip_grad_norm_`` to ``max_norm`` over the optimizer's parameters
    (a no-op at 0). A probe calls it from an optimizer step pre-hook, so it runs just before the update, inside the
    real step, for any workload."""
    import torch

    trained = [p for group in optimizer.param_groups for p in group["params"]]

    def clip() -> None:
        if max_norm > 0:  # foreach: the norm stays on the device, no host sync (also inside a capture)
            torch.nn.utils.clip_grad_norm_(trained, max_norm=max_norm, foreach=device == "cuda" or None)

    return clip


def configure_optimizer(workload: Any, config: OptimizerFields, device: str) -> dict[str, Any] | None:
    """Set the optimizer settings on the workload's optimizer for every step it will take (batch-sweep): betas and
    weight decay on its param groups (``apply_hyperparameters``) and, with ``--clip``, the clip as a step pre-hook
    (inside every step, captured with it under ``--cuda-graph``), as the optimizer probe's arms run it. Returns what
    group 0 holds and the clip (None for a workload that does not expose its optimizer and was given no setting);
    a setting it cannot reach is refused in one line."""
    opt = workload.optimizer
    if opt is None:
        if config.sets_optimizer():
            raise ProbebookError(
                f"--clip/--beta1/--beta2/--weight-decay: workload {workload.name} does not expose its optimizer; "
                "return it as the 4th item of the factory's tuple (or Workload.optimizer), or drop them"
            )
        return None
    settings = {**apply_hyperparameters(opt, config), "clip_max_norm": config.clip or None}
    if config.clip > 0:
        clip = clipper(opt, config.clip, device)
        opt.register_step_pre_hook(lambda *_: clip())  # lives as long as this point's optimizer
    return settings


PARAM_FACTS = ("workload_name", "n_params", "n_params_trainable", "n_params_total")
WORKLOAD_FACTS = ("vocab", "loss_precision")
"""Facts of the workload recorded in ``data.workload`` (issue 43: the vocabulary and the loss's precision)."""


def record_workload(rec: Any, workload: Any) -> None:
    """Record the loaded workload on ``rec`` (``record_facts`` of its ``workload_facts``)."""
    record_facts(rec, workload_facts(workload))


def record_facts(rec: Any, facts: dict[str, Any]) -> None:
    """Record ``workload_facts`` (made here or in a point's process) on ``rec``: counts in params, a plug-in's
    source hash in ``code``. A plug-in whose factory never read ``options.preset`` loses ``params.preset``: a
    default it ignored is not an input of the run."""
    rec.params.update({k: facts[k] for k in PARAM_FACTS})
    # beside params, not in them: a new param would change the run's configuration key (measure.evidence.configkey)
    rec.data["workload"] = {k: facts.get(k) for k in WORKLOAD_FACTS}
    if facts.get("n_params_active") is not None:  # a mixture of experts: what a token's forward uses
        rec.params["n_params_active"] = facts["n_params_active"]
    rec.params.update(facts.get("moe_shape") or {})  # and its shape, which a page states (issue 23)
    if not facts["uses_preset"]:
        rec.params.pop("preset", None)
    if facts["workload_source"] is not None:
        rec.add_code("workload_source", facts["workload_source"])
    add_marks(rec, facts.get("lost") or [])


def add_marks(rec: Any, marks: list[dict[str, Any]]) -> None:
    """Mark ``data.engagement_warnings`` and warn on stderr (``probebook: warning: ...``; ``Recorder.mark``). The
    run is kept (what it measured is true of what ran); the mark says what it is not."""
    rec.mark(marks)


def model_flops_per_token(
    workload: Any, seq_len: int, window: int | None = None, global_every: int | None = None
) -> int | None:
    """Model FLOPs per token of the workload's step at ``seq_len`` (``measure.evidence.flops``), frozen weights
    accounted for and local layers counted over ``window`` keys (``--sliding-window``, ``--global-every``);
    None for a plug-in that does not give its attention shapes (layers, heads, head_dim)."""
    from measure.evidence.flops import training_flops_per_token

    if workload.layers is None or workload.heads is None or workload.head_dim is None:
        return None
    used, trainable = workload.n_params_total, workload.n_params
    if workload.n_params_active is not None:  # only routed experts work for a token (flops.moe_active_params)
        used, trainable = workload.n_params_active, min(trainable, workload.n_params_active)
    return training_flops_per_token(
        used, trainable, workload.layers, workload.heads, workload.head_dim, seq_len, window, global_every
    )


def refuse_unused(config: Any, names: tuple[str, ...], why: str) -> None:
    """Refuse a shared option the probe inherits but does not use, when it is set away from its default.

    A probe that inherits ``CommonConfig`` (ARCHITECTURE.md §Probes) without using every field must not take
    such a value silently: the run would record an input that never shaped it.
    """
    for f in fields(config):
        if f.name in names and getattr(config, f.name) != f.default:
            raise ProbebookError(f"--{f.name.replace('_', '-')}: {why}; drop it")


def mark_engagement(
    rec: Any, observed: dict[str, Any], *, compile_requested: bool, device: str, dtype: str, where: str = ""
) -> list[dict[str, Any]]:
    """Warn on the terminal and mark ``data.engagement_warnings`` for what was requested but did not run.

    The marks are ``measure.workload.observe.engagement_marks``: a ``--compile`` that did not engage, an SDPA
    backend other than expected. The run is kept (what it measured is true of what ran); the mark says so.
    """
    from measure.workload.observe import engagement_marks

    marks = engagement_marks(observed, compile_requested=compile_requested, device=device, dtype=dtype, where=where)
    add_marks(rec, marks)
    return marks


def positive(name: str, value: int | None) -> None:
    """Refuse a non-positive option with one line naming it."""
    if value is not None and value < 1:
        raise ProbebookError(f"--{name.replace('_', '-')} must be >= 1, got {value}")


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


def release_device(device: str) -> None:
    """Return this process's cached device memory: after an OOM, so the next point starts clean, and before
    another point may take the device.

    Called inside a device lock, before it is released: a process that keeps its cached blocks
    while another takes the lock leaves that one a smaller card (the follow-up campaign's first H200
    run OOMed twice at batches the sweep fit, beside a neighbour holding 82 GiB).
    """
    import gc

    gc.collect()
    if device == "cuda":
        import torch

        try:
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
        except RuntimeError:  # a sticky CUDA error: the process's end returns the memory; the row says what happened
            pass
