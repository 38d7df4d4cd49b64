"""A configuration key: which runs measured the same thing, whatever effort each spent (issue 38, item 2).

A number's interval says where the next measurement of the same configuration on the same kind of card lands,
so the archive's runs of one configuration are one series, whatever record cites them and however many windows
or sessions each spent. The key is the probe, the params that shape the work (the model, its width, the batch,
the dtype, the arms), and the GPU model; measurement effort (windows, sessions, iterations, warm-up, time-outs,
which points a sweep walked) is left out, and so are host paths. The software stack (torch, CUDA, driver, the
probe's design version) is kept beside the key, not in it: a series that crosses a stack change is still one
series, and the change is shown as a labelled difference (asv and conbench mark such a step in a series).

Torch-free: render, reproduce and the probes' tests read it (ARCHITECTURE.md §Invariants, 2).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

EFFORT = frozenset(
    {
        # how long and how often: effort, not the configuration (measure.timing.TimingFields, the probes' budgets)
        "windows", "sessions", "iters", "iters_per_window", "warmup", "rounds", "repeats", "window_s", "steps",
        "observe_steps", "budget_s", "point_timeout_s", "timeout_s", "spawn_ahead", "isolation", "child_env",
        "cpu_memory_limit_bytes", "memory_limit", "utilisation", "device_requested",
        # which points a sweep walked: each point's own identity is its row (its tokens, its batch)
        "seq_lens", "contexts", "planned_batches", "start_batch", "max_batch", "max_tokens", "microbatches",
        # host folders and files: where a run kept things, never what it measured
        "checkpoint_dir", "corpus", "glob", "exclude",
    }
)  # fmt: skip
"""Params that say how much a run measured, or where it kept things, not what it measured."""

STACK = ("torch", "cuda", "driver", "python")
"""The machine fields that name the software stack, shown beside a key as a labelled difference."""


@dataclass(frozen=True)
class ConfigKey:
    """One configuration: what a series of runs measured."""

    ident: str
    """``cfg-<16 hex>``: the SHA-256 of the probe, the shaping params and the card model, canonical JSON."""
    probe: str
    card: str
    """The GPU model (``NVIDIA H200``), or ``cpu: <model>`` for a CPU run."""
    params: dict[str, Any]
    """The params that shape the work."""
    stack: dict[str, Any]
    """The software stack the run recorded (``STACK`` fields and the probe's design version)."""

    def label(self) -> str:
        """One line for a page: the probe, the card and the shaping params."""
        shown = ", ".join(f"{k}={_short(v)}" for k, v in sorted(self.params.items()) if v is not None)
        return f"{self.probe} on {self.card}" + (f" ({shown})" if shown else "")


def card_of(machine: dict[str, Any]) -> str:
    """The card model a run's ``machine`` names: its GPU, else its CPU (``cpu: <model>``), else ``unknown``."""
    gpu = machine.get("gpu")
    if isinstance(gpu, dict):
        gpu = gpu.get("name")
    if isinstance(gpu, str) and gpu:
        return gpu
    cpu = machine.get("cpu_model")
    return f"cpu: {cpu}" if isinstance(cpu, str) and cpu else "unknown"


def shaping(params: dict[str, Any]) -> dict[str, Any]:
    """The params that shape the work: all but ``EFFORT``."""
    return {k: v for k, v in params.items() if k not in EFFORT}


def config_key(doc: dict[str, Any]) -> ConfigKey:
    """The configuration key of one evidence document (as render reads it: ``measure.evidence.reading.for_reading``)."""
    probe = str(doc.get("probe", ""))
    found_machine, found_params = doc.get("machine"), doc.get("params")
    machine: dict[str, Any] = found_machine if isinstance(found_machine, dict) else {}
    params = shaping(found_params if isinstance(found_params, dict) else {})
    card = card_of(machine)
    raw = json.dumps({"probe": probe, "card": card, "params": params}, sort_keys=True, separators=(",", ":"))
    ident = "cfg-" + hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    stack = {k: machine.get(k) for k in STACK if machine.get(k) is not None}
    if isinstance(doc.get("probe_version"), int):
        stack["probe_version"] = doc["probe_version"]
    return ConfigKey(ident, probe, card, params, stack)


def stack_difference(a: dict[str, Any], b: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """The stack fields two runs of one key differ in: field -> (a's, b's); empty when they agree."""
    return {k: (a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)}


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":")) if not isinstance(value, str) else value
    return text if len(text) <= 40 else text[:37] + "..."
