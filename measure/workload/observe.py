"""Observe what actually ran in one training step: SDPA backend, compilation, compute dtype, loss op.

Everything here is read from a ``torch.profiler`` trace of a real step (operator names) and a
forward hook on the model (output dtype); nothing is inferred from a flag (ARCHITECTURE.md §Workloads).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

# aten operator names -> SDPA backend; the first match wins (cudnn/flash/efficient before math)
_SDPA = (
    ("cudnn_attention", "cudnn"),
    ("flash_attention_for_cpu", "flash-cpu"),
    ("flash_attention", "flash"),
    ("efficient_attention", "efficient"),
    ("attention_math", "math"),
)
_LOSS = ("cross_entropy", "nll_loss", "log_softmax")


def sdpa_backend(op_names: set[str]) -> str | None:
    """The SDPA backend named by the profiled aten ops, or None when no attention op ran."""
    for fragment, backend in _SDPA:
        if any(fragment in name for name in op_names):
            return backend
    return None


def compiled_regions(op_names: dict[str, int]) -> int:
    """How many torch.compile regions ran (profiler rows 'Torch-Compiled Region: ...')."""
    return sum(count for name, count in op_names.items() if name.startswith("Torch-Compiled Region"))


def _tensor_dtype(value: Any) -> str | None:
    import torch

    if isinstance(value, torch.Tensor):
        return str(value.dtype).replace("torch.", "")
    if isinstance(value, (tuple, list)) and value:
        return _tensor_dtype(value[0])
    if isinstance(value, dict) and value:  # a HuggingFace output: its logits, not a loss computed in float32
        return _tensor_dtype(value["logits"] if "logits" in value else next(iter(value.values())))
    return None


def profiled_step(workload: Any, batch: Any, device: str) -> tuple[Any, dict[str, str | None]]:
    """Run one step under the profiler (CPU activity only: operator names, no CUPTI); read nothing yet.

    Returns the stopped profiler and what the forward hook saw. Its events are parsed only when
    ``read_trace`` asks (torch parses a trace lazily), so a caller may give the device back first.
    """
    import torch
    from torch.profiler import ProfilerActivity, profile

    from measure.progress import profiler_stderr

    seen: dict[str, str | None] = {}

    def hook(_module: Any, _inputs: Any, output: Any) -> None:
        seen.setdefault("dtype", _tensor_dtype(output))

    handle = workload.model.register_forward_hook(hook)
    try:
        with profiler_stderr(), profile(activities=[ProfilerActivity.CPU]) as prof:
            workload.step(batch)
            if device == "cuda":
                torch.cuda.synchronize()
    finally:
        handle.remove()
    return prof, seen


def read_trace(step: tuple[Any, dict[str, str | None]]) -> dict[str, Any]:
    """What a ``profiled_step`` ran: ``{sdpa_backend, compile_engaged, compiled_regions, dtype, loss_ops}``."""
    prof, seen = step
    counts: dict[str, int] = {}
    for event in prof.key_averages():
        counts[event.key] = counts.get(event.key, 0) + event.count
    regions = compiled_regions(counts)
    return {
        "sdpa_backend": sdpa_backend(set(counts)),
        "compile_engaged": regions > 0,
        "compiled_regions": regions,
        "dtype": seen.get("dtype"),
        "loss_ops": sorted(n for n in counts if any(f in n for f in _LOSS)),
    }


def observe(workload: Any, batch: Any, device: str) -> dict[str, Any]:
    """Run one step under the profiler and read it (``profiled_step`` then ``read_trace``).

    Returns ``{sdpa_backend, compile_engaged, compiled_regions, dtype, loss_ops}``.
    """
    return read_trace(profiled_step(workload, batch, device))


# SDPA backends a step is expected to take, by device and compute dtype: on CUDA the fused kernels
# (flash and cuDNN take bf16, not fp32; memory-efficient takes both), on the CPU its flash kernel or
# math. A step outside these ran a slower path than the one its numbers will be read as (issue 27).
EXPECTED_SDPA: dict[tuple[str, str], tuple[str, ...]] = {
    ("cuda", "bf16"): ("cudnn", "flash", "efficient"),
    ("cuda", "fp32"): ("efficient", "math"),
    ("cpu", "bf16"): ("flash-cpu", "math"),
    ("cpu", "fp32"): ("flash-cpu", "math"),
}


# the model output's dtype each --dtype gives: bf16 autocast leaves its matmuls' outputs in bfloat16; fp32 runs none
# in a half type. A harness that returns float32 logits under bf16 autocast (an explicit upcast) is marked too:
# the hook cannot tell an upcast from a step that never entered autocast, and says what it saw.
EXPECTED_OUTPUT_DTYPES: dict[str, tuple[str, ...]] = {"bf16": ("bfloat16",), "fp32": ("float32", "float64")}


def workload_marks(*, attention_shape: bool, ignored: dict[str, Any]) -> list[dict[str, Any]]:
    """What a loaded workload cannot record or did not take, as evidence marks (pure; see ``engagement_marks``).

    ``flops-unknown`` when the workload gives no attention shape (``layers``, ``heads``, ``head_dim``): model FLOPs
    per token are not recorded and a parameter-only estimate leaves the attention term out. ``option-ignored``
    for each option of ``ignored``, ``{name: value}`` (set on the command line, never read by the plug-in's factory).
    """
    marks: list[dict[str, Any]] = []
    if not attention_shape:
        marks.append(
            {
                "kind": "flops-unknown",
                "where": "",
                "observed": None,
                "message": "the workload gives no layers/heads/head_dim: model FLOPs per token are not recorded "
                "(params.model_flops_per_token null; a 6·P estimate leaves attention out)",
            }
        )
    for name, value in ignored.items():
        flag = "--" + name.replace("_", "-")
        marks.append(
            {
                "kind": "option-ignored",
                "where": "",
                "requested": value,
                "observed": None,
                "message": f"{flag} {value} was given but the plug-in's factory never read options.{name}: "
                "it did not shape the run",
            }
        )
    return marks


def engagement_marks(
    observed: dict[str, Any], *, compile_requested: bool, device: str, dtype: str, where: str = ""
) -> list[dict[str, Any]]:
    """What was requested or expected but did not run, as evidence marks (pure; ``observed`` from ``read_trace``).

    A mark is ``{"kind", "where", "requested" or "expected", "observed", "message"}``: ``compile-not-engaged``
    when ``--compile`` was given and no compiled region ran; ``dtype-not-honoured`` when the model's output came
    out in another dtype than ``--dtype`` asks (``float32`` under ``bf16``, or a half type under ``fp32``);
    ``unexpected-sdpa-backend`` when attention ran on a backend outside ``EXPECTED_SDPA`` for the device and dtype.
    No attention op (a plug-in without attention): no backend mark. No output seen: no dtype mark.
    """
    marks: list[dict[str, Any]] = []
    at = f" ({where})" if where else ""
    ran = observed.get("dtype", observed.get("observed_dtype"))  # a batch-sweep row names it observed_dtype
    if ran is not None and ran not in EXPECTED_OUTPUT_DTYPES.get(dtype, (ran,)):
        marks.append(
            {
                "kind": "dtype-not-honoured",
                "where": where,
                "requested": dtype,
                "observed": ran,
                "message": f"--dtype {dtype} was requested but the model's output was {ran}{at}: the step did not "
                f"run in {dtype} (the harness ignores options.dtype?)",
            }
        )
    if compile_requested and not observed.get("compile_engaged"):
        marks.append(
            {
                "kind": "compile-not-engaged",
                "where": where,
                "requested": True,
                "observed": False,
                "message": f"--compile was requested but no compiled region ran{at}: the step ran eager",
            }
        )
    backend = observed.get("sdpa_backend")
    expected = EXPECTED_SDPA.get((device, dtype))
    if backend is not None and expected is not None and backend not in expected:
        marks.append(
            {
                "kind": "unexpected-sdpa-backend",
                "where": where,
                "expected": list(expected),
                "observed": backend,
                "message": f"attention ran on SDPA's {backend} backend{at}; expected {' or '.join(expected)} "
                f"on {device} in {dtype}",
            }
        )
    return marks


def workload_facts(workload: Any) -> dict[str, Any]:
    """What a probe records about the workload it loaded: its name and both parameter counts.

    ``n_params`` stays the trainable count it always was; ``n_params_total`` adds frozen weights
    (a LoRA base), which model FLOPs and ``T = 20·P/R`` projections need (issue 27).
    """
    return {
        "workload_name": workload.name,
        "n_params": workload.n_params,
        "n_params_trainable": workload.n_params,
        "n_params_total": workload.n_params_total,
        "uses_preset": workload.uses_preset,
        "workload_source": workload.source,
        "n_params_active": workload.n_params_active,
        "moe_shape": workload.moe_shape,
        "lost": lost_marks(workload),
        "vocab": workload.vocab,
        "loss_precision": None if workload.loss_precision is None else asdict(workload.loss_precision),
    }


def lost_marks(workload: Any) -> list[dict[str, Any]]:
    """What the loaded workload cannot record or did not take (``measure.workload.observe.workload_marks``)."""
    shaped = workload.layers is not None and bool(workload.heads) and bool(workload.head_dim)
    return workload_marks(attention_shape=shaped, ignored=workload.ignored)
