"""``stream``: what bounds a training step whose layers' weights live in host memory.

Each transformer block's weights are one flat fp32 buffer in pinned host memory. A step visits
the blocks forward (0..L-1) and backward (L-1..0); before each visit its block's buffer is copied
to one of ``depth + 1`` device slots on a side stream, ``depth`` visits ahead (prefetch depth 1
or 2), and the compute stream waits for that copy (``wait_event``). Forward visits run under
``no_grad`` and keep only the block's input; a backward visit recomputes the block with gradients
(checkpointing at block boundaries, as offloaded training does) and copies the block's weight
gradients back to pinned host buffers on the side stream. The embedding, final norm and head stay
on the device. The step is forward and backward; no arm runs the optimizer.

Measured: per visit, the copy's time (CUDA events on the side stream) and the compute stream's
stall (CUDA events on the compute stream around its ``wait_event`` calls); the step's time, the
share of it spent waiting, the loads and stores each step makes and the bytes they move (each a block's flat
fp32 buffer, counted from the visits; v2), the bytes per second of the timed step, and tokens/s against arms timed
in the same interleaved rounds:

* ``resident``: the same model resident on the device, plain autograd forward and backward;
* ``no-copy``: the streamed schedule on device-resident block buffers (the copies removed);
* ``no-compute``: the streamed schedule's copies and waits with no block computed (compute removed);
* ``streamed-d1``, ``streamed-d2``: the streamed step at prefetch depth 1 and 2.

The streamed step's loss and gradients are compared with the resident step's through
``measure.compare`` (verdict against the resident step run twice, as in ``agreement``). On CPU
there is no side stream and no pinned memory: copies are synchronous copies between host tensors,
the stall is zero by construction, and only the mechanics and the agreement check are exercised.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from measure.constants import ITERS, WINDOWS
from measure.device_check import resolve_device
from measure.errors import ProbebookError
from measure.evidence.envelope import Evidence
from measure.probes.common import CommonConfig, model_flops_per_token, positive, record_workload, refuse_unused
from measure.run.runner import Recorder, execute
from measure.run.sessions import in_sessions
from measure.timing import energy_field

PROBE = "stream"
VERSION = 2
HELP = "Layer weights streamed from pinned host memory on a side stream: copy time, compute stall, tokens/s."
EXAMPLE = "probebook measure stream --preset 250m --depths 1,2"
CONTROL_ARMS = ("resident", "no-copy", "no-compute")


@dataclass(frozen=True)
class Config(CommonConfig):
    """Options of the stream probe (shared ones from ``CommonConfig``; a plug-in must set ``Workload.stream``)."""

    batch: int | None = None
    """Batch size (default 4 on CUDA, 2 on CPU)."""
    seq_len: int | None = None
    """Sequence length (default 2048 on CUDA, 64 on CPU)."""
    depths: tuple[int, ...] = (1, 2)
    """Prefetch depths to time, each 1 or 2 (copies issued that many visits ahead)."""
    warmup: int = 2
    """Untimed steps of every arm before the rounds."""
    windows: int = WINDOWS
    """Interleaved rounds."""
    iters: int = ITERS
    """Steps per arm per round."""
    observe_steps: int = 3
    """Steps per streamed arm whose per-layer copy and stall events are kept."""

    def __post_init__(self) -> None:
        super().__post_init__()
        refuse_unused(
            self,
            ("compile", "checkpointing", "sliding_window", "global_every"),
            "stream runs its own block schedule (blocks recomputed in backward, eager)",
        )
        positive("batch", self.batch)
        positive("seq_len", self.seq_len)
        if not self.depths or any(d not in (1, 2) for d in self.depths) or len(set(self.depths)) != len(self.depths):
            raise ProbebookError(f"--depths must be a comma list of 1 and/or 2, got {list(self.depths)}")
        positive("observe_steps", self.observe_steps)


def stall_share(stall_s: float, step_s: float) -> float:
    """Fraction of the step the compute stream spent waiting for copies (both in seconds)."""
    return stall_s / step_s


def visits(layers: int) -> list[tuple[str, int]]:
    """The step's block visits in order: forward 0..L-1, then backward L-1..0."""
    return [("forward", i) for i in range(layers)] + [("backward", i) for i in reversed(range(layers))]


class Stamps:
    """Time stamps on a stream: CUDA events on CUDA, ``perf_counter`` on CPU (where work is synchronous)."""

    def __init__(self, device: str):
        import torch

        self.torch, self.cuda = torch, device == "cuda"

    def now(self, stream: Any = None) -> Any:
        if not self.cuda:
            return time.perf_counter()
        event = self.torch.cuda.Event(enable_timing=True)
        event.record(stream)
        return event

    def seconds(self, start: Any, end: Any) -> float:
        return start.elapsed_time(end) / 1000.0 if self.cuda else end - start


class Streamer:
    """Runs a workload's forward and backward with its blocks' weights streamed from host memory.

    The blocks, embedding and loss come from ``Workload.stream`` (the reference decoder's, or a plug-in's).

    ``mode``: ``streamed`` (copies on a side stream, ``depth`` visits ahead), ``no-copy`` (the same
    schedule on device-resident buffers) or ``no-compute`` (the copies and waits, no block computed).
    """

    def __init__(self, workload: Any, device: str, dtype: str, depth: int, mode: str):
        import torch

        self.torch, self.device, self.depth, self.mode = torch, device, depth, mode
        self.model, self.autocast = workload.model, dtype == "bf16"
        self.parts = workload.stream
        self.blocks = list(self.parts.blocks)
        first = self.blocks[0]
        self.names = [n for n, _ in first.named_parameters()]
        # each block parameter's name in the model, so its gradient compares with the resident step's
        where = {id(p): n for n, p in self.model.named_parameters()}
        self.full_names = [[where[id(p)] for p in block.parameters()] for block in self.blocks]
        self.shapes = [p.shape for _, p in first.named_parameters()]
        self.numel = sum(p.numel() for p in first.parameters())
        pinned = device == "cuda"
        self.host = []
        for block in self.blocks:
            flat = torch.cat([p.detach().reshape(-1).float().cpu() for p in block.parameters()])
            self.host.append(flat.pin_memory() if pinned else flat)
        self.grad_host = [torch.zeros(self.numel, pin_memory=pinned) for _ in self.blocks]
        nslots = depth + 1
        self.slots = [torch.empty(self.numel, device=device) for _ in range(nslots)]
        self.gslots = [torch.empty(self.numel, device=device) for _ in range(nslots)]
        self.resident = [h.to(device) for h in self.host] if mode == "no-copy" else None
        self.resident_grads = [torch.empty(self.numel, device=device) for _ in self.blocks] if self.resident else None
        self.copy_stream = torch.cuda.Stream() if device == "cuda" else None
        self.stamps = Stamps(device)
        self.last: dict[str, Any] = {}

    def _views(self, flat: Any) -> dict[str, Any]:
        out, at = {}, 0
        for name, shape in zip(self.names, self.shapes, strict=True):
            n = shape.numel()
            out[name] = flat[at : at + n].view(shape)
            at += n
        return out

    def _on_copy_stream(self) -> Any:
        import contextlib

        return self.torch.cuda.stream(self.copy_stream) if self.copy_stream is not None else contextlib.nullcontext()

    def _event(self, stream: Any = None) -> Any:
        if self.copy_stream is None:
            return None
        event = self.torch.cuda.Event()
        event.record(stream)
        return event

    def _wait(self, event: Any) -> None:
        if event is not None:
            self.torch.cuda.current_stream().wait_event(event)

    def step(self, batch: Any) -> Any:
        """One forward and backward; the loss (None in ``no-compute``); weight gradients land in ``grad_host``."""
        torch = self.torch
        from torch.func import functional_call

        parts, order, nslots, stamps = self.parts, visits(len(self.blocks)), self.depth + 1, self.stamps
        inputs, targets = batch
        compute = self.mode != "no-compute"
        self.model.zero_grad(set_to_none=True)
        issued: dict[int, tuple[Any, Any, Any, Any]] = {}
        freed: list[Any] = [None] * nslots
        gfree: list[Any] = [None] * nslots
        record: list[dict[str, Any]] = []

        def issue(k: int) -> None:
            slot, layer = k % nslots, order[k][1]
            if self.resident is not None:
                issued[k] = (self.resident[layer], None, None, None)
                return
            with self._on_copy_stream():
                self._wait(freed[slot])
                c0 = stamps.now(self.copy_stream)
                self.slots[slot].copy_(self.host[layer], non_blocking=True)
                c1 = stamps.now(self.copy_stream)
                ready = self._event(self.copy_stream)
            issued[k] = (self.slots[slot], ready, c0, c1)

        if self.copy_stream is not None:
            # slots and gradient buffers are free once the previous step's compute has used them
            self.copy_stream.wait_stream(torch.cuda.current_stream())
        start = stamps.now()
        extra = parts.extra(inputs)
        amp = torch.autocast(self.device, dtype=torch.bfloat16, enabled=self.autocast)
        loss = x0 = None
        if compute:
            with amp:
                x0 = parts.embed(inputs)
            h = x0.detach()
        saved: list[Any] = []
        grad_y = None
        for k, (phase, layer) in enumerate(order):
            for j in range(k, min(len(order), k + self.depth + 1)):
                if j not in issued:
                    issue(j)
            buf, ready, c0, c1 = issued.pop(k)
            slot = k % nslots
            w0 = stamps.now()
            self._wait(ready)
            if phase == "backward" and self.resident is None:
                self._wait(gfree[slot])
            w1 = stamps.now()
            block = self.blocks[layer]
            if phase == "forward":
                if compute:
                    saved.append(h)
                    with torch.no_grad(), amp:
                        h = functional_call(block, self._views(buf), (h, *extra))
            else:
                if compute and grad_y is None:  # first backward visit: the head and loss, with gradients
                    top = h.detach().requires_grad_(True)
                    with amp:
                        loss = parts.loss(top, targets)
                    loss.backward()
                    grad_y = top.grad
                gbuf = self.resident_grads[layer] if self.resident_grads is not None else self.gslots[slot]
                if compute:
                    xi = saved[layer].detach().requires_grad_(True)
                    w = {n: t.detach().requires_grad_(True) for n, t in self._views(buf).items()}
                    with amp:
                        y = functional_call(block, w, (xi, *extra))
                    torch.autograd.backward(y, grad_y)
                    grad_y = xi.grad
                    torch.cat([w[n].grad.reshape(-1) for n in self.names], out=gbuf)
                if self.resident is None:
                    done = self._event()
                    with self._on_copy_stream():
                        self._wait(done)
                        g0 = stamps.now(self.copy_stream)
                        self.grad_host[layer].copy_(gbuf, non_blocking=True)
                        g1 = stamps.now(self.copy_stream)
                        gfree[slot] = self._event(self.copy_stream)
                    record.append(
                        {"phase": phase, "layer": layer, "copy": (c0, c1), "grad": (g0, g1), "wait": (w0, w1)}
                    )
                    freed[slot] = self._event()
                    continue
            freed[slot] = self._event()
            record.append({"phase": phase, "layer": layer, "copy": (c0, c1), "grad": None, "wait": (w0, w1)})
        if compute:
            assert x0 is not None  # made by the forward above whenever ``compute``
            x0.backward(grad_y)
        if self.copy_stream is not None:
            torch.cuda.current_stream().wait_stream(
                self.copy_stream
            )  # the step ends when its gradients are on the host
        self.last = {"start": start, "end": stamps.now(), "visits": record}
        return loss

    def read_last(self) -> dict[str, Any]:
        """Per-visit copy, gradient-copy and stall seconds of the last step, and its time (synchronizes)."""
        if self.copy_stream is not None:
            self.torch.cuda.synchronize()
        s = self.stamps.seconds
        rows = []
        for i, v in enumerate(self.last["visits"]):
            rows.append(
                {
                    "visit": i,
                    "phase": v["phase"],
                    "layer": v["layer"],
                    "copy_s": s(*v["copy"]) if v["copy"][0] is not None else None,
                    "grad_copy_s": s(*v["grad"]) if v["grad"] is not None else None,
                    "stall_s": s(*v["wait"]),
                }
            )
        return {"step_s": s(self.last["start"], self.last["end"]), "visits": rows}

    def outputs(self, loss: Any) -> dict[str, Any]:
        """Loss and every gradient of the last step, named as ``model.named_parameters`` names them."""
        torch = self.torch
        if self.copy_stream is not None:
            torch.cuda.synchronize()  # the gradients' copies to the host have landed
        grads = {}
        streamed = {n for names in self.full_names for n in names}
        for name, p in self.model.named_parameters():
            if name not in streamed:
                grads[name] = p.grad.detach().clone() if p.grad is not None else torch.zeros_like(p)
        source = self.resident_grads if self.resident_grads is not None else self.grad_host
        for i in range(len(self.blocks)):
            views = self._views(source[i].to(self.device))
            for full, n in zip(self.full_names[i], self.names, strict=True):
                grads[full] = views[n].clone()
        return {"loss": loss.detach().float().clone(), "logits": None, "grads": grads}


@in_sessions
def run(config: Config, journal: Any = None, progress: bool = False) -> Evidence:
    """Time the streamed, resident and control arms interleaved, read per-layer events, check agreement."""
    device = resolve_device(config.device)
    batch_size = config.batch or (4 if device == "cuda" else 2)
    seq_len = config.seq_len or (2048 if device == "cuda" else 64)
    params = {
        **{
            k: getattr(config, k)
            for k in ("preset", "workload", "dtype", "seed", "warmup", "windows", "iters", "observe_steps")
        },
        "device": device,
        "device_requested": config.device,
        "batch": batch_size,
        "seq_len": seq_len,
        "depths": list(config.depths),
        "step": "forward and backward (no optimizer), blocks recomputed in backward",
        "pinned": device == "cuda",
    }

    def body(rec: Recorder) -> None:
        from measure.compare import FP32_FLOOR, compare_outputs, judge, step_outputs
        from measure.timing import WindowPlan, clock_for, sm_clock, sync_for, time_interleaved
        from measure.workload import load_workload

        workload = load_workload(config.workload_options(device), config.workload)
        if workload.stream is None or workload.forward is None:
            raise ProbebookError(
                f"workload {workload.name} sets no Workload.stream (blocks, embed, extra, loss) and "
                "Workload.forward: the stream probe visits the model block by block and compares with its forward"
            )
        batch = workload.make_batch(batch_size, seq_len)
        model = workload.model
        streamers = {f"streamed-d{d}": Streamer(workload, device, config.dtype, d, "streamed") for d in config.depths}
        streamers["no-copy"] = Streamer(workload, device, config.dtype, 1, "no-copy")
        streamers["no-compute"] = Streamer(workload, device, config.dtype, max(config.depths), "no-compute")
        block_bytes = streamers["no-copy"].numel * 4
        record_workload(rec, workload)
        rec.params.update(
            {
                "layers": len(workload.stream.blocks),
                "block_weight_bytes": block_bytes,
                # frozen weights accounted for (measure/evidence/flops.py); None without attention shapes
                "model_flops_per_token": model_flops_per_token(workload, seq_len),
            }
        )

        forward = workload.forward

        def resident() -> Any:
            loss = forward(batch)[0]
            loss.backward()
            model.zero_grad(set_to_none=True)
            return loss

        arms: dict[str, Any] = {"resident": resident}
        arms.update({name: (lambda s=s: s.step(batch)) for name, s in streamers.items()})
        rec.data["clocks"] = {"sm_mhz_before": sm_clock(device)}

        def persist(
            r: int, times: dict[str, float], clocks: dict[str, int | None], energy: dict[str, float | None]
        ) -> None:
            rec.point(
                [
                    {
                        "kind": "round",
                        "arm": a,
                        "round": r,
                        "step_s": t,
                        "sm_clock_mhz": clocks.get(a),
                        **energy_field(energy.get(a)),
                    }
                    for a, t in times.items()
                ],
                None,
                f"round {r}: " + ", ".join(f"{a} {t * 1e3:.2f} ms" for a, t in times.items()),
            )

        from measure.integrity import Integrity, WindowWatch

        check = Integrity(None, device)  # no arm runs the optimizer: every window's losses must be finite
        arms = {name: check.wrap(fn) for name, fn in arms.items()}
        plan = WindowPlan(warmup=config.warmup, windows=config.windows, iters=config.iters)
        result = time_interleaved(
            arms, clock_for(device), plan, sync_for(device), on_round=persist, watch=WindowWatch(check)
        )
        rec.data["window_failures"] = [{"arm": a, **f} for a, arm in result.arms.items() for f in arm.failures]
        rec.data["clocks"]["sm_mhz_after"] = sm_clock(device)
        tokens = batch_size * seq_len
        summaries = []
        for name, arm in result.arms.items():
            summary: dict[str, Any] = {
                "arm": name,
                "median_step_s": arm.median_s,
                "cv": arm.cv,
                "unstable": arm.unstable,
                "tok_s": tokens / arm.median_s,
            }
            if name in streamers:
                observed = []
                for i in range(config.observe_steps):
                    streamers[name].step(batch)
                    seen = streamers[name].read_last()
                    observed.append(seen)
                    rec.point(
                        [{"kind": "visit", "arm": name, "step": i, **v} for v in seen["visits"]],
                        None,
                        f"{name}: observed step {i}: {seen['step_s'] * 1e3:.2f} ms",
                    )
                summary.update(_event_summary(observed, block_bytes))
                summary["bytes_per_s"] = summary["bytes_per_step"] / arm.median_s
            summaries.append(summary)
        rec.data["arms"] = summaries
        # agreement: the streamed step against the resident one, the resident one twice for the noise floor
        first = step_outputs(model, workload.forward, batch, keep_logits=False)
        second = step_outputs(model, workload.forward, batch, keep_logits=False)
        noise = compare_outputs(first, second)
        checks = []
        for name, streamer in streamers.items():
            if name == "no-compute":
                continue
            compared = compare_outputs(first, streamer.outputs(streamer.step(batch)))
            judged = judge(compared, noise, FP32_FLOOR)
            checks.append({"arm": name, "passed": judged["passed"], **judged, "grad_worst": compared["grad_worst"]})
        rec.data["agreement"] = {"noise_floor": noise, "checks": checks}
        failed = [c["arm"] for c in checks if not c["passed"]]
        if failed:
            rec.fail(f"streamed and resident steps disagree beyond tolerance: {', '.join(failed)}")

    return execute(PROBE, VERSION, params, __file__, body, journal, progress)


def _event_summary(observed: list[dict[str, Any]], block_bytes: int) -> dict[str, Any]:
    """Medians over the observed steps of: step time, total stall, stall share, per-layer copy and grad-copy time;
    the loads (block weights copied to the device) and stores (block gradients copied back) each step made, and
    the bytes they moved, both ways (each copy is one block's flat fp32 buffer, ``block_bytes``)."""
    from measure.timing import median

    steps = [o["step_s"] for o in observed]
    stalls = [sum(v["stall_s"] for v in o["visits"]) for o in observed]
    copies = [v["copy_s"] for o in observed for v in o["visits"] if v["copy_s"] is not None]
    grads = [v["grad_copy_s"] for o in observed for v in o["visits"] if v["grad_copy_s"] is not None]
    return {
        "observed_step_s": median(steps),
        "stall_s": median(stalls),
        "stall_share": median([stall_share(s, t) for s, t in zip(stalls, steps, strict=True)]),
        "layer_copy_s": median(copies) if copies else None,
        "layer_grad_copy_s": median(grads) if grads else None,
        **moved(observed, block_bytes),
    }


def moved(observed: list[dict[str, Any]], block_bytes: int) -> dict[str, Any]:
    """Loads, stores and bytes per step, counted from the observed steps' visits (a visit with a timed copy made
    one): the same every step, so the median is each step's count; ``no-copy`` counts none."""
    import statistics

    loads = statistics.median_low(sum(v["copy_s"] is not None for v in o["visits"]) for o in observed)
    stores = statistics.median_low(sum(v["grad_copy_s"] is not None for v in o["visits"]) for o in observed)
    return {"loads_per_step": loads, "stores_per_step": stores, "bytes_per_step": (loads + stores) * block_bytes}
