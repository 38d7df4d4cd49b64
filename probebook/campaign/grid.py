"""A grid campaign's points: every combination of the option values a spec's ``grid`` lists, one job each, no walk.

``spec`` checks the grid against the probe's ``Config`` and builds each point's config; this module names the
points and writes each one's command. A point's key is its place and its values (``p03-tiny-16``: a file name
and part of a Slurm job name, so only ``[A-Za-z0-9._-]``). Its command is the ``python -m measure PROBE ...``
that repeats it, written by the code that writes a record's Reproduce block (``render.pages.provenance.command``)
and parsed back by ``probebook measure``'s own parser (``probebook.reproduce.commands.build_config``): a point
whose command would not rebuild its config is refused at plan, so the command shown is the run.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from typing import Any

from measure.errors import ProbebookError

KIND = "grid"
"""A grid campaign's manifest ``data.kind`` (a batch sweep's walk has none)."""
UNSAFE = re.compile(r"[^A-Za-z0-9._]+")
SLUG_CHARS = 24
"""The most characters of one value in a point's key."""


def combinations(grid: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """Every combination of the grid's values, the first option varying slowest (the spec's order)."""
    names = list(grid)
    return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*grid.values())]


def _slug(value: Any) -> str:
    if isinstance(value, list):
        return "_".join(_slug(v) for v in value)
    text = "null" if value is None else str(value).lower() if isinstance(value, bool) else str(value)
    return UNSAFE.sub("_", text)[:SLUG_CHARS].strip("_.") or "_"


def key(n: int, total: int, values: dict[str, Any]) -> str:
    """Point ``n`` of ``total``: ``p<n>-<value>-<value>...`` (``n`` zero-padded: keys sort in grid order)."""
    return "-".join([f"p{n:0{len(str(total - 1))}d}", *(_slug(v) for v in values.values())])


def command(probe: str, config: Any, declared: dict[str, Any], where: str) -> str:
    """The ``python -m measure PROBE ...`` command that runs ``config`` (the probe's ``Config``); ``declared``:
    ``measure.cli.declarations()``. One line naming ``where`` when no command line can give that config."""
    from probebook.reproduce.commands import build_config
    from render.pages.provenance import command as written

    params = {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(config).items()}
    doc = {"probe": probe, "probe_version": declared[probe]["version"], "params": params}
    text, _notes = written(doc, declared, public=False)
    if text is None or dataclasses.asdict(build_config(text)) != dataclasses.asdict(config):
        raise ProbebookError(f"{where}: no `python -m measure {probe}` command line gives this config (a null option?)")
    return "python -m measure" + text.removeprefix("probebook measure")


def point(key: str, probe: str, values: dict[str, Any], config: Any, command: str) -> dict[str, Any]:
    """One grid point as the manifest holds it: a curve of its own (``parallel``: no point waits for another)."""
    resolved = {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(config).items()}
    return {
        "key": key,
        "curve": key,
        "index": 0,
        "batch": None,
        "probe": probe,
        "options": values,
        "config": resolved,
        "command": command,
    }
