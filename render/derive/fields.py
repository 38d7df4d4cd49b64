"""What a number stored in evidence is, for ``value(ref, path)``: its basis, and the windows it was taken over.

A page may show any number an evidence document holds (``value(eager, "data.summary.optimizer_median_s")``).
Whether it can carry a 95% interval depends on what the field *is*, and that is decided here by one rule over its
dotted path, not page by page (issue 23):

* a count, a shape, a setting the probe was given (``params.*``, ``tokens``, ``batch``, ``calls``, ``findings``,
  a check's bounds, the NVML sampling interval) is ``exact``;
* a reading of one run (a clock, a power limit, a machine field, a CV, a peak, a numerical error, one window's
  own figure under ``samples``) is ``observed``;
* anything else is a summary statistic the probe computed and recorded: ``as recorded``, unless it is a time or
  rate (its name ends in ``_s``) whose windows the document stores. Then ``windows`` finds them, by checking
  that their median *is* the recorded number (to 1e-9), and the page gives the bootstrap interval of that
  median (``render.derive.intervals``), or says ``few windows`` under three. A number whose windows cannot be
  found that way (a sum over a profile, a ratio of two medians, a median over windows the document did not keep)
  stays ``as recorded``: an interval of other windows would not be the recorded number's.

Where windows are looked for, in order: a list of numbers beside the field (``event_step.windows_s`` beside
``event_step.median_s``); the ``samples`` rows of a ``points`` entry (those that agree with it on every count
and name the two share); the samples as a whole or grouped by one column's value (``arm='baseline'``); and
the per-round differences of two arms timed in interleaved rounds (a median of round differences).
"""

from __future__ import annotations

import fnmatch
import math
import re
import statistics
from dataclasses import dataclass
from typing import Any

from render.derive import basis

__all__ = ["Windows", "field_basis", "timed", "windows"]

_COUNTS = frozenset(
    {
        "batch",
        "burst_calls",
        "bytes",
        "calls",
        "context",
        "curves",
        "elements",
        "findings",
        "gpus",
        "k",
        "layer",
        "m",
        "microbatch",
        "n",
        "peak_concurrent_jobs",
        "peak_points_on_device",
        "points_checked",
        "repeat",
        "round",
        "rounds",
        "seq_len",
        "steps",
        "tokens",
        "tokens_per_step",
        "width",
        "window",
        "windows",
    }
)
"""Field names that count something the probe set or did (a shape, a batch, calls, findings): exact. A field
named for a count but holding a peak (``peak_concurrent_jobs``) is still a count of jobs, not a memory peak."""

_RULES: tuple[tuple[str, str], ...] = (
    ("params.*", basis.EXACT),
    ("*.consistency.bounds.N", basis.EXACT),  # the band the probe checks its ratio against
    ("*.utilisation.interval_s", basis.EXACT),  # the NVML sampling interval the probe was set to
    ("*.clip_max_norm", basis.EXACT),
    ("*.limit", basis.EXACT),
    ("*_keys", basis.EXACT),  # a mask's keys per row, counted
    ("*_keys_per_row", basis.EXACT),
    ("machine.*", basis.OBSERVED),
    ("*.clocks.*", basis.OBSERVED),
    ("*mhz*", basis.OBSERVED),
    ("*_w", basis.OBSERVED),
    ("*.cv", basis.OBSERVED),
    ("*_cv", basis.OBSERVED),
    ("*peak*", basis.OBSERVED),
    ("*_bytes", basis.OBSERVED),
    ("*rel_l2", basis.OBSERVED),
    ("*error*", basis.OBSERVED),
    ("*noise_floor*", basis.OBSERVED),
    ("*.cosine", basis.OBSERVED),
    ("*.sign_agreement", basis.OBSERVED),
    ("*reference_loss", basis.OBSERVED),  # one run's loss
    ("data.samples.N.*", basis.OBSERVED),  # one window's own figure, not a statistic over windows
)
"""(pattern over the path with its list indices as ``N``, basis), the first match wins; counts come first."""


def _shape(path: str) -> str:
    return re.sub(r"(?<=\.)\d+(?=\.|$)", "N", path)


def field_basis(path: str) -> str:
    """The basis of the number at dotted ``path`` in an evidence document, before any windows are looked for:
    ``exact``, ``observed``, or ``as recorded`` (a summary statistic; ``timed`` says whether to look)."""
    shape = _shape(path)
    leaf = shape.rsplit(".", 1)[-1]
    if leaf in _COUNTS and not shape.startswith("machine."):
        return basis.EXACT
    for pattern, said in _RULES:
        if fnmatch.fnmatchcase(shape, pattern):
            return said
    return basis.RECORDED


def timed(path: str) -> bool:
    """True for a summary statistic that is a time or a rate (``_s``: seconds, ``tok_s``, ``gb_s``), whose
    windows ``windows`` may find: the numbers issue 23 wants an interval for."""
    return field_basis(path) == basis.RECORDED and path.endswith("_s")


@dataclass(frozen=True)
class Windows:
    """The windows a recorded median was taken over, and where they are."""

    values: tuple[float, ...]
    """The windows' own figures, in the field's unit."""
    source: str
    """Where they are, in words (``step_s of samples where arm='baseline'``)."""
    rows: tuple[int, ...] | None
    """Their sample rows (so a ``median()`` of the same rows resamples with them), or None for a list field."""


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _same(values: list[float], recorded: float) -> bool:
    return bool(values) and math.isclose(statistics.median(values), recorded, rel_tol=1e-9, abs_tol=0.0)


def _discrete(rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Each column whose values are names or whole numbers, with its values in first-seen order."""
    out: dict[str, list[Any]] = {}
    for r in rows:
        for k, v in r.items():
            if isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool)):
                seen = out.setdefault(k, [])
                if v not in seen:
                    seen.append(v)
    return out


def _columns(rows: list[dict[str, Any]], picked: list[int]) -> list[str]:
    return sorted({k for i in picked for k, v in rows[i].items() if isinstance(v, float)})


def _grouped(rows: list[dict[str, Any]], recorded: float, groups: list[tuple[str, list[int]]]) -> Windows | None:
    for where, picked in groups:
        for column in _columns(rows, picked):
            found = [i for i in picked if _number(rows[i].get(column))]
            values = [float(rows[i][column]) for i in found]
            if _same(values, recorded):
                return Windows(tuple(values), f"{column} of samples{where}", tuple(found))
    return None


def _round_differences(rows: list[dict[str, Any]], recorded: float, names: dict[str, list[Any]]) -> Windows | None:
    """The per-round differences ``a − b`` of two arms timed in interleaved rounds whose median is ``recorded``."""
    if "round" not in names:
        return None
    for column_name, arms in names.items():
        if column_name == "round" or not all(isinstance(a, str) for a in arms):
            continue
        for a in arms:
            for b in arms:
                if a == b:
                    continue
                for column in _columns(rows, list(range(len(rows)))):
                    by_round: dict[Any, dict[str, tuple[int, float]]] = {}
                    for i, r in enumerate(rows):
                        if r.get(column_name) in (a, b) and _number(r.get(column)) and "round" in r:
                            by_round.setdefault(r["round"], {})[r[column_name]] = (i, float(r[column]))
                    both = [(p[a], p[b]) for _, p in sorted(by_round.items()) if a in p and b in p]
                    values = [x[1] - y[1] for x, y in both]
                    if _same(values, recorded):
                        where = f"per-round {column} of {column_name}={a!r} − {column_name}={b!r}"
                        return Windows(tuple(values), where, tuple(i for x, y in both for i in (x[0], y[0])))
    return None


def windows(data: dict[str, Any], path: str, recorded: float) -> Windows | None:
    """The windows whose median is the number ``recorded`` at ``path`` (``data.…``) of a document's ``data``, where
    the document stores them (see the module's docstring for where it looks); None where it does not."""
    parts = path.split(".")
    if parts[0] != "data" or not _number(recorded):
        return None
    parent: Any = data
    for part in parts[1:-1]:
        if isinstance(parent, list) and part.isdigit() and int(part) < len(parent):
            parent = parent[int(part)]
        else:
            parent = parent.get(part) if isinstance(parent, dict) else None
    if isinstance(parent, dict):  # a list beside the field: event_step.windows_s beside event_step.median_s
        for name, listed in parent.items():
            numbers = listed if isinstance(listed, list) and all(_number(x) for x in listed) else []
            if _same([float(x) for x in numbers], recorded):
                return Windows(tuple(float(x) for x in numbers), f"{'.'.join(parts[:-1])}.{name}", None)
    rows = [r for r in data.get("samples") or [] if isinstance(r, dict)]
    if len(rows) != len(data.get("samples") or []) or not rows:
        return None
    names = _discrete(rows)
    groups: list[tuple[str, list[int]]] = []
    if len(parts) == 4 and parts[1] == "points" and isinstance(parent, dict):  # a point's own rows
        keys = {k: v for k, v in parent.items() if k in names and v in names[k]}
        if keys:
            match = [i for i, r in enumerate(rows) if all(r.get(k) == v for k, v in keys.items())]
            groups.append((" where " + ", ".join(f"{k}={v!r}" for k, v in sorted(keys.items())), match))
    # A median equal to one of its windows (an odd count) is also the median of many supersets of them, so
    # which group is looked at first matters: the rows one name picks (arm='baseline', the smallest first),
    # then all rows, then rows one whole number picks (tokens=1024), never a single row.
    named: list[tuple[str, list[int]]] = []
    numbered: list[tuple[str, list[int]]] = []
    for column, values in names.items():
        for v in values if len(values) > 1 else ():
            picked = [i for i, r in enumerate(rows) if r.get(column) == v]
            (named if isinstance(v, str) else numbered).append((f" where {column}={v!r}", picked))
    groups += [*sorted(named, key=lambda g: len(g[1])), ("", list(range(len(rows))))]
    groups += sorted((g for g in numbered if len(g[1]) > 1), key=lambda g: -len(g[1]))
    return _grouped(rows, recorded, groups) or _round_differences(rows, recorded, names)
