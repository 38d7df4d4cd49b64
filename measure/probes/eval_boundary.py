"""``eval-boundary``: steady-state training beside a full evaluation pass and a checkpoint write and read.

The measurement protocol of issue 27: an evaluation and a checkpoint are measured apart from
steady-state training, and a throughput that includes them is never compared with one that does
not. So this probe times, each apart:

* ``steady``: windows of real training steps (``measure.timing.time_windows``, with the integrity
  watch), tokens per second of training alone;
* ``eval``: one full evaluation pass, the workload's ``forward`` over ``--eval-batches`` batches in
  ``model.eval()`` under ``torch.no_grad()`` (its own autocast; no backward, no update);
* ``checkpoint-write``: ``torch.save`` of the model's and the optimizer's ``state_dict`` to a file in
  a temporary folder on the filesystem of ``--checkpoint-dir`` (default: the working directory),
  flushed and ``fsync``-ed, so the seconds include the data reaching the device, not only the page
  cache; the file's bytes and GB/s (10^9 bytes per second);
* ``checkpoint-read``: ``torch.load(..., weights_only=True, map_location=device)`` of that file. The
  file was just written, so the read is from a warm page cache (recorded as ``page_cache: warm``):
  a cold read from storage is slower and is not what this row measures;

and then ``interval``: ``--interval-steps`` training steps followed by one evaluation pass and one
checkpoint write, timed as one span on the host clock after a synchronize. Its tokens per second
are labelled ``includes eval + checkpoint`` and the steady rows ``training only``; the summary keeps
them under different names, with the boundary's cost as a fraction of the interval, so they are
never read as like for like. The folder is removed afterwards.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from measure.device_check import resolve_device
from measure.errors import ProbebookError
from measure.evidence.contracts import tokens_per_second
from measure.evidence.envelope import Evidence
from measure.probes.common import OneStepConfig, mark_engagement, positive, record_workload
from measure.run.runner import Recorder, execute
from measure.run.sessions import in_sessions
from measure.timing import energy_field

PROBE = "eval-boundary"
VERSION = 1
HELP = (
    "Steady-state training, a full eval pass, a checkpoint write and read, each timed apart, and a labelled interval."
)
EXAMPLE = "probebook measure eval-boundary --preset 250m --eval-batches 16 --interval-steps 50"
STEADY_LABEL = "training only"
INTERVAL_LABEL = "includes eval + checkpoint"


@dataclass(frozen=True)
class Config(OneStepConfig):
    """Options of the eval-boundary probe (a plug-in must set ``Workload.forward`` for the eval pass)."""

    eval_batches: int = 8
    """Batches in one full evaluation pass (forward only, no grad)."""
    repeats: int = 3
    """Times each of the eval pass, checkpoint write and checkpoint read is timed (every one kept)."""
    interval_steps: int = 20
    """Training steps in the interval that ends with one eval pass and one checkpoint write."""
    intervals: int = 2
    """Intervals timed (every one kept)."""
    checkpoint_dir: str | None = None
    """Folder whose filesystem receives the checkpoint (a temporary subfolder, removed after; default: cwd)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("eval_batches", "repeats", "interval_steps", "intervals"):
            positive(name, getattr(self, name))
        if self.checkpoint_dir is not None and not Path(self.checkpoint_dir).is_dir():
            raise ProbebookError(f"--checkpoint-dir {self.checkpoint_dir}: not a folder")


def gb_per_s(n_bytes: int, seconds: float) -> float:
    """Bandwidth in GB/s (10^9 bytes per second) of ``n_bytes`` moved in ``seconds``."""
    return n_bytes / seconds / 1e9


def boundary_share(interval_s: float, steps: int, steady_step_s: float) -> float:
    """Fraction of an interval (seconds) not spent in its ``steps`` steady-state steps (``steady_step_s`` each).

    The eval pass and checkpoint write's cost as seen by a training run: ``1 - steps·step / interval``.
    """
    return 1.0 - steps * steady_step_s / interval_s


@in_sessions
def run(config: Config, journal: Any = None, progress: bool = False) -> Evidence:
    """Time steady training, the eval pass, checkpoint write/read and the interval; return the evidence."""
    device = resolve_device(config.device)
    batch, seq_len = config.step_shape(device)
    params = {**config.params(device), "batch": batch, "seq_len": seq_len}

    def body(rec: Recorder) -> None:
        import torch

        from measure.integrity import Integrity, WindowWatch
        from measure.timing import clock_for, median, sm_clock, sync_for, time_windows
        from measure.workload import load_workload
        from measure.workload.observe import observe

        workload = load_workload(config.workload_options(device), config.workload)
        record_workload(rec, workload)
        if workload.forward is None:
            raise ProbebookError(
                f"workload {workload.name} has no forward (Workload.forward): the eval pass needs the step's forward"
            )
        if workload.optimizer is None:
            raise ProbebookError(
                f"workload {workload.name} does not expose its optimizer: a checkpoint holds its state; "
                "return it as the 4th item of the factory's tuple (or Workload.optimizer)"
            )
        model, opt, forward = workload.model, workload.optimizer, workload.forward
        data = workload.make_batch(batch, seq_len)
        tokens = batch * seq_len
        sync = sync_for(device)
        rec.data["clocks"] = {"sm_mhz_before": sm_clock(device)}

        check = Integrity(opt, device)
        steady = time_windows(
            check.wrap(lambda: workload.step(data)), clock_for(device), config.plan(), sync, WindowWatch(check)
        )
        check.close()
        if steady.failures:
            rec.data["window_failures"] = steady.failures
            rec.fail(f"steady-state step: window {steady.failures[0]['window']}: {steady.failures[0]['failure']}")
        step_s = steady.checked_median_s
        rec.point(
            [
                {
                    "phase": "steady",
                    "label": STEADY_LABEL,
                    "window": i,
                    "seconds": t,
                    "tokens": tokens,
                    "tok_s": tokens_per_second(tokens, t),
                    "sm_clock_mhz": mhz,
                    **energy_field(joules),
                }
                for i, (t, mhz, joules) in enumerate(
                    zip(steady.times_s, steady.sm_clock_mhz, steady.energy_j, strict=True)
                )
            ],
            None,
            f"steady: {step_s * 1e3:.2f} ms/step",
        )

        def timed(fn: Any) -> float:
            sync()
            start = time.perf_counter()
            fn()
            sync()
            return time.perf_counter() - start

        def eval_pass() -> None:
            was_training = model.training
            model.eval()
            try:
                with torch.no_grad():
                    for _ in range(config.eval_batches):
                        forward(data)
            finally:
                model.train(was_training)

        folder = Path(tempfile.mkdtemp(prefix="probebook-ckpt-", dir=config.checkpoint_dir or os.getcwd()))
        path = folder / "checkpoint.pt"

        def write() -> None:
            with open(path, "wb") as f:
                torch.save({"model": model.state_dict(), "optimizer": opt.state_dict()}, f)
                f.flush()
                os.fsync(f.fileno())  # the bytes reach the device, not only the page cache

        def read() -> None:
            torch.load(path, map_location=device, weights_only=True)

        try:
            eval_tokens = config.eval_batches * tokens
            rows: list[dict[str, Any]] = []
            for i in range(config.repeats):
                t = timed(eval_pass)
                rows.append(
                    {
                        "phase": "eval",
                        "label": "eval pass",
                        "repeat": i,
                        "seconds": t,
                        "tokens": eval_tokens,
                        "tok_s": tokens_per_second(eval_tokens, t),
                    }
                )
            for phase, label, action in (
                ("checkpoint-write", "torch.save + fsync", write),
                ("checkpoint-read", "torch.load (warm page cache)", read),
            ):
                for i in range(config.repeats):
                    t = timed(action)
                    size = path.stat().st_size
                    rows.append(
                        {
                            "phase": phase,
                            "label": label,
                            "repeat": i,
                            "seconds": t,
                            "bytes": size,
                            "gb_per_s": gb_per_s(size, t),
                        }
                    )
            rec.point(rows, None, "eval pass, checkpoint write and read")

            def interval() -> None:
                for _ in range(config.interval_steps):
                    workload.step(data)
                eval_pass()
                write()

            interval_tokens = config.interval_steps * tokens
            spans = []
            for i in range(config.intervals):
                t = timed(interval)
                spans.append(t)
                rec.point(
                    [
                        {
                            "phase": "interval",
                            "label": INTERVAL_LABEL,
                            "repeat": i,
                            "seconds": t,
                            "steps": config.interval_steps,
                            "tokens": interval_tokens,
                            "tok_s": tokens_per_second(interval_tokens, t),
                        }
                    ],
                    None,
                    f"interval {i}: {t:.3f} s",
                )
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        rec.data["clocks"]["sm_mhz_after"] = sm_clock(device)
        rec.data["observed"] = observe(workload, data, device)
        mark_engagement(rec, rec.data["observed"], compile_requested=config.compile, device=device, dtype=config.dtype)

        def med(phase: str) -> float:
            return median([r["seconds"] for r in rows if r["phase"] == phase])

        size = rows[-1]["bytes"]
        interval_s = median(spans)
        rec.data["checkpoint"] = {
            "contents": "model.state_dict() and optimizer.state_dict()",
            "bytes": size,
            "filesystem_of": str(Path(config.checkpoint_dir or os.getcwd()).resolve()),
            "fsync": True,
            "read_page_cache": "warm",
        }
        rec.data["summary"] = {
            "steady_step_s": step_s,
            "steady_cv": steady.cv,
            "unstable": steady.unstable,
            "training_only_tok_s": tokens_per_second(tokens, step_s),
            "eval_pass_s": med("eval"),
            "checkpoint_write_s": med("checkpoint-write"),
            "checkpoint_write_gb_s": gb_per_s(size, med("checkpoint-write")),
            "checkpoint_read_s": med("checkpoint-read"),
            "checkpoint_read_gb_s": gb_per_s(size, med("checkpoint-read")),
            "interval_s": interval_s,
            "interval_including_eval_checkpoint_tok_s": tokens_per_second(interval_tokens, interval_s),
            "boundary_share_of_interval": boundary_share(interval_s, config.interval_steps, step_s),
            "comparable": False,
            "note": (
                f"training_only_tok_s ({STEADY_LABEL}) and interval_including_eval_checkpoint_tok_s "
                f"({INTERVAL_LABEL}) measure different things: never compare them as like for like"
            ),
        }

    return execute(PROBE, VERSION, params, __file__, body, journal, progress)
