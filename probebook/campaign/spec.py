"""The campaign spec (YAML): which probe, its shared config, the grid of curves, the walk and the executor.

Every point gets a fully resolved config of the probe's ``Config`` dataclass; a point is one
batch of one curve (one preset at one context). See README.md "Campaigns" for the format.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from measure.errors import ProbebookError

PROBES = ("batch-sweep",)  # probes whose points a campaign can walk (to an OOM or a cap)
EXECUTORS = ("local", "slurm")
WALK_KEYS = ("start_batch", "max_batch", "max_tokens", "window_tokens")
# set per point by the walk; a spec's shared config may not fix them
PER_POINT = ("preset", "contexts", "start_batch", "max_batch", "max_tokens", "budget_s", "point_timeout_s")


@dataclass(frozen=True)
class Slurm:
    """Slurm settings of every point's job (submitit's ``slurm_*`` parameters)."""

    account: str | None = None
    """``--account``; None: the cluster's default."""
    partition: str | None = None
    """``--partition``; None: the cluster's default."""
    gpus: int = 1
    """GPUs per job (``--gpus-per-node``)."""
    time_min: int = 20
    """Job time limit in minutes (``--time``); must exceed the point timeout."""
    cpus: int = 8
    """CPUs per task (``--cpus-per-task``)."""
    mem_gb: int = 64
    """Memory per node in GB (``--mem``)."""
    constraint: str | None = None
    """``--constraint``, e.g. ``h100``; None: any node."""


@dataclass(frozen=True)
class Executor:
    """How points run: concurrency, time limits, and the Slurm settings."""

    max_concurrent: int = 2
    """Points in flight at once (curves advance in parallel up to this)."""
    point_timeout_s: float = 600.0
    """The parent watchdog cancels a point's job after this many seconds and records a timeout."""
    grace_s: float = 60.0
    """The job's own time limit is the point timeout plus this, so the watchdog records the timeout first."""
    gpu_lock: bool = True
    """Local executor: points take a lock on the device, so two points never use one GPU at once.

    Slurm gives each job its own allocation, so there it is not taken (nor audited)."""
    poll_s: float = 5.0
    """Slurm: seconds between the runner's batched ``sacct`` queries (one call for every live job)."""
    slurm: Slurm = field(default_factory=Slurm)
    """Slurm settings (ignored by the local executor)."""


@dataclass(frozen=True)
class Spec:
    """A campaign spec as read and checked."""

    name: str
    """Campaign name (letters, digits, ``-``)."""
    probe: str
    """The probe every point runs."""
    config: dict[str, Any]
    """Fields of the probe's ``Config`` shared by every point."""
    grid: dict[str, list[Any]]
    """``preset`` and ``context`` lists: one curve per pair."""
    walk: dict[str, Any]
    """``start_batch``, ``max_batch``, ``max_tokens``, ``window_tokens``."""
    executor: Executor
    """Concurrency, timeouts, Slurm settings."""

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def probe_config_class(probe: str) -> Any:
    """The probe module's config dataclass (``Config``)."""
    from measure.probes import PROBES as MODULES

    return importlib.import_module(MODULES[probe]).Config


def _fields(cls: Any) -> dict[str, Any]:
    return {f.name: f for f in dataclasses.fields(cls)}


def _section(doc: dict[str, Any], name: str, where: str) -> dict[str, Any]:
    value = doc.get(name) or {}
    if not isinstance(value, dict):
        raise ProbebookError(f"{where}: '{name}' must be a mapping")
    return value


def _build(cls: Any, values: dict[str, Any], where: str) -> Any:
    unknown = sorted(set(values) - set(_fields(cls)))
    if unknown:
        raise ProbebookError(f"{where}: unknown field {unknown[0]!r} (known: {', '.join(_fields(cls))})")
    try:
        return cls(**values)
    except (TypeError, ProbebookError) as exc:
        raise ProbebookError(f"{where}: {exc}") from None


def parse(doc: Any, where: str) -> Spec:
    """Check a spec mapping; one line naming the file and field on any problem."""
    if not isinstance(doc, dict):
        raise ProbebookError(f"{where}: a campaign spec is a YAML mapping")
    known = {"campaign", "probe", "config", "grid", "walk", "executor"}
    extra = sorted(set(doc) - known)
    if extra:
        raise ProbebookError(f"{where}: unknown key {extra[0]!r} (a spec has {', '.join(sorted(known))})")
    name = doc.get("campaign")
    if not isinstance(name, str) or not name or not all(c.isalnum() or c == "-" for c in name):
        raise ProbebookError(f"{where}: 'campaign' must be a name of letters, digits and '-', got {name!r}")
    probe = doc.get("probe")
    if probe not in PROBES:
        raise ProbebookError(
            f"{where}: 'probe' must be one of {', '.join(PROBES)} (points walk to an OOM), got {probe!r}"
        )
    config = _section(doc, "config", where)
    fixed = sorted(set(config) & set(PER_POINT))
    if fixed:
        raise ProbebookError(f"{where}: config.{fixed[0]} is set per point by the grid and the walk; remove it")
    unknown = sorted(set(config) - set(_fields(probe_config_class(probe))))
    if unknown:
        raise ProbebookError(f"{where}: config.{unknown[0]} is not an option of the {probe} probe")
    grid = _section(doc, "grid", where)
    if set(grid) != {"preset", "context"}:
        raise ProbebookError(f"{where}: 'grid' needs exactly the lists 'preset' and 'context'")
    for key in ("preset", "context"):
        values = grid[key]
        if not isinstance(values, list) or not values or len(set(map(str, values))) != len(values):
            raise ProbebookError(f"{where}: grid.{key} must be a non-empty list without repeats")
    if not all(isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in grid["context"]):
        raise ProbebookError(f"{where}: grid.context must list positive integers")
    grid = {"preset": [str(p) for p in grid["preset"]], "context": list(grid["context"])}
    walk = {
        "start_batch": 1,
        "max_batch": None,
        "max_tokens": 1 << 20,
        "window_tokens": 0,
        **_section(doc, "walk", where),
    }
    bad = sorted(set(walk) - set(WALK_KEYS))
    if bad:
        raise ProbebookError(f"{where}: unknown walk key {bad[0]!r} (known: {', '.join(WALK_KEYS)})")
    for key in WALK_KEYS:
        value = walk[key]
        low = 0 if key == "window_tokens" else 1
        if not (value is None and key == "max_batch") and (
            not isinstance(value, int) or isinstance(value, bool) or value < low
        ):
            raise ProbebookError(f"{where}: walk.{key} must be an integer >= {low}, got {value!r}")
    executor = executor_from(doc, where)
    spec = Spec(name, probe, dict(config), grid, walk, executor)
    points(spec, where)  # every point's config is built (and so checked) now, not when it runs
    return spec


def executor_from(doc: dict[str, Any], where: str) -> Executor:
    """A spec's ``executor`` section (with its ``slurm`` settings), checked; one line naming the field otherwise.

    ``probebook reproduce --executor-spec`` reads the same section, so its jobs take the same settings."""
    raw = dict(_section(doc, "executor", where))
    slurm = _build(Slurm, _section(raw, "slurm", where + " executor"), f"{where}: executor.slurm")
    raw.pop("slurm", None)
    executor = _build(Executor, {**raw, "slurm": slurm}, f"{where}: executor")
    if executor.max_concurrent < 1 or executor.point_timeout_s <= 0 or executor.grace_s <= 0 or executor.poll_s <= 0:
        raise ProbebookError(f"{where}: executor.max_concurrent must be >= 1 and the time limits and poll_s > 0")
    if slurm.time_min * 60 < executor.point_timeout_s + executor.grace_s:
        raise ProbebookError(
            f"{where}: executor.slurm.time_min ({slurm.time_min} min) must cover point_timeout_s + grace_s "
            f"({executor.point_timeout_s + executor.grace_s:g} s)"
        )
    return executor


def read_yaml(path: Path) -> Any:
    """A YAML file's document; one line when it cannot be read or parsed."""
    import yaml

    try:
        return yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ProbebookError(f"{path}: cannot read ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        raise ProbebookError(f"{path}: not valid YAML ({str(exc).splitlines()[0]})") from None


def load(path: Path) -> Spec:
    """Read and check a spec file."""
    return parse(read_yaml(path), str(path))


def window_iters(base_iters: int, batch: int, context: int, window_tokens: int) -> int:
    """Calls per timed window: at least ``base_iters`` and at least ``window_tokens`` tokens per window.

    Small batches take a few milliseconds per step; without more calls per window their windows
    are too short to time steadily (a CV above 5%).
    """
    return max(base_iters, math.ceil(window_tokens / (batch * context)) if window_tokens else 1)


def points(spec: Spec, where: str = "spec") -> list[dict[str, Any]]:
    """Every point of every curve, in curve order then batch order, each with its resolved probe config."""
    from measure.probes.batch_sweep import plan_batches

    cls = probe_config_class(spec.probe)
    out = []
    for preset in spec.grid["preset"]:
        for context in spec.grid["context"]:
            curve = f"{preset}-s{context}"
            batches = plan_batches(context, spec.walk["start_batch"], spec.walk["max_batch"], spec.walk["max_tokens"])
            if not batches:
                raise ProbebookError(f"{where}: curve {curve}: no batch from walk.start_batch fits walk.max_tokens")
            for index, batch in enumerate(batches):
                base = {**spec.config, "preset": preset}
                iters = window_iters(base.get("iters", 3), batch, context, spec.walk["window_tokens"])
                values = {
                    **base,
                    "contexts": (context,),
                    "start_batch": batch,
                    "max_batch": batch,
                    "max_tokens": batch * context,
                    "iters": iters,
                    "point_timeout_s": spec.executor.point_timeout_s,
                }
                config = _build(cls, values, f"{where}: curve {curve} batch {batch}")
                resolved = dataclasses.asdict(config)
                resolved["contexts"] = list(resolved["contexts"])
                out.append(
                    {
                        "key": f"{curve}-b{batch}",
                        "curve": curve,
                        "index": index,
                        "preset": preset,
                        "context": context,
                        "batch": batch,
                        "config": resolved,
                    }
                )
    return out
