"""``copy``: host<->device and device<->device bandwidth, one contiguous block against the workload's tensors.

Patterns: ``per-layer`` copies each parameter tensor of the workload separately (the real
pattern of moving a model's weights or optimizer state layer by layer); ``contiguous`` copies
one block of the same total bytes. Host memory is ``pinned`` (page-locked, asynchronous DMA)
or ``pageable`` (staged by the driver). Device->device copies count bytes read plus bytes
written (2x the size), the convention for memory-bandwidth figures. Timed with CUDA events on
the compute stream. GB/s are 10^9 bytes per second.

On CPU there is no host<->device link: only ``d2d`` runs (a memory copy within host RAM,
``memory: "device"`` meaning the CPU is the device), and the skipped directions are recorded
in ``data.skipped`` with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from measure.device_check import resolve_device
from measure.errors import ProbebookError
from measure.evidence.envelope import Evidence
from measure.options import option
from measure.probes.common import CommonConfig, record_workload
from measure.run.runner import Recorder, execute
from measure.run.sessions import in_sessions
from measure.timing import energy_field

PROBE = "copy"
VERSION = 1
HELP = (
    "Host<->device (pinned, pageable) and device<->device bandwidth: one block against the workload's "
    "per-layer tensors."
)
EXAMPLE = "probebook measure copy --preset 90m"
DIRECTIONS = ("h2d", "d2h", "d2d")


@dataclass(frozen=True)
class Config(CommonConfig):
    """Options of the copy probe."""

    directions: tuple[str, ...] = option(DIRECTIONS, choices=DIRECTIONS)
    """Which directions to time: h2d, d2h, d2d."""
    max_tensors: int | None = None
    """Use at most this many of the workload's tensors for the per-layer pattern (None: all)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.max_tensors is not None and self.max_tensors < 1:
            raise ProbebookError(f"--max-tensors must be >= 1, got {self.max_tensors}")


def gb_s(nbytes: int, seconds: float) -> float:
    """Bandwidth in GB/s (10^9 bytes per second)."""
    return nbytes / seconds / 1e9


def counted_bytes(direction: str, size: int) -> int:
    """Bytes a copy of ``size`` bytes is credited with: read + written (2x) within a device, else the size."""
    return 2 * size if direction == "d2d" else size


def cases(device: str, directions: tuple[str, ...]) -> tuple[list[tuple[str, str, str]], list[dict[str, str]]]:
    """(direction, memory, pattern) to run on this device, and the skipped ones with a reason."""
    run, skipped = [], []
    for direction in directions:
        memories = ("device",) if direction == "d2d" else ("pinned", "pageable")
        for memory in memories:
            if direction != "d2d" and device != "cuda":
                skipped.append(
                    {"direction": direction, "memory": memory, "reason": "host<->device copies need a CUDA device"}
                )
                continue
            for pattern in ("contiguous", "per-layer"):
                run.append((direction, memory, pattern))
    return run, skipped


@in_sessions
def run(config: Config, journal: Any = None, progress: bool = False) -> Evidence:
    """Time every (direction, memory, pattern) case; return the evidence (not stored)."""
    device = resolve_device(config.device)
    params = {**config.params(device), "directions": list(config.directions)}
    todo, skipped = cases(device, config.directions)

    def body(rec: Recorder) -> None:
        import torch

        from measure.timing import clock_for, sm_clock, sync_for, time_windows
        from measure.workload import load_workload

        workload = load_workload(config.workload_options(device), config.workload)
        shapes = [(tuple(p.shape), p.dtype) for p in workload.model.parameters()]
        record_workload(rec, workload)
        del workload
        if device == "cuda":
            torch.cuda.empty_cache()
        if config.max_tensors:
            shapes = shapes[: config.max_tensors]
        size = sum(torch.Size(s).numel() * torch.empty((), dtype=d).element_size() for s, d in shapes)
        rec.params.update({"tensors": len(shapes), "pattern_bytes": size})
        rec.data["skipped"] = skipped
        rec.data["clocks"] = {"sm_mhz_before": sm_clock(device)}
        clock, sync, plan = clock_for(device), sync_for(device), config.plan()
        gen = torch.Generator().manual_seed(config.seed)

        def host(shape: tuple[int, ...], dtype: Any, pinned: bool) -> Any:
            # filled with uniform noise: content does not change copy speed, but a buffer is never left unset
            t = torch.empty(shape, dtype=dtype, pin_memory=pinned)
            return t.uniform_(generator=gen) if t.is_floating_point() else t.fill_(1)

        def make(where: str, memory: str, pattern: str) -> list[Any]:
            layout = [((size // 4,), torch.float32)] if pattern == "contiguous" else shapes
            if where == "host":
                return [host(s, d, memory == "pinned") for s, d in layout]
            return [torch.empty(s, dtype=d, device=device).uniform_() for s, d in layout]

        for direction, memory, pattern in todo:
            if direction == "h2d":
                src, dst = make("host", memory, pattern), make("device", memory, pattern)
            elif direction == "d2h":
                src, dst = make("device", memory, pattern), make("host", memory, pattern)
            else:
                src, dst = make("device", memory, pattern), make("device", memory, pattern)
            asynchronous = memory == "pinned"

            # the loop's tensors are bound as defaults: the closure must not see a later iteration's (or a deleted) name
            def copy(dst: list[Any] = dst, src: list[Any] = src, asynchronous: bool = asynchronous) -> None:
                for d, s in zip(dst, src, strict=True):
                    d.copy_(s, non_blocking=asynchronous)

            nbytes = counted_bytes(direction, sum(t.numel() * t.element_size() for t in src))
            result = time_windows(copy, clock, plan, sync)
            rows = [
                {
                    "direction": direction,
                    "memory": memory,
                    "pattern": pattern,
                    "bytes": nbytes,
                    "window": i,
                    "time_s": t,
                    "gb_s": gb_s(nbytes, t),
                    "sm_clock_mhz": mhz,
                    **energy_field(joules),
                }
                for i, (t, mhz, joules) in enumerate(
                    zip(result.times_s, result.sm_clock_mhz, result.energy_j, strict=True)
                )
            ]
            point = {
                "direction": direction,
                "memory": memory,
                "pattern": pattern,
                "bytes": nbytes,
                "tensors": len(src),
                "median_s": result.median_s,
                "gb_s": gb_s(nbytes, result.checked_median_s),
                "cv": result.cv,
                "unstable": result.unstable,
            }
            rec.point(rows, point, f"{direction} {memory} {pattern}: {point['gb_s']:.1f} GB/s")
            del src, dst, copy
        rec.data["clocks"]["sm_mhz_after"] = sm_clock(device)

    return execute(PROBE, VERSION, params, __file__, body, journal, progress)
