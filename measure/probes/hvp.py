"""``hvp``: the cost and accuracy of a Hessian-vector product of the training loss.

Two ways to compute H·v for the loss L(θ) of one batch, v a fixed random direction:

* ``double-backward``: g = ∂L/∂θ with ``create_graph=True``, then H·v = ∂(g·v)/∂θ
  (``torch.autograd.grad`` twice; Pearlmutter 1994, "Fast exact multiplication by the Hessian").
* ``forward-over-reverse``: H·v = the JVP of θ -> ∇L(θ) in direction v
  (``torch.func.jvp(torch.func.grad(L), (θ,), (v,))``, the composition torch.func documents for HVPs).
  Under bf16 autocast the whole composition runs inside the autocast region, not only the forward
  (see ``hvp_forward_over_reverse``).

Each candidate (method x eager or ``torch.compile`` x dtype x batch) is called once cold, which is
timed by the host clock after a synchronize and holds compilation; its peak memory is the
first-call peak. Then warm calls are timed in windows (``measure.timing``) with their own peak.
Its result is compared (``measure.compare``) with a float64 double-backward H·v on the same
weights, batch and v: the relative L2 error of bf16 autocast and of fp32. Against an fp32 eager
double-backward H·v (the setting a bf16 run replaces) each candidate also records the quadratic
form vᵀHv and its sign, the split of its error into direction and curvature, and a verdict against
``--tolerance`` (``measure.curvature``). The compiler cache's state before the run is recorded
(``compiler_cache``): a warm on-disk cache shortens a compiled candidate's first call. Selection of the best
setting per dtype (the most tokens per second of H·v) excludes failed candidates and any whose
peak exceeds ``memory_limit`` of the device's memory.

Epoch statistics (version 4): ``--epoch-batches N`` (default 1, the timed batch alone) repeats each candidate's
accuracy comparison (vᵀHv and its sign, the relative errors against float64 and fp32, the verdict) on N distinct
data batches, same weights and v: batch 0 is the timed one, batch k the batch the workload makes with seed + k (a
workload whose batches do not change with the seed is refused in one line). Each batch's references are computed
again for each candidate, so at most one batch's references are held at once. ``data.epoch`` keeps one row per
candidate and batch, and each candidate's ``epoch`` holds ``measure.curvature.epoch_statistics``: mean, SD, min and
max of vᵀHv and of each relative error, and the shares of batches whose verdict agrees with the timed batch's, is
within tolerance, and whose sign agrees. The spread is across batches of one run, not across sessions. Timing is
unchanged: only the timed batch is timed.

Attention runs on SDPA's math kernel unless ``--sdpa default``: the math kernel is composed of
differentiable aten ops, so both methods can differentiate through it twice; with ``default``
a candidate that cannot is recorded as failed, with torch's one-line reason.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from measure.compiler_cache import cache_entries, cache_folder, compiler_cache
from measure.constants import WINDOWS
from measure.curvature import EPOCH_ROW, TOLERANCE, epoch_statistics, error_split, quadratic_form, verdict
from measure.device_check import resolve_device
from measure.errors import ProbebookError
from measure.evidence.contracts import tokens_per_second
from measure.evidence.envelope import Evidence
from measure.options import option
from measure.probes.common import BudgetSpent, CommonConfig, positive, record_workload, refuse_unused, release_device
from measure.run.runner import Recorder, execute
from measure.run.sessions import in_sessions
from measure.timing import energy_field
from measure.workload import DTYPES

PROBE = "hvp"
VERSION = 4  # 2: vᵀHv, its sign, the direction/curvature split and verdict against fp32; bf16 forward-over-reverse
# 3: the compiler cache's state (data.compiler_cache) and, per compiled candidate, its entries before the first call
# 4: --epoch-batches: the accuracy comparison over N data batches (data.epoch rows, each candidate's epoch statistics)
HELP = "Hessian-vector products: double backward vs forward-over-reverse, eager and compiled, error vs float64."
EXAMPLE = "probebook measure hvp --preset 90m --batches 1,2,4 --dtypes bf16,fp32"
METHODS = ("double-backward", "forward-over-reverse")
MODES = ("eager", "compiled")
SDPA = ("math", "default")
MEMORY_LIMIT = 0.9  # issue 10: a candidate above 90% of device memory is not selectable


@dataclass(frozen=True)
class Config(CommonConfig):
    """Options of the hvp probe (shared ones from ``CommonConfig``; a plug-in must set ``Workload.forward``)."""

    batches: tuple[int, ...] | None = None
    """Batch sizes (default 1,2,4 on CUDA; 1,2 on CPU)."""
    seq_len: int | None = None
    """Sequence length (default 1024 on CUDA, 32 on CPU)."""
    methods: tuple[str, ...] = option(METHODS, choices=METHODS)
    """Comma list of double-backward, forward-over-reverse."""
    modes: tuple[str, ...] | None = option(None, choices=MODES)
    """Comma list of eager, compiled (the whole H·v function under torch.compile); default both on CUDA, eager on
    CPU, where compiling every candidate kept a 2-core machine busy for 18 minutes (issue 29): ask for compiled."""
    dtypes: tuple[str, ...] = option(DTYPES, choices=DTYPES)
    """Comma list of bf16 (autocast), fp32."""
    sdpa: str = option("math", choices=SDPA)
    """SDPA kernel: math (differentiable twice) or default (torch's choice; may fail and is recorded)."""
    warmup: int = 2
    """Untimed warm calls after the first call, before the windows."""
    windows: int = WINDOWS
    """Timed windows per candidate."""
    iters: int = 1
    """H·v calls per window."""
    memory_limit: float = MEMORY_LIMIT
    """Fraction of device memory above which a candidate is excluded from selection."""
    budget_s: float | None = None
    """Stop (stored as partial) before a new candidate once this many seconds have passed."""
    tolerance: float = TOLERANCE
    """Relative error of H·v and of vᵀHv against the fp32 reference above which a candidate fails its verdict."""
    epoch_batches: int = 1
    """Distinct data batches each candidate's accuracy comparison runs over (same weights and v; batch k is made with
    seed + k); 1: the timed batch alone. Only the timed batch is timed."""

    def __post_init__(self) -> None:
        super().__post_init__()
        refuse_unused(self, ("compile", "dtype"), "hvp takes --modes and --dtypes instead")
        refuse_unused(self, ("checkpointing", "sliding_window", "global_every"), "hvp does not pass it to the workload")
        if self.batches is not None and (not self.batches or min(self.batches) < 1):
            raise ProbebookError(f"--batches must be positive integers, got {list(self.batches)}")
        positive("seq_len", self.seq_len)
        positive("epoch_batches", self.epoch_batches)
        for name, allowed in (("methods", METHODS), ("modes", MODES), ("dtypes", DTYPES)):
            chosen = getattr(self, name)
            if chosen is None:  # the device's default, chosen in run
                continue
            if not chosen or any(c not in allowed for c in chosen) or len(set(chosen)) != len(chosen):
                raise ProbebookError(f"--{name} must be a comma list of {', '.join(allowed)}, got {list(chosen)}")
        if self.sdpa not in SDPA:
            raise ProbebookError(f"--sdpa must be one of {', '.join(SDPA)}, got {self.sdpa!r}")
        if not 0 < self.memory_limit <= 1:
            raise ProbebookError(f"--memory-limit must be in (0, 1], got {self.memory_limit}")
        if self.budget_s is not None and not self.budget_s > 0:
            raise ProbebookError(f"--budget-s must be > 0, got {self.budget_s}")
        if not 0 < self.tolerance < 1:
            raise ProbebookError(f"--tolerance must be in (0, 1), got {self.tolerance}")


# --- the two methods, on any loss of a dict of tensors --------------------------------------------


def hvp_double_backward(
    loss_fn: Callable[[dict[str, Any]], Any], params: dict[str, Any], v: dict[str, Any], autocast: str | None = None
) -> Any:
    """H·v by reverse-over-reverse: ∂/∂θ (∂L/∂θ · v), with ``torch.autograd.grad`` twice.

    ``autocast`` is accepted for a signature shared with forward-over-reverse and ignored: the loss
    enters its own autocast region and autograd replays each op's recorded dtypes backward.
    """
    import torch

    names = list(params)
    leaves = [params[n].detach().requires_grad_(True) for n in names]
    loss = loss_fn(dict(zip(names, leaves, strict=True)))
    grads = torch.autograd.grad(loss, leaves, create_graph=True)
    dot = sum((g * v[n]).sum() for g, n in zip(grads, names, strict=True))
    hv = torch.autograd.grad(dot, leaves)
    return dict(zip(names, hv, strict=True))


def hvp_forward_over_reverse(
    loss_fn: Callable[[dict[str, Any]], Any], params: dict[str, Any], v: dict[str, Any], autocast: str | None = None
) -> Any:
    """H·v by forward-over-reverse: the JVP of ∇L at θ in direction v (``torch.func.jvp`` of ``torch.func.grad``).

    ``autocast`` (a device type, for bf16) runs the whole jvp-of-grad inside ``torch.autocast``.
    Why: the loss's own autocast region has closed when ``grad`` runs its backward, and under ``jvp``
    that backward's ops carry fp32 tangents of v; SDPA's math kernel's backward then multiplies an
    fp32 tangent with a bf16 saved tensor and stops with "expected m1 and m2 to have the same dtype,
    but got: float != c10::BFloat16" (torch 2.13, CPU and CUDA; probebook issue 27). Inside one
    enclosing region autocast casts those products too; the loss's nested region is unchanged.
    """
    from torch.func import grad, jvp

    if autocast is None:
        return jvp(grad(loss_fn), (params,), (v,))[1]
    import torch

    with torch.autocast(autocast, dtype=torch.bfloat16):
        return jvp(grad(loss_fn), (params,), (v,))[1]


METHOD_FNS = {"double-backward": hvp_double_backward, "forward-over-reverse": hvp_forward_over_reverse}


def select(candidates: list[dict[str, Any]], total_bytes: int | None, limit: float) -> dict[str, Any]:
    """The selectable candidate with the most H·v tokens/s, per dtype; and why each other one was excluded.

    Excluded: any candidate whose ``status`` is not ``ok``, and any whose larger peak (first call or
    warm) exceeds ``limit x total_bytes``. Returns ``{"best": {dtype: candidate key}, "excluded":
    [{key, reason}]}``; a candidate's key is ``{method, mode, dtype, batch}``.
    """
    best: dict[str, dict[str, Any]] = {}
    excluded = []
    for c in candidates:
        key = {k: c[k] for k in ("method", "mode", "dtype", "batch")}
        if c["status"] != "ok":
            excluded.append({**key, "reason": f"failed: {c['status']}"})
            continue
        peak = max(c["first_peak_bytes"] or 0, c["warm_peak_bytes"] or 0)
        if total_bytes and peak > limit * total_bytes:
            excluded.append({**key, "reason": f"peak {peak} bytes above {limit:g} of {total_bytes}"})
            continue
        held = best.get(c["dtype"])
        if held is None or c["tok_s"] > held["tok_s"]:
            best[c["dtype"]] = {**key, "tok_s": c["tok_s"]}
    return {"best": best, "excluded": excluded, "memory_limit": limit, "device_total_bytes": total_bytes}


def modes_for(device: str, asked: tuple[str, ...] | None) -> list[str]:
    """The modes a run times: those asked for, else both on CUDA and eager only on CPU (``Config.modes``)."""
    return list(asked or (MODES if device == "cuda" else ("eager",)))


@in_sessions
def run(config: Config, journal: Any = None, progress: bool = False) -> Evidence:
    """Time and check every H·v candidate; return the evidence (not stored)."""
    device = resolve_device(config.device)
    batches = sorted(set(config.batches or ((1, 2, 4) if device == "cuda" else (1, 2))))
    seq_len = config.seq_len or (1024 if device == "cuda" else 32)
    modes = modes_for(device, config.modes)
    params = {
        **{k: getattr(config, k) for k in ("preset", "workload", "seed", "sdpa", "warmup", "windows", "iters")},
        "device": device,
        "device_requested": config.device,
        "batches": batches,
        "seq_len": seq_len,
        "methods": list(config.methods),
        "modes": modes,
        "dtypes": list(config.dtypes),
        "memory_limit": config.memory_limit,
        "budget_s": config.budget_s,
        "reference": "float64 double-backward, eager, same weights, batch and v",
        "curvature_reference": "fp32 double-backward, eager, same weights, batch and v",
        "tolerance": config.tolerance,
        "epoch_batches": config.epoch_batches,
    }

    def body(rec: Recorder) -> None:
        import contextlib

        import torch
        from torch.func import functional_call

        from measure import peakmem
        from measure.compare import compare_named, same_values, sums_of, worst
        from measure.timing import WindowPlan, clock_for, sync_for, time_windows
        from measure.workload import WorkloadOptions, load_workload

        started = time.perf_counter()
        sync, clock = sync_for(device), clock_for(device)
        memory = peakmem.device_memory(device)
        total = memory["total_bytes"]
        rec.data.update({"device_total_bytes": total, "candidates": [], "failures": []})
        import os

        folder = cache_folder()
        rec.data["compiler_cache"] = {**compiler_cache(os.environ, folder), "compiled": "compiled" in modes}

        def sdpa_context() -> Any:
            if config.sdpa == "default":
                return contextlib.nullcontext()
            from torch.nn.attention import SDPBackend, sdpa_kernel

            return sdpa_kernel([SDPBackend.MATH])

        class LossOf(torch.nn.Module):
            """The workload's loss as a module of the model's parameters, for ``functional_call``."""

            def __init__(self, workload: Any):
                super().__init__()
                self.model = workload.model
                self.forward_fn = workload.forward

            def forward(self, batch: Any) -> Any:
                return self.forward_fn(batch)[0]

        def loss_of(workload: Any, batch: Any) -> Callable[[dict[str, Any]], Any]:
            if workload.forward is None:
                raise ProbebookError(f"workload {workload.name} has no forward(batch) -> (loss, logits)")
            module = LossOf(workload)

            def loss_fn(p: dict[str, Any]) -> Any:
                return functional_call(module, {f"model.{k}": t for k, t in p.items()}, (batch,))

            return loss_fn

        workloads = {
            dtype: load_workload(
                WorkloadOptions(preset=config.preset, device=device, dtype=dtype, seed=config.seed), config.workload
            )
            for dtype in config.dtypes
        }
        first = next(iter(workloads.values()))
        record_workload(rec, first)
        weights = {n: p.detach() for n, p in first.model.named_parameters()}
        for w in workloads.values():
            w.model.load_state_dict(first.model.state_dict())
        gen = torch.Generator(device=device).manual_seed(config.seed + 1)
        v = {n: torch.randn(p.shape, device=device, generator=gen, dtype=p.dtype) for n, p in weights.items()}
        ref_workload = load_workload(
            WorkloadOptions(preset=config.preset, device=device, dtype="fp32", seed=config.seed), config.workload
        )
        ref_workload.model.load_state_dict(first.model.state_dict())
        ref_workload.model.double()  # in place: the workload's forward runs this same module, now float64
        ref_params = {n: p.detach() for n, p in ref_workload.model.named_parameters()}
        ref_v = {n: t.double() for n, t in v.items()}
        fp32_workload = workloads.get("fp32") or load_workload(
            WorkloadOptions(preset=config.preset, device=device, dtype="fp32", seed=config.seed), config.workload
        )
        fp32_workload.model.load_state_dict(first.model.state_dict())
        v_sq = sum(float((t.double() ** 2).sum()) for t in v.values())

        def v_dot(hv: dict[str, Any]) -> float:
            """Σ v·(Hv) over every parameter, in float64: vᵀHv."""
            return sum(float((v[n].double() * hv[n].double()).sum()) for n in v)

        def curvature_of(hv: dict[str, Any], fp32_hv: dict[str, Any]) -> dict[str, Any]:
            """vᵀHv and its sign, and the error's direction/curvature split and verdict against fp32."""
            sums = [sums_of(fp32_hv[n], hv[n]) for n in fp32_hv]
            split = error_split(sum(x.sq_ref for x in sums), sum(x.sq_other for x in sums), sum(x.dot for x in sums))
            vhv, vhv_fp32 = v_dot(hv), v_dot(fp32_hv)
            return {
                **quadratic_form(vhv, v_sq),
                **{f"{k}_vs_fp32": value for k, value in split.items()},
                **verdict(split, vhv_fp32, vhv, config.tolerance),
            }

        def epoch_row(index: int, compared: dict[str, Any]) -> dict[str, Any]:
            """One batch's accuracy row of a candidate (named fields; ``epoch_batch`` 0 is the timed batch)."""
            return {"epoch_batch": index, **{k: compared.get(k) for k in EPOCH_ROW}}

        def accuracy_over(fn: Callable[..., Any], dtype: str, batches_k: list[Any]) -> list[dict[str, Any]]:
            """The candidate ``fn``'s comparison on each further batch of the epoch, against that batch's float64 and
            fp32 references (computed here, one batch at a time, untimed)."""
            out = []
            for index, batch_k in enumerate(batches_k, start=1):
                with sdpa_context():
                    ref64 = hvp_double_backward(loss_of(ref_workload, batch_k), ref_params, ref_v)
                    ref32 = hvp_double_backward(loss_of(fp32_workload, batch_k), weights, v)
                    hv_k = fn(loss_of(workloads[dtype], batch_k), weights, v)
                _, total_k = compare_named(ref64, {n: t.double() for n, t in hv_k.items()})
                row = {**curvature_of(hv_k, ref32), "rel_l2_vs_float64": total_k["rel_l2"]}
                row["reference_vhv_nats"] = v_dot(ref32)
                del ref64, ref32, hv_k
                out.append(epoch_row(index, row))
            return out

        def measure(
            method: str, mode: str, dtype: str, batch_size: int, batch: Any, reference: Any, fp32_hv: Any
        ) -> None:
            """Time one candidate, compare it with the float64 and fp32 H·v, record it."""
            loss_fn = loss_of(workloads[dtype], batch)
            label = f"{method} {mode} {dtype} batch {batch_size}"
            cand: dict[str, Any] = {"method": method, "mode": mode, "dtype": dtype, "batch": batch_size}
            fn: Callable[..., Any] = functools.partial(METHOD_FNS[method], autocast=device if dtype == "bf16" else None)
            if mode == "compiled":
                torch.compiler.reset()  # this candidate's compile time is its own (in memory; see compiler_cache)
                fn = torch.compile(fn)
                cand["cache_entries_before"] = cache_entries(folder) or 0
            try:
                with sdpa_context():
                    peakmem.reset(device)
                    sync()
                    t0 = time.perf_counter()
                    hv = fn(loss_fn, weights, v)
                    sync()
                    first_s = time.perf_counter() - t0
                    first_peak = peakmem.read(device)["peak_bytes"]
                    del hv
                    plan = WindowPlan(warmup=config.warmup, windows=config.windows, iters=config.iters)
                    peakmem.reset(device)
                    timed = time_windows(functools.partial(fn, loss_fn, weights, v), clock, plan, sync)
                    warm_peak = peakmem.read(device)["peak_bytes"]
                    hv = fn(loss_fn, weights, v)
            except torch.OutOfMemoryError as exc:
                cand.update(_failed("oom", exc))
            except Exception as exc:  # a candidate torch cannot run is a recorded outcome
                cand.update(_failed("error", exc))
            else:
                per, total_m = compare_named(reference, {n: t.double() for n, t in hv.items()})
                cand.update(curvature_of(hv, fp32_hv))
                del hv
                if epoch_batches[batch_size]:
                    timed_row = {**cand, "reference_vhv_nats": v_dot(fp32_hv), "rel_l2_vs_float64": total_m["rel_l2"]}
                    try:
                        epoch_rows = [epoch_row(0, timed_row), *accuracy_over(fn, dtype, epoch_batches[batch_size])]
                    except Exception as exc:  # the timed figures stand; the epoch's failure is recorded with them
                        cand["epoch_error"] = _failed("error", exc)["error"]
                    else:
                        key = {k: cand[k] for k in ("method", "mode", "dtype", "batch")}
                        rec.data["epoch"].extend({**key, **r} for r in epoch_rows)
                        cand["epoch"] = epoch_statistics(epoch_rows)
                cand.update(
                    {
                        "status": "ok",
                        "first_call_s": first_s,
                        "first_peak_bytes": first_peak,
                        "warm_median_s": timed.median_s,
                        "warm_cv": timed.cv,
                        "warm_unstable": timed.unstable,
                        "warm_times_s": timed.times_s,
                        "warm_sm_clock_mhz": timed.sm_clock_mhz,
                        "warm_energy_j": timed.energy_j,
                        "warm_peak_bytes": warm_peak,
                        "tok_s": tokens_per_second(batch_size * seq_len, timed.checked_median_s),
                        "rel_l2_vs_float64": total_m["rel_l2"],
                        "cosine_vs_float64": total_m["cosine"],
                        "max_abs_error_vs_float64": total_m["max_abs_error"],
                        "worst_tensor": worst(per),
                    }
                )
            release_device(device)
            rec.data["candidates"].append(cand)
            clocks = cand.get("warm_sm_clock_mhz") or [None] * len(cand.get("warm_times_s", []))
            energy = cand.get("warm_energy_j") or [None] * len(cand.get("warm_times_s", []))
            rows = [
                {
                    **{k: cand[k] for k in ("method", "mode", "dtype", "batch")},
                    "window": i,
                    "hvp_s": t,
                    "sm_clock_mhz": c,
                    **energy_field(e),
                }
                for i, (t, c, e) in enumerate(zip(cand.get("warm_times_s", []), clocks, energy, strict=True))
            ]
            note = (
                f"first {cand['first_call_s']:.2f} s, warm {cand['warm_median_s'] * 1e3:.2f} ms, "
                f"rel err {cand['rel_l2_vs_float64']:.2e}, vᵀHv {cand['vhv_nats']:.3e}, {cand['verdict']}"
                if cand["status"] == "ok"
                else cand["error"]
            )
            rec.point(rows, {k: v_ for k, v_ in cand.items() if k != "warm_times_s"}, f"{label}: {note}")

        # the epoch's further batches (k = 1 .. N-1), each made by the workload at seed + k; token tensors only
        epoch_batches: dict[int, list[Any]] = {b: [] for b in batches}
        if config.epoch_batches > 1:
            rec.data["epoch"] = []
            for k in range(1, config.epoch_batches):
                maker = load_workload(
                    WorkloadOptions(preset=config.preset, device=device, dtype="fp32", seed=config.seed + k),
                    config.workload,
                )
                for b in batches:
                    made = maker.make_batch(b, seq_len)
                    if same_values(made, first.make_batch(b, seq_len)):
                        raise ProbebookError(
                            f"--epoch-batches {config.epoch_batches}: workload {maker.name} made the same batch at "
                            f"seed {config.seed + k} as at seed {config.seed}; the epoch needs distinct batches"
                        )
                    epoch_batches[b].append(made)
                del maker
                release_device(device)
        references = {}
        rec.data["references"] = []
        for batch_size in batches:  # the float64 and fp32 H·v of every batch first, shared by candidates
            batch = first.make_batch(batch_size, seq_len)
            with sdpa_context():
                ref64 = hvp_double_backward(loss_of(ref_workload, batch), ref_params, ref_v)
                ref32 = hvp_double_backward(loss_of(fp32_workload, batch), weights, v)
            references[batch_size] = (batch, ref64, ref32)
            rec.data["references"].append(
                {
                    "batch": batch_size,
                    "float64": quadratic_form(v_dot(ref64), v_sq),
                    "fp32": quadratic_form(v_dot(ref32), v_sq),
                }
            )
        try:  # eager candidates first, so a spent budget cuts compiled ones, never the baseline
            for mode in modes:
                for batch_size in batches:
                    for dtype in config.dtypes:
                        for method in config.methods:
                            if config.budget_s is not None and time.perf_counter() - started > config.budget_s:
                                raise BudgetSpent(
                                    f"time budget of {config.budget_s:g} s spent before {method} {mode} {dtype} "
                                    f"batch {batch_size}"
                                )
                            measure(method, mode, dtype, batch_size, *references[batch_size])
        finally:
            rec.data["selection"] = select(rec.data["candidates"], total, config.memory_limit)

    return execute(PROBE, VERSION, params, __file__, body, journal, progress)


def _failed(status: str, exc: BaseException) -> dict[str, Any]:
    text = f"{type(exc).__name__}: {exc}".strip().splitlines()
    return {"status": status, "error": (text[0] if text else type(exc).__name__)[:300]}
