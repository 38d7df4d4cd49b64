"""``gemm``: matmul TFLOP/s on the workload's own linear-layer shapes, a square reference, and a ceiling.

Every linear y = x W^T of one training step runs three GEMMs (forward, input gradient, weight
gradient); each is timed with the operand layouts the step uses (W^T and dY^T are transposed
views, not copies). The square reference is N x N x N (8192 on CUDA). Operands are random
normal, never zeros (zeros let some hardware skip work and report a false peak). The
FLOP-weighted ceiling is sum(count * flops) / sum(count * time): the rate the step's GEMMs
would reach if each ran as fast as it does alone. The SM clock is read before and after, and on
CUDA sampled by NVML on a thread during every timed window (``measure.utilisation``, version 2): each
row carries its window's clock (``sm_clock_mhz_min/median/max``) and the ceiling the median over its
windows (``ceiling.sm_clock_mhz_median``), so a same-session ceiling can say whether it ran at the
step's clock (issue 27). On CPU the default dtype is fp32 and the shapes are small (``--tokens``,
``--square``); no clock is sampled (``data.clock_sampling`` says why).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from measure.device_check import resolve_device
from measure.errors import ProbebookError
from measure.evidence.clocks import window_clock_mhz
from measure.evidence.envelope import Evidence
from measure.options import option
from measure.probes.common import CommonConfig, positive
from measure.run.runner import Recorder, execute
from measure.run.sessions import in_sessions
from measure.timing import energy_field

PROBE = "gemm"
VERSION = 2  # 2: the SM clock sampled in every timed window
HELP = "Matmul TFLOP/s on the workload's linear-layer shapes, a square reference, and the FLOP-weighted ceiling."
EXAMPLE = "probebook measure gemm --preset 250m --device cuda"
GEMM_DTYPES = ("auto", "bf16", "fp16", "fp32")


@dataclass(frozen=True)
class Config(CommonConfig):
    """Options of the gemm probe."""

    tokens: int | None = None
    """Tokens per step, the M of the workload's GEMMs (default 16384 on CUDA, 256 on CPU)."""
    square: int | None = None
    """Side of the square reference GEMM (default 8192 on CUDA, 512 on CPU)."""
    gemm_dtype: str = option("auto", choices=GEMM_DTYPES)
    """Operand dtype: bf16 on CUDA and fp32 on CPU when ``auto``."""
    window_s: float = 0.02
    """Target seconds per window; calls per window are calibrated to reach it (at least ``iters``)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        positive("tokens", self.tokens)
        positive("square", self.square)
        if not self.window_s > 0:
            raise ProbebookError(f"--window-s must be > 0, got {self.window_s}")


def gemm_flops(m: int, n: int, k: int) -> int:
    """Floating-point operations of one (m x k) @ (k x n) product: 2*m*n*k (a multiply and an add each)."""
    return 2 * m * n * k


def tflop_s(flops: float, seconds: float) -> float:
    """Rate in TFLOP/s (10^12 floating-point operations per second)."""
    return flops / seconds / 1e12


def flop_weighted_tflop_s(points: list[dict[str, Any]]) -> float:
    """sum(count * flops) / sum(count * median_s) over the workload shapes, in TFLOP/s."""
    flops = sum(p["count"] * p["flops"] for p in points)
    seconds = sum(p["count"] * p["median_s"] for p in points)
    return tflop_s(flops, seconds)


def shapes_from_model(model: Any, tokens: int) -> list[dict[str, Any]]:
    """The fwd/dgrad/wgrad GEMMs of every ``nn.Linear`` in a model (shared weights once), grouped by shape."""
    from torch import nn

    seen: set[int] = set()
    counts: dict[tuple[int, int], int] = {}
    for module in model.modules():
        if isinstance(module, nn.Linear) and id(module.weight) not in seen:
            seen.add(id(module.weight))
            key = (module.out_features, module.in_features)
            counts[key] = counts.get(key, 0) + 1
    out = []
    for (n_out, n_in), count in counts.items():
        name = f"linear{n_in}x{n_out}"
        out += [
            {"name": f"{name}.fwd", "m": tokens, "n": n_out, "k": n_in, "count": count},
            {"name": f"{name}.dgrad", "m": tokens, "n": n_in, "k": n_out, "count": count},
            {"name": f"{name}.wgrad", "m": n_out, "n": n_in, "k": tokens, "count": count},
        ]
    return out


def _operands(torch: Any, name: str, m: int, n: int, k: int, dtype: Any, device: str, gen: Any) -> tuple[Any, Any]:
    """A (m x k) and B (k x n) laid out as the training step has them: fwd x @ W^T, wgrad dY^T @ X."""

    def rand(*shape: int) -> Any:
        return torch.randn(*shape, dtype=dtype, device=device, generator=gen)

    if name.endswith(".fwd"):
        return rand(m, k), rand(n, k).t()  # x @ W^T, W stored (out, in)
    if name.endswith(".wgrad"):
        return rand(k, m).t(), rand(k, n)  # dY^T @ X, dY stored (tokens, out)
    return rand(m, k), rand(k, n)  # dgrad dY @ W, and the square reference


@in_sessions
def run(config: Config, journal: Any = None, progress: bool = False) -> Evidence:
    """Time every workload GEMM shape and the square reference; return the evidence (not stored)."""
    device = resolve_device(config.device)
    tokens = config.tokens or (16384 if device == "cuda" else 256)
    square = config.square or (8192 if device == "cuda" else 512)
    dtype_name = config.gemm_dtype if config.gemm_dtype != "auto" else ("bf16" if device == "cuda" else "fp32")
    params = {**config.params(device), "tokens": tokens, "square": square, "gemm_dtype": dtype_name}

    def body(rec: Recorder) -> None:
        import torch

        from measure.integrity import WindowWatch
        from measure.timing import clock_for, sm_clock, sync_for
        from measure.utilisation import INTERVAL_S, Sampler, nvml_reader
        from measure.workload.presets import PRESETS, linear_shapes

        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[dtype_name]
        if config.workload:
            from measure.workload import load_workload

            workload = load_workload(config.workload_options(device), config.workload)
            shapes = shapes_from_model(workload.model, tokens)
            del workload
            rec.params["shape_source"] = "nn.Linear modules of the plug-in model"
        else:
            shapes = linear_shapes(PRESETS[config.preset], tokens)
            rec.params["shape_source"] = f"reference preset {config.preset}"
        shapes.append({"name": f"square-{square}", "m": square, "n": square, "k": square, "count": 0})
        clock, sync = clock_for(device), sync_for(device)
        gen = torch.Generator(device=device).manual_seed(config.seed)
        rec.data["clocks"] = {"sm_mhz_before": sm_clock(device)}
        read, why_not = nvml_reader() if device == "cuda" else (None, "no NVML on a CPU run")
        sampler = Sampler(read).start() if read is not None else None
        rec.data["clock_sampling"] = {
            "sampling": sampler is not None,
            "why_not": why_not,
            "interval_s": INTERVAL_S if sampler is not None else None,
            "nvml_device": getattr(read, "device", None),
        }
        watch = WindowWatch(None, sampler)
        try:
            _time_shapes(rec, shapes, config, torch, dtype, device, gen, clock, sync, watch)
        finally:
            if sampler is not None:
                sampler.stop()
        rec.data["clocks"]["sm_mhz_after"] = sm_clock(device)
        workload_points = [p for p in rec.points if p["count"] > 0]
        square_point = rec.points[-1]
        workload_shapes = {p["shape"] for p in workload_points}
        rec.data["ceiling"] = {
            "flop_weighted_tflop_s": flop_weighted_tflop_s(workload_points),
            "square_tflop_s": square_point["tflop_s"],
            "square_n": square,
            "square_8192_tflop_s": square_point["tflop_s"] if square == 8192 else None,
            "sm_clock_mhz_median": window_clock_mhz([r for r in rec.samples if r["shape"] in workload_shapes]),
            "square_sm_clock_mhz_median": window_clock_mhz(
                [r for r in rec.samples if r["shape"] == square_point["shape"]]
            ),
        }

    return execute(PROBE, VERSION, params, __file__, body, journal, progress)


def _time_shapes(
    rec: Recorder,
    shapes: list[dict[str, Any]],
    config: Config,
    torch: Any,
    dtype: Any,
    device: str,
    gen: Any,
    clock: Any,
    sync: Any,
    watch: Any,
) -> None:
    """Time every shape's GEMM in windows, each window's clock sampled by ``watch``; one point per shape."""
    from measure.integrity import utilisation_row
    from measure.timing import WindowPlan, time_windows

    for shape in shapes:
        name, m, n, k = shape["name"], shape["m"], shape["n"], shape["k"]
        a, b = _operands(torch, name, m, n, k, dtype, device, gen)
        out = torch.empty(m, n, dtype=dtype, device=device)

        # operands bound as defaults: the closure must not see a later shape's (or a deleted) name
        def call(a: Any = a, b: Any = b, out: Any = out) -> None:
            torch.mm(a, b, out=out)

        for _ in range(max(1, config.warmup)):
            call()
        once = clock.time(call, 1)
        iters = max(config.iters, min(10_000, int(config.window_s / max(once, 1e-9))))
        plan = WindowPlan(warmup=config.warmup, windows=config.windows, iters=iters)
        result = time_windows(call, clock, plan, sync, watch)
        flops = gemm_flops(m, n, k)
        rows = [
            {
                "shape": name,
                "m": m,
                "n": n,
                "k": k,
                "window": i,
                "time_s": t,
                "tflop_s": tflop_s(flops, t),
                "sm_clock_mhz": mhz,
                **energy_field(joules),
                **utilisation_row((c or {}).get("utilisation")),
            }
            for i, (t, c, mhz, joules) in enumerate(
                zip(result.times_s, result.checks, result.sm_clock_mhz, result.energy_j, strict=True)
            )
        ]
        point = {
            "shape": name,
            "m": m,
            "n": n,
            "k": k,
            "count": shape["count"],
            "flops": flops,
            "median_s": result.median_s,
            "tflop_s": tflop_s(flops, result.checked_median_s),
            "cv": result.cv,
            "unstable": result.unstable,
            "iters_per_window": iters,
        }
        rec.point(rows, point, f"{name} {m}x{n}x{k}: {point['tflop_s']:.2f} TFLOP/s")
        del a, b, out, call
