"""The campaign spec (YAML): which probe, its shared config, the grid, the walk and the executor.

Two kinds. A batch sweep (``probe: batch-sweep``, or any spec with a ``walk``) walks curves: a
point is one batch of one curve (one preset at one context), the batch doubling to an OOM. Any
other registered probe runs a grid: ``grid`` maps options of the probe's ``Config`` to lists of
values, and each combination is one point (``probebook.campaign.grid``). Either way every point
gets a fully resolved config of the probe's ``Config`` dataclass, the one place its options and
their checks are declared. See README.md "Campaigns" for the format.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from measure.errors import ProbebookError
from probebook.campaign.yaml_file import read_yaml

WALKED = ("batch-sweep",)  # probes whose points a campaign walks (to an OOM or a cap); any other runs a grid
EXECUTORS = ("local", "slurm")
WALK_KEYS = ("start_batch", "max_batch", "max_tokens", "window_tokens")
# set per point by the walk; a spec's shared config may not fix them
PER_POINT = ("preset", "contexts", "start_batch", "max_batch", "max_tokens", "budget_s", "point_timeout_s")

# Every value a spec gives reaches a job: Slurm strings and the campaign's names become lines of the sbatch script
# (``#SBATCH --partition=...``, ``--job-name=pb-<campaign>-...-<preset>-s<context>-b<batch>``), where a newline
# or a space would start a new option or a shell command. So strings match a strict ASCII pattern, numbers are
# real integers (never a string, which would reach the script as written) within bounds, and the file's size,
# nesting and grid are bounded before anything is built from them.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,63}")
"""A campaign name: ASCII letters, digits and ``-`` (``str.isalnum`` passes other scripts' digits)."""
PRESET = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
"""A grid preset (part of every job's name)."""
SLURM_PUNCTUATION = "._,:=+-"
"""What ``account`` and ``partition`` (Slurm's names, one ``#SBATCH`` option each) may hold besides letters and
digits."""
CONSTRAINT_PUNCTUATION = SLURM_PUNCTUATION + "&|[]*"
"""``constraint`` also joins features by Slurm's operators (``h100&ib``, ``[rack1|rack2]``)."""
SLURM_TEXT = re.compile(f"[A-Za-z0-9{re.escape(SLURM_PUNCTUATION)}]{{1,128}}")
SLURM_CONSTRAINT = re.compile(f"[A-Za-z0-9{re.escape(CONSTRAINT_PUNCTUATION)}]{{1,256}}")
SLURM_INTS = {"gpus": (0, 64), "time_min": (1, 366 * 24 * 60), "cpus": (1, 4096), "mem_gb": (1, 1 << 16)}
"""Slurm's numbers and their bounds (inclusive)."""
EXECUTOR_NUMBERS = {"max_concurrent": (1, 4096), "point_timeout_s": (0, 7 * 86400), "grace_s": (0, 86400)}
EXECUTOR_NUMBERS["poll_s"] = (0, 3600)
"""The executor's numbers: ``max_concurrent`` an integer >= its low; the seconds above 0, at most the high."""
WALK_MAX = 1 << 40
"""The largest walk value (``max_tokens`` ~1e12: past any GPU's memory)."""
CONFIG_TEXT = re.compile(r"[\x20-\x7e]{0,256}")
"""A string of the probe's config (``dtype``, ``workload``): printable ASCII, no newline."""
CONFIG_INT_MAX = 1 << 53
MAX_GRID = 64
"""The most values one grid option (``grid.preset``, ``grid.context``, ...) may list."""
MAX_LIST = 256
"""The most items of one list value of a probe option (``seq_lens: [...]``)."""
MAX_POINTS = 4096
"""The most points a campaign may plan (each is one job)."""


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
    """A sweep's ``preset`` and ``context`` lists (one curve per pair); a grid's option -> values (a point each
    combination)."""
    walk: dict[str, Any] | None
    """``start_batch``, ``max_batch``, ``max_tokens``, ``window_tokens``; None for a grid (no walk)."""
    executor: Executor
    """Concurrency, timeouts, Slurm settings."""

    def to_json(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        if self.walk is None:  # a grid's spec has no walk, and a spec written back from it must not gain one
            del out["walk"]
        return out


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
    except (TypeError, ValueError, ProbebookError) as exc:
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
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise ProbebookError(
            f"{where}: 'campaign' must be a name of ASCII letters, digits and '-' (at most 64), got {_shown(name)}"
        )
    probe = doc.get("probe")
    from measure.probes import PROBES as REGISTRY

    if not isinstance(probe, str) or probe not in REGISTRY:
        raise ProbebookError(
            f"{where}: probe: {_shown(probe)} is not a registered probe (one of {', '.join(REGISTRY)})"
        )
    walks = probe in WALKED or doc.get("walk") is not None
    if walks and probe not in WALKED:
        raise ProbebookError(
            f"{where}: walk: only {', '.join(WALKED)} points walk to an OOM; a {probe} campaign runs every "
            "point of its grid (remove walk)"
        )
    config = _section(doc, "config", where)
    fixed = sorted(set(config) & set(PER_POINT), key=str) if walks else []
    if fixed:
        raise ProbebookError(f"{where}: config.{fixed[0]} is set per point by the grid and the walk; remove it")
    options = _fields(probe_config_class(probe))
    unknown = sorted(set(config) - set(options), key=str)
    if unknown:
        raise ProbebookError(f"{where}: config.{_name(unknown[0])} is not an option of the {probe} probe")
    for key, value in config.items():
        _config_value(value, options[key].type, f"{where}: config.{key}")
    grid = _section(doc, "grid", where)
    if not walks:
        spec = Spec(
            name,
            probe,
            dict(config),
            _option_grid(grid, options, config, probe, where),
            None,
            executor_from(doc, where),
        )
        points(spec, where)  # every point's config and command are built (and so checked) now, not when it runs
        return spec
    if set(grid) != {"preset", "context"}:
        raise ProbebookError(f"{where}: 'grid' needs exactly the lists 'preset' and 'context'")
    for key in ("preset", "context"):
        values = grid[key]
        if not isinstance(values, list) or not values or len(set(map(str, values))) != len(values):
            raise ProbebookError(f"{where}: grid.{key} must be a non-empty list without repeats")
        if len(values) > MAX_GRID:
            raise ProbebookError(f"{where}: grid.{key} lists {len(values)} values; at most {MAX_GRID}")
    for preset in grid["preset"]:
        if not isinstance(preset, str) or not PRESET.fullmatch(preset):
            raise ProbebookError(
                f"{where}: grid.preset must list preset names (ASCII letters, digits, '.', '_', '-'), "
                f"got {_shown(preset)}"
            )
    if not all(_integer(s) and 0 < s <= WALK_MAX for s in grid["context"]):
        raise ProbebookError(f"{where}: grid.context must list positive integers (at most {WALK_MAX})")
    grid = {"preset": list(grid["preset"]), "context": list(grid["context"])}
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
        if not (value is None and key == "max_batch") and (not _integer(value) or not low <= value <= WALK_MAX):
            raise ProbebookError(
                f"{where}: walk.{key} must be an integer from {low} to {WALK_MAX}, got {_shown(value)}"
            )
    executor = executor_from(doc, where)
    spec = Spec(name, probe, dict(config), grid, walk, executor)
    points(spec, where)  # every point's config is built (and so checked) now, not when it runs
    return spec


def _option_grid(
    grid: dict[str, Any], options: dict[str, Any], config: dict[str, Any], probe: str, where: str
) -> dict[str, list[Any]]:
    """A grid campaign's ``grid``: options of the probe's ``Config`` (none also in ``config``), each a list of
    values its field takes; one line naming the file and the option otherwise."""
    if not grid:
        raise ProbebookError(f"{where}: grid: list at least one option of the {probe} probe with its values")
    for key, values in grid.items():
        if key not in options:
            raise ProbebookError(
                f"{where}: grid.{_name(key)} is not an option of the {probe} probe "
                f"(`probebook measure {probe} --help` lists them)"
            )
        if key in config:
            raise ProbebookError(f"{where}: grid.{key} is also given in config; give it in one place")
        if not isinstance(values, list) or not values or len(set(map(repr, values))) != len(values):
            raise ProbebookError(f"{where}: grid.{key} must be a non-empty list without repeats")
        if len(values) > MAX_GRID:
            raise ProbebookError(f"{where}: grid.{key} lists {len(values)} values; at most {MAX_GRID}")
        for i, value in enumerate(values):
            _config_value(value, options[key].type, f"{where}: grid.{key}[{i}]")
    total = math.prod(len(v) for v in grid.values())
    if total > MAX_POINTS:
        raise ProbebookError(f"{where}: the grid plans {total} points (jobs), over {MAX_POINTS}; split it")
    return {key: list(values) for key, values in grid.items()}


def executor_from(doc: dict[str, Any], where: str) -> Executor:
    """A spec's ``executor`` section (with its ``slurm`` settings), checked; one line naming the field otherwise.

    ``probebook reproduce --executor-spec`` reads the same section, so its jobs take the same settings."""
    raw = dict(_section(doc, "executor", where))
    given = _section(raw, "slurm", where + " executor")
    _known(Slurm, given, f"{where}: executor.slurm")
    for key, value in given.items():
        field_name = f"{where}: executor.slurm.{key}"
        if key in SLURM_INTS:
            low, high = SLURM_INTS[key]
            if not _integer(value) or not low <= value <= high:
                raise ProbebookError(f"{field_name} must be an integer from {low} to {high}, got {_shown(value)}")
        elif value is not None:
            pattern, allowed = (
                (SLURM_CONSTRAINT, CONSTRAINT_PUNCTUATION) if key == "constraint" else (SLURM_TEXT, SLURM_PUNCTUATION)
            )
            if not isinstance(value, str) or not pattern.fullmatch(value):
                raise ProbebookError(
                    f"{field_name} must be one Slurm word (ASCII letters, digits and {' '.join(allowed)}; no space "
                    f"or newline; at most {128 if key != 'constraint' else 256}), got {_shown(value)}"
                )
    slurm = _build(Slurm, given, f"{where}: executor.slurm")
    raw.pop("slurm", None)
    _known(Executor, raw, f"{where}: executor")
    for key, value in raw.items():
        if key == "gpu_lock":
            if not isinstance(value, bool):
                raise ProbebookError(f"{where}: executor.gpu_lock must be true or false, got {_shown(value)}")
            continue
        low, high = EXECUTOR_NUMBERS[key]
        whole = key == "max_concurrent"
        number = _integer(value) or (not whole and isinstance(value, float) and math.isfinite(value))
        if not number or not (low <= value if whole else low < value) or value > high:
            kind = f"an integer from {low}" if whole else f"a number of seconds above {low}"
            raise ProbebookError(f"{where}: executor.{key} must be {kind}, at most {high}, got {_shown(value)}")
    executor = _build(Executor, {**raw, "slurm": slurm}, f"{where}: executor")
    if executor.max_concurrent < 1 or executor.point_timeout_s <= 0 or executor.grace_s <= 0 or executor.poll_s <= 0:
        raise ProbebookError(f"{where}: executor.max_concurrent must be >= 1 and the time limits and poll_s > 0")
    if slurm.time_min * 60 < executor.point_timeout_s + executor.grace_s:
        raise ProbebookError(
            f"{where}: executor.slurm.time_min ({slurm.time_min} min) must cover point_timeout_s + grace_s "
            f"({executor.point_timeout_s + executor.grace_s:g} s)"
        )
    return executor


def _integer(value: Any) -> bool:
    """A real integer: not a bool, not a float, not a string of digits."""
    return isinstance(value, int) and not isinstance(value, bool)


def _shown(value: Any) -> str:
    """A value as an error line shows it: its repr, clipped (a spec value may be megabytes or hold newlines)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


def _name(key: Any) -> str:
    """A spec key as an error line names it: as written when it is a plain name, else its repr, clipped."""
    return key if isinstance(key, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]{0,63}", key) else _shown(key)


def _known(cls: Any, values: dict[str, Any], where: str) -> None:
    unknown = sorted(set(values) - set(_fields(cls)), key=str)
    if unknown:
        raise ProbebookError(f"{where}: unknown field {unknown[0]!r} (known: {', '.join(_fields(cls))})")


def _config_value(value: Any, annotation: Any, where: str) -> None:
    """One value of the probe's config against its field's type (``int``, ``float | None``, ``str``,
    ``tuple[int, ...]`` as a list...), bounded."""
    kinds = {k.strip() for k in str(annotation).split("|")}
    items = [k.removeprefix("tuple[").partition(",")[0].strip() for k in kinds if k.startswith("tuple[")]
    if isinstance(value, list):
        if not items or not 0 < len(value) <= MAX_LIST:
            wanted = f"a list of 1 to {MAX_LIST} values" if items else "one value, not a list"
            raise ProbebookError(f"{where} must be {wanted}, got {_shown(value)}")
        for i, item in enumerate(value):
            _config_value(item, items[0], f"{where}[{i}]")
        return
    if value is None:
        ok = "None" in kinds
    elif isinstance(value, bool):
        ok = "bool" in kinds
    elif isinstance(value, int):
        ok = bool(kinds & {"int", "float"}) and abs(value) <= CONFIG_INT_MAX
    elif isinstance(value, float):
        ok = "float" in kinds and math.isfinite(value) and abs(value) <= CONFIG_INT_MAX
    elif isinstance(value, str):
        ok = "str" in kinds and CONFIG_TEXT.fullmatch(value) is not None
    else:
        ok = False
    if not ok:
        wanted = " or ".join(sorted(k.replace("None", "null") for k in kinds))
        text = ", a string of printable ASCII" if "str" in kinds else ""
        raise ProbebookError(f"{where} must be {wanted}{text} (at most {CONFIG_INT_MAX}), got {_shown(value)}")


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
    """Every point of every curve, in curve order then batch order, each with its resolved probe config;
    for a grid, every combination of its values in grid order (``grid.combinations``)."""
    from measure.probes.batch_sweep import plan_batches

    cls = probe_config_class(spec.probe)
    if spec.walk is None:
        return _grid_points(spec, cls, where)
    out: list[dict[str, Any]] = []
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
                if len(out) == MAX_POINTS:
                    raise ProbebookError(f"{where}: the grid and walk plan over {MAX_POINTS} points (jobs); split it")
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


def _grid_points(spec: Spec, cls: Any, where: str) -> list[dict[str, Any]]:
    """A grid campaign's points: the shared config with one combination of the grid's values each."""
    from measure.cli import declarations
    from probebook.campaign import grid

    declared = declarations()
    combos = grid.combinations(spec.grid)
    out = []
    for n, values in enumerate(combos):
        key = grid.key(n, len(combos), values)
        given = {k: tuple(v) if isinstance(v, list) else v for k, v in {**spec.config, **values}.items()}
        config = _build(cls, given, f"{where}: point {key}")
        out.append(
            grid.point(
                key, spec.probe, values, config, grid.command(spec.probe, config, declared, f"{where}: point {key}")
            )
        )
    return out
