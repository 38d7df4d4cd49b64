"""Old params a later probe version renamed or refuses, migrated so a recorded run can be run again today.

A record's Reproduce block (``render.pages.provenance.command``) and ``probebook reproduce`` rebuild each
cited run's command from the params its evidence recorded, with today's probe. Where a later version of a
probe renamed an option or refuses a value it once took, the recorded params are migrated here, in one table
per probe (``MIGRATIONS``), each entry a pure function of the recorded value with the reason it exists. The
evidence itself is never changed (ARCHITECTURE.md §Invariants): only the command written back from it.

Torch-free and probe-free, so render may read it (the Reproduce block) without importing a probe.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

DROP = object()
"""What a migration returns to leave the option out of the command (today's default applies)."""


@dataclass(frozen=True)
class Migration:
    """One recorded param of one probe, rewritten for today's probe."""

    field: str
    """The param as the evidence recorded it."""
    apply: Callable[[Any], Any]
    """Recorded value -> today's value (``DROP``: leave the option out); the value itself when it needs no change."""
    why: str
    """The note the command carries when this migration changed something."""
    rename: str | None = None
    """Today's name of the param, when a later version renamed it."""


def _arms_without_baseline(value: Any) -> Any:
    """ablate ``--arms``: version 1 listed ``baseline``; today it always runs and the option refuses it."""
    if not isinstance(value, list) or "baseline" not in value:
        return value
    rest = [arm for arm in value if arm != "baseline"]
    return rest if rest else DROP


MIGRATIONS: dict[str, tuple[Migration, ...]] = {
    "ablate": (
        Migration(
            "arms",
            _arms_without_baseline,
            "--arms no longer lists baseline: today's ablate probe always runs it and refuses the name",
        ),
    ),
}
"""Probe name -> its migrations, applied in order (``tests/test_reproduce_commands.py`` tests each)."""


def migrate(probe: str, params: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """(the params today's ``probe`` takes for a run recorded with ``params``, a note per migration applied)."""
    out = dict(params)
    notes = []
    for m in MIGRATIONS.get(probe, ()):
        if m.field not in out:
            continue
        value = m.apply(out[m.field])
        if value is out[m.field] and m.rename is None:
            continue
        del out[m.field]
        if value is not DROP:
            out[m.rename or m.field] = value
        notes.append(f"migrated: {m.why}")
    return out, notes


LIST_ITEMS_MOST = 64
"""The most items a list param of a re-run may hold (``--seq-lens``, ``--contexts``, ``--bucket-sizes``...)."""
_DAY_S = 86_400.0
BOUNDS: dict[str, float] = {
    # timing: a probe's window plan (measure.timing.TimingFields); the defaults are 2-7 windows of 1-3 calls
    "warmup": 1_000,
    "windows": 1_000,
    "iters": 100_000,
    # steps and repeats of the probes that run several (kernels, mask, stream, ddp, eval-boundary)
    "steps": 10_000,
    "observe_steps": 10_000,
    "comm_steps": 10_000,
    "repeats": 1_000,
    "intervals": 1_000,
    "interval_steps": 100_000,
    "eval_batches": 100_000,
    "documents": 100_000,
    # shapes: past any batch or context the presets fit on a 141 GB card (batch-sweep's GPU_MAX_TOKENS is 2^20)
    "batch": 1 << 20,
    "batches": 1 << 20,
    "start_batch": 1 << 20,
    "max_batch": 1 << 20,
    "microbatches": 1 << 20,
    "seq_len": 1 << 20,
    "seq_lens": 1 << 20,
    "context": 1 << 20,
    "contexts": 1 << 20,
    "sliding_window": 1 << 20,
    "global_every": 1 << 20,
    "depths": 1 << 10,
    "gpus": 1 << 10,
    "tokens": 1 << 30,
    "square": 1 << 17,
    "tokens_per_step": 1 << 30,
    "max_tokens": 1 << 30,
    "chunk_tokens": 1 << 30,
    "max_tensors": 1 << 20,
    "allreduce_mib": 1 << 20,
    "bucket_cap_mb": 1 << 20,
    "cpu_memory_limit_bytes": float(1 << 50),
    # padding's batching (measure/batching.py)
    "width": 1 << 20,
    "microbatch": 1 << 20,
    "accumulation": 1 << 20,
    "bucket_sizes": 1 << 20,
    # time limits: a week is past any run this project makes
    "budget_s": 7 * _DAY_S,
    "point_timeout_s": 7 * _DAY_S,
    "timeout_s": 7 * _DAY_S,
    "window_s": 3_600.0,
}
"""The most a re-run of a recorded run takes from its evidence, per param (``probebook reproduce``).

The probes check their own lower limits (``--windows`` at least 1) when the command is built; these are the upper
ones, far past any run this project records (tens of windows, contexts of a few thousand tokens), so only an absurd
value (``--windows 1000000000``: a run that never ends) is refused. A number of any other param must be finite."""


def _numbers(value: Any) -> list[float] | None:
    """The numbers a param holds (one, or a list's items); None when it holds anything else."""
    items = value if isinstance(value, list | tuple) else [value]
    if not items or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in items):
        return None
    return [float(v) for v in items]


def _shown(v: float) -> str:
    """A number as typed: ``1000000000``, not ``1e+09``."""
    return str(int(v)) if float(v).is_integer() else f"{v:g}"


def out_of_bounds(params: dict[str, Any], flags: dict[str, str]) -> list[str]:
    """One phrase per recorded param past its bound (``BOUNDS``, ``LIST_ITEMS_MOST``, finite), naming its option
    (``flags``: param -> ``--flag``; a param of no option today is not run, so not checked)."""
    out = []
    for name, flag in sorted(flags.items()):
        value = params.get(name)
        if isinstance(value, list | tuple) and len(value) > LIST_ITEMS_MOST:
            out.append(f"{flag} with {len(value)} items (a re-run takes at most {LIST_ITEMS_MOST})")
            continue
        numbers = _numbers(value)
        if numbers is None:
            continue
        most = BOUNDS.get(name)
        for v in numbers:
            if v != v or v in (float("inf"), float("-inf")):
                out.append(f"{flag} {v} (not a finite number)")
                break
            if most is not None and abs(v) > most:
                out.append(f"{flag} {_shown(v)} (a re-run takes at most {_shown(most)})")
                break
    return out
