"""``agreement``: does a variant of the training step still compute the same thing as the reference?

One batch, one set of weights. The reference arm (fp32, eager, full logits) runs forward and
backward twice: the second run against the first is the noise floor (non-deterministic kernels
included). Each variant arm is built fresh with its own options (bf16 autocast, ``torch.compile``,
chunked loss, activation checkpointing), loads the reference's weights, and runs forward and
backward once on the same batch. Its loss, logits (when the arm makes them) and every gradient
are compared with the reference's through ``measure.compare``: max absolute error, relative L2,
cosine similarity, sign agreement. The verdict of an arm is stated and recorded: for each quantity,
relative L2 <= max(``noise_factor`` x the noise floor, the arm's floor), the floor being
``bf16_floor`` for an arm that computes in bf16 and ``fp32_floor`` for one that only reorders fp32
arithmetic. ``identical`` (the reference's own configuration, built again) must agree to the noise
floor; ``perturbed`` (every weight scaled by ``1 + perturb``) exists to show a verdict can fail.
What each arm ran (SDPA backend, compilation, dtype) is observed from one profiled step after it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from measure.compare import BF16_FLOOR, FP32_FLOOR, NOISE_FACTOR
from measure.device_check import resolve_device
from measure.errors import ProbebookError
from measure.evidence.envelope import Evidence
from measure.options import option
from measure.probes.common import (
    CommonConfig,
    mark_engagement,
    positive,
    record_workload,
    refuse_unused,
    release_device,
)
from measure.run.runner import Recorder, execute

PROBE = "agreement"
VERSION = 1
HELP = "Loss, logits and every gradient of variant steps against fp32 eager on one batch, with a noise floor."
EXAMPLE = "probebook measure agreement --preset 250m --arms bf16,compiled,chunked"


@dataclass(frozen=True)
class ArmSpec:
    """How a variant arm differs from the reference (fp32, eager, materialized loss)."""

    dtype: str = "fp32"
    compile: bool = False
    checkpointing: bool = False
    loss_kind: str = "materialized"
    perturbed: bool = False


ARMS = {
    "identical": ArmSpec(),
    "bf16": ArmSpec(dtype="bf16"),
    "compiled": ArmSpec(compile=True),
    "bf16-compiled": ArmSpec(dtype="bf16", compile=True),
    "chunked": ArmSpec(loss_kind="chunked"),
    "bf16-chunked": ArmSpec(dtype="bf16", loss_kind="chunked"),
    "checkpointing": ArmSpec(checkpointing=True),
    "perturbed": ArmSpec(perturbed=True),
}
DEFAULT_ARMS = ("identical", "bf16", "compiled", "bf16-compiled", "chunked", "checkpointing")


@dataclass(frozen=True)
class Config(CommonConfig):
    """Options of the agreement probe (shared ones from ``CommonConfig``; a plug-in must set ``Workload.forward``)."""

    SESSIONED = False  # a numerical comparison, not a timing

    dtype: str = option("fp32", choices=("fp32",))
    """The reference arm computes in fp32; the bf16 arms are variants (``--arms``)."""
    batch: int | None = None
    """Batch size (default 4 on CUDA, 2 on CPU)."""
    seq_len: int | None = None
    """Sequence length (default 2048 on CUDA, 64 on CPU)."""
    arms: tuple[str, ...] = option(DEFAULT_ARMS, choices=tuple(ARMS))
    """Variant arms, a comma list of identical, bf16, compiled, bf16-compiled, chunked, bf16-chunked, ..."""
    chunk_tokens: int | None = None
    """Tokens per chunk of the chunked-loss arms (default 1024 on CUDA, 32 on CPU)."""
    noise_factor: float = NOISE_FACTOR
    """An arm passes when its relative L2 <= max(noise_factor x noise floor, its floor)."""
    bf16_floor: float = BF16_FLOOR
    """Relative L2 allowed to an arm computing in bf16, whatever the noise floor."""
    fp32_floor: float = FP32_FLOOR
    """Relative L2 allowed to an fp32 arm that only reorders arithmetic (compile, chunking, recompute)."""
    perturb: float = 1e-2
    """Relative weight change of the ``perturbed`` arm (when it is listed in ``arms``)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        refuse_unused(self, ("compile", "checkpointing"), "agreement's arms set it (the compiled, checkpointing arms)")
        refuse_unused(self, ("warmup", "windows", "iters"), "agreement compares one step's outputs and times nothing")
        positive("batch", self.batch)
        positive("seq_len", self.seq_len)
        positive("chunk_tokens", self.chunk_tokens)
        unknown = [a for a in self.arms if a not in ARMS]
        if not self.arms or unknown or len(set(self.arms)) != len(self.arms):
            raise ProbebookError(f"--arms must be a comma list of distinct {', '.join(ARMS)}, got {list(self.arms)}")
        for name in ("noise_factor", "bf16_floor", "fp32_floor", "perturb"):
            value = getattr(self, name)
            if not value >= 0:
                raise ProbebookError(f"--{name.replace('_', '-')} must be >= 0, got {value}")


def floor_for(spec: ArmSpec, config: Config) -> float:
    """The arm's stated floor (a relative L2 fraction): bf16 arithmetic gets ``bf16_floor``, else ``fp32_floor``."""
    return config.bf16_floor if spec.dtype == "bf16" else config.fp32_floor


def _forward(workload: Any, spec: ArmSpec, device: str, chunk_tokens: int) -> Any:
    """``forward(batch) -> (loss, logits or None)`` of an arm."""
    if spec.loss_kind == "materialized":
        if workload.forward is None:
            raise ProbebookError(
                f"workload {workload.name} has no forward(batch) -> (loss, logits); set Workload.forward"
            )
        return workload.forward
    import torch

    from measure.workload.losses import chunked_cross_entropy

    head = workload.head
    if head is None:
        raise ProbebookError(
            f"--arms: the chunked-loss arms need head(batch) -> (hidden, head_weight, targets), which workload "
            f"{workload.name} does not set (Workload.head); drop them"
        )

    def chunked(batch: Any) -> tuple[Any, None]:
        with torch.autocast(device, dtype=torch.bfloat16, enabled=spec.dtype == "bf16"):
            hidden, weight, targets = head(batch)
            return chunked_cross_entropy(hidden, targets, weight, chunk_tokens), None

    return chunked


def _rows(arm: str, result: dict[str, Any], judged: dict[str, Any]) -> list[dict[str, Any]]:
    """One sample per compared quantity of an arm: the four metrics, its noise floor, limit and verdict."""
    rows = []
    for check in judged["checks"]:
        m = result[check["quantity"]]
        rows.append(
            {
                "arm": arm,
                "quantity": check["quantity"],
                "rel_l2": m["rel_l2"],
                "max_abs_error": m["max_abs_error"],
                "cosine": m["cosine"],
                "sign_agreement": m["sign_agreement"],
                "elements": m["elements"],
                "noise_floor": check["noise_floor"],
                "limit": check["limit"],
                "passed": check["passed"],
            }
        )
    return rows


def run(config: Config, journal: Any = None, progress: bool = False) -> Evidence:
    """Compare every arm with the reference on one batch; return the evidence (not stored)."""
    device = resolve_device(config.device)
    batch_size = config.batch or (4 if device == "cuda" else 2)
    seq_len = config.seq_len or (2048 if device == "cuda" else 64)
    chunk = config.chunk_tokens or (1024 if device == "cuda" else 32)
    params = {
        **{
            k: getattr(config, k)
            for k in (
                *("preset", "workload", "seed", "noise_factor", "bf16_floor", "fp32_floor"),
                *("sliding_window", "global_every"),
            )
        },
        "device": device,
        "device_requested": config.device,
        "batch": batch_size,
        "seq_len": seq_len,
        "chunk_tokens": chunk,
        "arms": list(config.arms),
        "perturb": config.perturb if "perturbed" in config.arms else None,
        "reference": {"dtype": "fp32", "compile": False, "checkpointing": False, "loss": "materialized"},
    }

    def body(rec: Recorder) -> None:
        import torch

        from measure.compare import compare_outputs, judge, step_outputs
        from measure.workload import WorkloadOptions, load_workload
        from measure.workload.observe import observe

        def build(spec: ArmSpec) -> Any:
            options = WorkloadOptions(
                preset=config.preset,
                device=device,
                compile=spec.compile,
                checkpointing=spec.checkpointing,
                dtype=spec.dtype,
                seed=config.seed,
                sliding_window=config.sliding_window,
                global_every=config.global_every,
            )
            return load_workload(options, config.workload)

        reference = build(ArmSpec())
        record_workload(rec, reference)
        batch = reference.make_batch(batch_size, seq_len)
        weights = {k: v.detach().clone() for k, v in reference.model.state_dict().items()}
        forward = _forward(reference, ArmSpec(), device, chunk)
        first = step_outputs(reference.model, forward, batch)
        second = step_outputs(reference.model, forward, batch)
        if not bool(torch.isfinite(first["loss"])):
            raise ProbebookError(f"the reference loss is {float(first['loss'])}: nothing to agree with")
        noise = compare_outputs(first, second)
        rec.data["noise_floor"] = noise
        rec.data["reference_loss"] = float(first["loss"])
        del second
        summaries = []
        for name in config.arms:
            spec = ARMS[name]
            arm_info: dict[str, Any] = {"arm": name, **vars(spec), "floor": floor_for(spec, config)}
            try:
                workload = build(spec)
                workload.model.load_state_dict(weights)
                if spec.perturbed:
                    with torch.no_grad():
                        for p in workload.model.parameters():
                            p.mul_(1.0 + config.perturb)
                result = step_outputs(workload.model, _forward(workload, spec, device, chunk), batch)
            except ProbebookError:
                raise
            except torch.OutOfMemoryError as exc:
                arm_info.update({"status": "oom", "error": str(exc).splitlines()[0][:300], "passed": False})
                summaries.append(arm_info)
                rec.point([], arm_info, f"{name}: OOM")
                workload = result = None
                release_device(device)
                continue
            except Exception as exc:  # a variant that cannot run (e.g. compilation fails) is a recorded outcome
                arm_info.update({"status": "error", "error": f"{type(exc).__name__}: {exc}"[:300], "passed": False})
                summaries.append(arm_info)
                rec.point([], arm_info, f"{name}: {arm_info['error']}")
                continue
            assert result is not None  # an arm that did not run went on to the next above
            seen = observe(workload, batch, device)
            mark_engagement(rec, seen, compile_requested=spec.compile, device=device, dtype=spec.dtype, where=name)
            compared = compare_outputs(first, result)
            judged = judge(compared, noise, arm_info["floor"], config.noise_factor)
            arm_info.update(
                {
                    "status": "ok",
                    "loss": float(result["loss"]),
                    "passed": judged["passed"],
                    "tolerance": judged["tolerance"],
                    "grad_worst": compared["grad_worst"],
                    "observed": seen,
                }
            )
            summaries.append(arm_info)
            rels = ", ".join(f"{c['quantity']} {c['rel_l2']:.2e}" for c in judged["checks"] if c["rel_l2"] is not None)
            rec.point(
                _rows(name, compared, judged), arm_info, f"{name}: {'pass' if judged['passed'] else 'FAIL'} {rels}"
            )
            del workload, result
            release_device(device)
        rec.data["arms"] = summaries

    return execute(PROBE, VERSION, params, __file__, body, journal, progress)
