"""``ddp``: what share of one GPU's training throughput each GPU keeps under data parallelism, and why.

Two launches of ``measure.run.ddp_worker`` under torchrun (``measure.run.distributed``), both with the same
per-rank batch: one process without DDP (the 1-GPU baseline), then N processes with the workload
wrapped in DistributedDataParallel (NCCL on CUDA, gloo on CPU). The N-process launch also pairs
the DDP step with the same step under ``no_sync`` (no all-reduce) in interleaved rounds, times
the all-reduce of every gradient bucket inside real steps (how much of it backward hides), and a
standalone all-reduce of the gradient's bytes and of a size sweep. With one visible GPU only the
baseline runs and the evidence says N=1. The interconnect is recorded as observed: ``nvidia-smi
topo -m`` and the transports NCCL's INFO log names. Efficiency, bandwidths and the projection to
more GPUs are derived at render time (``render/derive/scaling.py``).
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import asdict, dataclass
from typing import Any

from measure.device_check import resolve_device
from measure.errors import ProbebookError
from measure.evidence.envelope import Evidence
from measure.options import option
from measure.probes.common import CommonConfig, positive, record_facts
from measure.run.runner import Recorder, execute

PROBE = "ddp"
VERSION = 3  # 2: the DDP step paired with a no_sync step in interleaved rounds; comm steps back to back
# 3: data.comm_buckets names each bucket's fields (ready_s, done_s, bytes) instead of [ready, done, bytes]
# arrays; older versions are read that way by measure.evidence.reading.for_reading
HELP = (
    "Data-parallel scaling under torchrun: tokens/s per GPU at 1 and N GPUs, all-reduce time and "
    "overlap with backward, all-reduce bandwidth, interconnect as observed."
)
EXAMPLE = "probebook measure ddp --preset 250m --seq-len 2048 --batch 4 --gpus 2"
WORKER = "measure.run.ddp_worker"
GPU_ALLREDUCE_MIB = (8.0, 64.0, 256.0, 1024.0)  # the sizes of issue 13's bare all-reduce anchor
CPU_ALLREDUCE_MIB = (0.25, 1.0)


@dataclass(frozen=True)
class Config(CommonConfig):
    """Options of the ddp probe."""

    SESSIONED = False  # torchrun's ranks are its processes

    gpus: int | None = None
    """Processes of the data-parallel run (default: every visible GPU on CUDA, 2 on CPU); 1 runs the baseline only."""
    batch: int | None = None
    """Batch per rank, the same at 1 and N processes (default 4 on CUDA, 2 on CPU)."""
    seq_len: int | None = None
    """Sequence length (default 2048 on CUDA, 64 on CPU)."""
    bucket_cap_mb: int = 25
    """DDP gradient bucket size in MiB (torch's default 25)."""
    comm_steps: int = 10
    """Instrumented steps that time each bucket's all-reduce (after the uninstrumented windows)."""
    allreduce_mib: tuple[float, ...] | None = None
    """Standalone all-reduce sizes in MiB (default 8,64,256,1024 on CUDA; 0.25,1 on CPU)."""
    allreduce_dtype: str = option("bf16", choices=("bf16", "fp16", "fp32"))
    """Element type of the all-reduce sweep: bf16, fp16 or fp32 (the gradient-size one is fp32)."""
    timeout_s: float = 600.0
    """Seconds one torchrun launch may take before it is stopped."""

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("gpus", "batch", "seq_len", "bucket_cap_mb", "comm_steps"):
            positive(name, getattr(self, name))
        if self.allreduce_mib is not None and (not self.allreduce_mib or min(self.allreduce_mib) <= 0):
            raise ProbebookError(f"--allreduce-mib must be positive sizes in MiB, got {list(self.allreduce_mib)}")
        if self.timeout_s <= 0:
            raise ProbebookError(f"--timeout-s must be positive, got {self.timeout_s}")


def topology() -> str | None:
    """``nvidia-smi topo -m`` as printed (the GPU interconnect matrix), or None where it cannot run."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "topo", "-m"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout if out.returncode == 0 else None


def visible_gpus(device: str) -> int:
    if device != "cuda":
        return 0
    import torch

    return torch.cuda.device_count()


def run(config: Config, journal: Any = None, progress: bool = False) -> Evidence:
    """Time the step at 1 and N processes, the bucket all-reduces and standalone all-reduces; return evidence."""
    from measure.run.distributed import launch, nccl_observed

    device = resolve_device(config.device)
    visible = visible_gpus(device)
    gpus = config.gpus or (visible if device == "cuda" else 2)
    if device == "cuda" and gpus > visible:
        raise ProbebookError(f"--gpus {gpus}: torch sees {visible} CUDA device(s) here")
    batch = config.batch or (4 if device == "cuda" else 2)
    seq_len = config.seq_len or (2048 if device == "cuda" else 64)
    sizes = config.allreduce_mib or (GPU_ALLREDUCE_MIB if device == "cuda" else CPU_ALLREDUCE_MIB)
    params = {
        **config.params(device),
        "gpus": gpus,
        "batch": batch,
        "seq_len": seq_len,
        "tokens_per_rank": batch * seq_len,
        "allreduce_mib": list(sizes),
    }
    spec = {**asdict(config), "device": device, "batch": batch, "seq_len": seq_len, "allreduce_mib": list(sizes)}

    def body(rec: Recorder) -> None:
        observed: dict[str, Any] = {"visible_gpus": visible, "topology": topology(), "phases": {}}
        rec.data["observed"] = observed
        for n in sorted({1, gpus}):
            launched = launch(WORKER, n, spec, timeout_s=config.timeout_s)
            out = launched.result
            record_facts(rec, out)
            rec.data["grad_bytes"] = out["grad_bytes"]
            observed["phases"][str(n)] = {**out["observed"], **nccl_observed(launched.log), "wall_s": launched.wall_s}
            steps = out["steps"]
            rows = [
                {"phase": "step", "gpus": n, "window": i, "step_s": t, "tokens_per_rank": batch * seq_len}
                for i, t in enumerate(steps["times_s"])
            ]
            median_s = sorted(steps["times_s"])[len(steps["times_s"]) // 2]
            rec.point(
                rows,
                {"phase": "step", "gpus": n, "cv": steps["cv"], "unstable": steps["unstable"], "windows": len(rows)},
                f"{n} process(es): step ~{median_s * 1e3:.2f} ms, {batch * seq_len / median_s:,.0f} tok/s per rank",
            )
            if "paired" in out:
                paired = out["paired"]
                rec.point(
                    [
                        {"phase": "paired", "gpus": n, "arm": arm, "round": r, "step_s": paired["times_s"][arm][r]}
                        for r, arm in paired["order"]
                    ],
                    {"phase": "paired", "gpus": n, "cv": paired["cv"], "unstable": paired["unstable"]},
                    f"{n} processes: DDP and no_sync steps in {len(paired['times_s']['ddp'])} interleaved rounds",
                )
            if "comm" in out:
                comm = out["comm"]
                rec.data["comm_buckets"] = [c.pop("intervals") for c in comm]
                rec.point(
                    [{"phase": "comm", "gpus": n, **c} for c in comm],
                    {"phase": "comm", "gpus": n, "steps": len(comm)},
                    f"{n} processes: {len(comm)} instrumented steps, {comm[0]['buckets']} buckets",
                )
                rec.point(
                    [{"phase": "allreduce", "gpus": n, **r} for r in out["allreduce"]],
                    {"phase": "allreduce", "gpus": n, "sizes": len(sizes) + 1},
                    f"{n} processes: standalone all-reduce at {len(sizes) + 1} sizes",
                )

    return execute(PROBE, VERSION, params, __file__, body, journal, progress)
