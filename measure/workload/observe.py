"""Observe what actually ran in one training step: SDPA backend, compilation, compute dtype, loss op.

Everything here is read from a ``torch.profiler`` trace of a real step (operator names) and a
forward hook on the model (output dtype); nothing is inferred from a flag (ARCHITECTURE.md §Workloads).
"""

from __future__ import annotations

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
    if isinstance(value, dict) and value:
        return _tensor_dtype(next(iter(value.values())))
    return None


def profiled_step(workload: Any, batch: Any, device: str) -> tuple[Any, dict[str, str | None]]:
    """Run one step under the profiler (CPU activity only: operator names, no CUPTI); read nothing yet.

    Returns the stopped profiler and what the forward hook saw. Its events are parsed only when
    ``read_trace`` asks (torch parses a trace lazily), so a caller may give the device back first.
    """
    import torch
    from torch.profiler import ProfilerActivity, profile

    seen: dict[str, str | None] = {}

    def hook(_module: Any, _inputs: Any, output: Any) -> None:
        seen.setdefault("dtype", _tensor_dtype(output))

    handle = workload.model.register_forward_hook(hook)
    try:
        with profile(activities=[ProfilerActivity.CPU]) as prof:
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


def engagement_marks(
    observed: dict[str, Any], *, compile_requested: bool, device: str, dtype: str, where: str = ""
) -> list[dict[str, Any]]:
    """What was requested or expected but did not run, as evidence marks (pure; ``observed`` from ``read_trace``).

    A mark is ``{"kind", "where", "requested" or "expected", "observed", "message"}``: ``compile-not-engaged``
    when ``--compile`` was given and no compiled region ran; ``unexpected-sdpa-backend`` when attention ran on a
    backend outside ``EXPECTED_SDPA`` for the device and dtype. No attention op (a plug-in without attention):
    no backend mark.
    """
    marks: list[dict[str, Any]] = []
    at = f" ({where})" if where else ""
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
