"""One rank of the ``ddp`` probe, started by ``measure.run.distributed.launch`` under torchrun.

``python -m measure.run.ddp_worker SPEC.json RESULT.json``: every rank builds the workload on its own
device (``LOCAL_RANK``); with more than one rank the model's calls are routed through
DistributedDataParallel (NCCL on CUDA, gloo on CPU). Rank 0 writes the result. What is measured:

* ``steps``: the training step, uninstrumented, timed by ``measure.timing.time_windows``. Each
  window's time is the slowest rank's (``AgreedClock``), so every rank takes the same CV decision
  and runs the same number of steps (a rank that ran one more window would hang in its all-reduce).
* ``paired`` (N > 1): the DDP step and the same step under ``ddp.no_sync()`` (no all-reduce),
  interleaved round by round by ``measure.timing.time_interleaved``: each GPU's compute alone,
  measured beside the DDP step under the same clocks, so drift cannot widen or narrow the gap.
* ``comm`` (N > 1): a few more steps, back to back, with a DDP comm hook that stamps every gradient bucket: when it
  became ready (an event on the compute stream as the hook is called) and when its all-reduce
  finished (an event recorded in the future's callback, which runs on a stream that waits for the
  all-reduce). Per step: NCCL busy time (union of the bucket intervals), and exposed time, from the
  last bucket ready to the last all-reduce done: communication that backward did not hide.
* ``allreduce`` (N > 1): standalone ``all_reduce`` of the gradient's bytes and of each size asked for.

With one rank the worker measures the step only, without DDP (the 1-GPU baseline).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import Any

from measure.run.distributed import MULTICAST_OFF
from measure.timing import Clock, WindowPlan, clock_for, sync_for, time_interleaved, time_windows
from measure.workload import WorkloadFields, WorkloadOptions, load_workload
from measure.workload.observe import workload_facts

_DTYPES = {"bf16": "bfloat16", "fp32": "float32", "fp16": "float16"}


class AgreedClock:
    """A clock whose reading is the slowest rank's (an all-reduce MAX after the window, outside the timing)."""

    def __init__(self, inner: Clock, device: str, world: int):
        self.inner, self.device, self.world = inner, device, world

    def time(self, fn: Callable[[], Any], iters: int) -> float:
        seconds = self.inner.time(fn, iters)
        if self.world == 1:
            return seconds
        import torch
        import torch.distributed as dist

        t = torch.tensor([seconds], dtype=torch.float64, device=self.device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return float(t.item())


def route_through_ddp(model: Any, device: str, bucket_cap_mb: int) -> Any:
    """Wrap ``model`` in DDP and make the workload's own calls of ``model(...)`` go through the wrapper.

    The workload's step calls its model directly (a plug-in's step is never rewritten); an instance
    ``forward`` sends an outer call to DDP, whose inner call of the module runs the class's forward.
    """
    from torch.nn.parallel import DistributedDataParallel as DDP

    ddp = DDP(
        model,
        device_ids=[int(os.environ.get("LOCAL_RANK", "0"))] if device == "cuda" else None,
        bucket_cap_mb=bucket_cap_mb,
    )
    forward = type(model).forward
    inside = [False]

    def routed(*args: Any, **kwargs: Any) -> Any:
        if inside[0]:
            return forward(model, *args, **kwargs)
        inside[0] = True
        try:
            return ddp(*args, **kwargs)
        finally:
            inside[0] = False

    model.forward = routed
    return ddp


class Stamps:
    """Points in time on the device: CUDA events (read after a synchronize) or host ``perf_counter``."""

    def __init__(self, device: str):
        import torch

        self.torch, self.cuda = torch, device == "cuda"

    def now(self) -> Any:
        if not self.cuda:
            return time.perf_counter()
        event = self.torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def since(self, origin: Any, stamp: Any) -> float:
        """Seconds from ``origin`` to ``stamp`` (events must have completed)."""
        return origin.elapsed_time(stamp) / 1000.0 if self.cuda else stamp - origin


class CommTimer:
    """A DDP comm hook (the default all-reduce and divide) that stamps each bucket's ready and done times."""

    def __init__(self, stamps: Stamps, world: int):
        self.stamps, self.world = stamps, world
        self.buckets: list[tuple[Any, Any, int]] = []

    def hook(self, state, bucket):
        import torch.distributed as dist

        del state

        ready = self.stamps.now()
        buffer = bucket.buffer()
        buffer.div_(self.world)
        future = dist.all_reduce(buffer, async_op=True).get_future()
        nbytes = buffer.numel() * buffer.element_size()

        def done(fut: Any) -> Any:
            self.buckets.append((ready, self.stamps.now(), nbytes))
            return fut.value()[0]

        return future.then(done)


def union_s(intervals: list[tuple[float, float]]) -> float:
    """Total length of the union of ``(start, end)`` intervals, in their unit (seconds)."""
    total, reach = 0.0, float("-inf")
    for start, end in sorted(intervals):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


def comm_steps(step: Callable[[], Any], ddp: Any, stamps: Stamps, world: int, count: int, sync: Any) -> list[dict]:
    """Run ``count`` instrumented steps back to back; per step: step, in-flight and exposed seconds, buckets.

    The host is not synchronized between the steps (as in the uninstrumented windows, it queues the
    next step while the device runs this one); every stamp is read after the last step. A step's
    bucket callbacks have all run when ``step()`` returns: DDP waits on each bucket's future.
    """
    timer = CommTimer(stamps, world)
    ddp.register_comm_hook(None, timer.hook)
    step()  # the first step with a hook runs the Python hook path once, untimed
    sync()
    marks = []
    for _ in range(count):
        timer.buckets = []
        begin = stamps.now()
        step()
        marks.append((begin, stamps.now(), timer.buckets))
    sync()
    out = []
    for i, (begin, end, buckets) in enumerate(marks):
        rel = [(stamps.since(begin, r), stamps.since(begin, d), n) for r, d, n in buckets]
        last_ready = max(r for r, _, _ in rel)
        comm_end = max(d for _, d, _ in rel)
        out.append(
            {
                "step": i,
                "step_s": stamps.since(begin, end),
                "comm_s": union_s([(r, d) for r, d, _ in rel]),
                "exposed_s": max(0.0, comm_end - last_ready),
                "first_ready_s": min(r for r, _, _ in rel),
                "last_ready_s": last_ready,
                "comm_end_s": comm_end,
                "buckets": len(rel),
                "bucket_bytes": sum(n for _, _, n in rel),
                "intervals": [{"ready_s": r, "done_s": d, "bytes": n} for r, d, n in rel],
            }
        )
    return out


def paired_rounds(step: Callable[[], Any], ddp: Any, device: str, world: int, plan: WindowPlan) -> dict[str, Any]:
    """The DDP step and the same step under ``ddp.no_sync()`` (no all-reduce), interleaved round by round.

    Both arms run on every rank at once, so the no-communication arm is each GPU's compute alone
    under the same clocks, power and temperature as the DDP arm, with no drift between them.
    """

    def local() -> None:
        with ddp.no_sync():
            step()

    result = time_interleaved(
        {"ddp": step, "no_sync": local}, AgreedClock(clock_for(device), device, world), plan, sync_for(device)
    )
    return {
        "times_s": {name: arm.times_s for name, arm in result.arms.items()},
        "cv": {name: arm.cv for name, arm in result.arms.items()},
        "unstable": {name: arm.unstable for name, arm in result.arms.items()},
        "order": [[r, name] for r, name in result.order],
    }


def allreduce_sizes(spec: dict[str, Any], grad_bytes: int, device: str, world: int, plan: WindowPlan) -> list[dict]:
    """Time a standalone all-reduce of the gradient's bytes (fp32) and of each swept size (``allreduce_dtype``)."""
    import torch
    import torch.distributed as dist

    clock = AgreedClock(clock_for(device), device, world)
    sizes = [("gradient", "fp32", grad_bytes)] + [
        ("sweep", spec["allreduce_dtype"], int(mib * 2**20)) for mib in spec["allreduce_mib"]
    ]
    rows = []
    for kind, dtype_name, nbytes in sizes:
        dtype = getattr(torch, _DTYPES[dtype_name])
        numel = max(1, nbytes // torch.empty((), dtype=dtype).element_size())
        tensor = torch.ones(numel, dtype=dtype, device=device)

        def reduce(t: Any = tensor) -> None:
            dist.all_reduce(t)

        result = time_windows(reduce, clock, plan, sync_for(device))
        nbytes = numel * tensor.element_size()
        for i, t in enumerate(result.times_s):
            rows.append({"kind": kind, "dtype": dtype_name, "bytes": nbytes, "window": i, "time_s": t})
        del tensor
    return rows


def nccl_runtime() -> str | None:
    """The NCCL version torch runs with, as ``major.minor.patch`` (torch reports a tuple, older ones an int)."""
    import torch

    try:
        version = torch.cuda.nccl.version()
    except (AttributeError, RuntimeError):
        return None
    return ".".join(map(str, version)) if isinstance(version, tuple) else str(version)


def start(spec: dict[str, Any]) -> tuple[int, int, str]:
    """(world, rank, device) of this process; joins the process group (NCCL on CUDA, gloo on CPU) when world > 1."""
    import torch

    world, rank = int(os.environ.get("WORLD_SIZE", "1")), int(os.environ.get("RANK", "0"))
    device = spec["device"]
    if device == "cuda":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    if world > 1:
        import torch.distributed as dist

        dist.init_process_group("nccl" if device == "cuda" else "gloo")
    return world, rank, device


def build(spec: dict[str, Any], device: str, world: int) -> tuple[Any, Any, Any, int]:
    """(workload, DDP wrapper or None, batch, gradient bytes) for ``spec`` on this rank."""
    options = WorkloadOptions(**{f.name: spec[f.name] for f in fields(WorkloadFields) if f.name in spec}, device=device)
    workload = load_workload(options, spec["workload"])
    grad_bytes = sum(p.numel() * p.element_size() for p in workload.model.parameters() if p.requires_grad)
    ddp = route_through_ddp(workload.model, device, spec["bucket_cap_mb"]) if world > 1 else None
    return workload, ddp, workload.make_batch(spec["batch"], spec["seq_len"]), grad_bytes


def time_steps(step: Callable[[], Any], device: str, world: int, plan: WindowPlan) -> Any:
    """``measure.timing.time_windows`` over the training step, each window the slowest rank's time."""
    return time_windows(step, AgreedClock(clock_for(device), device, world), plan, sync_for(device))


def measure(spec: dict[str, Any]) -> dict[str, Any]:
    """Everything one rank measures for ``spec``; every rank returns it, rank 0's is kept."""
    import torch

    world, rank, device = start(spec)
    workload, ddp, batch, grad_bytes = build(spec, device, world)
    plan = WindowPlan(warmup=spec["warmup"], windows=spec["windows"], iters=spec["iters"])
    sync = sync_for(device)
    steps = time_steps(lambda: workload.step(batch), device, world, plan)
    out: dict[str, Any] = {
        "rank": rank,
        "world": world,
        **workload_facts(workload),
        "grad_bytes": grad_bytes,
        "steps": {"times_s": steps.times_s, "cv": steps.cv, "unstable": steps.unstable, "extended": steps.extended},
        "observed": {
            "backend": None if world == 1 else ("nccl" if device == "cuda" else "gloo"),
            "ddp": ddp is not None,
            "torch": torch.__version__,
            "env": {k: os.environ.get(k) for k in MULTICAST_OFF},
            "device_name": torch.cuda.get_device_name() if device == "cuda" else "cpu",
            "nccl_runtime": nccl_runtime() if device == "cuda" else None,
        },
    }
    if world == 1:
        # the SDPA backend and dtype are observed in the 1-process phase only (same model and shape): on
        # gloo, torch.profiler around a DDP step corrupted the heap in about one run in ten (torch 2.13 CPU)
        from measure.workload.observe import observe

        seen = observe(workload, batch, device)
        out["observed"].update({k: seen[k] for k in ("sdpa_backend", "compile_engaged", "dtype")})
    if ddp is not None:
        out["paired"] = paired_rounds(lambda: workload.step(batch), ddp, device, world, plan)
        out["comm"] = comm_steps(lambda: workload.step(batch), ddp, Stamps(device), world, spec["comm_steps"], sync)
        out["allreduce"] = allreduce_sizes(spec, grad_bytes, device, world, plan)
    if world > 1:
        import torch.distributed as dist

        dist.barrier()
        dist.destroy_process_group()
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    spec = json.loads(Path(args[0]).read_text(encoding="utf-8"))
    out = measure(spec)
    if out["rank"] == 0:
        Path(args[1]).write_text(json.dumps(out, sort_keys=True, allow_nan=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # skip interpreter teardown: after a Python comm hook ran on gloo, about one exit in ten aborted in a
    # C++ thread destructor ("terminate called without an active exception") once the result was written
    os._exit(code)
