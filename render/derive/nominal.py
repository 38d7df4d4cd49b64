"""Comparable only with like: a nominal value where the evidence records the measured one is refused.

Two rules, each a pure function on plain data (the page functions and the build call them):

- ``nominal_count``: a count typed into a derivation (``project(rate, "500M")``) where the rate's evidence
  records the model's measured parameter count (``params: 516814080``) moves the figure by the difference
  (3.4% there, outside the projection's interval). A typed count that equals a recorded one passes; any other is
  refused unless the page labels it with ``nominal(x, "why")``.
- ``unshared_settings``: a page that reads a setting (``params.eval_batches``) from one run and cites a *like* run
  (the same probe, its params differing only in the model's size and in that setting) that recorded a different
  value, without reading that one too, states one run's setting as both runs' (a Method saying 16 evaluation
  batches where the 250m run did 8). Runs that differ in more (another workload, another sweep) are described
  one by one, and a setting read from one of them is that run's.

``docs/methodology.md`` states both rules.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

COUNT_FIELDS = ("n_params_total", "n_params", "params")
"""Where evidence records a model's parameter count: in ``params`` (a probe's run) or in each row (a batch
sweep's ``params`` column, one count per preset)."""


def recorded_counts(doc: Mapping[str, Any]) -> dict[int, str]:
    """Every parameter count ``doc`` records -> where (``params.n_params_total``, ``row model=500m``)."""
    out: dict[int, str] = {}
    params = doc.get("params")
    if isinstance(params, Mapping):
        for name in COUNT_FIELDS:
            v = params.get(name)
            if isinstance(v, int) and not isinstance(v, bool) and v > 0:
                out.setdefault(v, f"params.{name}")
    samples = (doc.get("data") or {}).get("samples") if isinstance(doc.get("data"), Mapping) else None
    for row in samples if isinstance(samples, list) else []:
        if not isinstance(row, Mapping):
            continue
        v = row.get("params")
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            out.setdefault(v, f"rows' params of model {row.get('model', '?')}")
    return out


def nominal_count(given: float, recorded: Mapping[int, str]) -> str | None:
    """Why a typed count ``given`` is refused beside the ``recorded`` ones (None: it passes): it passes when the
    evidence records none, or when it is one of them; otherwise the reason names the nearest recorded count."""
    if not recorded or any(float(c) == float(given) for c in recorded):
        return None
    nearest = min(recorded, key=lambda c: abs(c - given))
    off = (given - nearest) / nearest
    return (
        f"{given:,.0f} is a nominal count; the evidence records {nearest:,d} ({recorded[nearest]}), {off:+.1%} from it"
    )


SIZE_FIELDS = frozenset(
    {"preset", "model", "workload_name", "model_flops_per_token", "d_model", "n_layers", "n_heads", "vocab"}
    | {"n_params", "n_params_total", "n_params_trainable", "n_params_active"}
)
"""The params two runs of one design differ in when they measure another model size: what "like runs" may differ
in besides the setting read."""


def like(a: Mapping[str, Any], b: Mapping[str, Any], path: str) -> bool:
    """Whether two runs are of one design: the same probe, their ``params`` differing only in ``SIZE_FIELDS`` and
    in ``path``'s own top-level field."""
    if a.get("probe") != b.get("probe"):
        return False
    pa, pb = a.get("params") or {}, b.get("params") or {}
    top = path.split(".")[1] if path.count(".") else path
    differ = {k for k in set(pa) | set(pb) if pa.get(k) != pb.get(k)}
    return differ <= SIZE_FIELDS | {top}


@dataclass(frozen=True)
class Unshared:
    """A setting a page read from one run, while another run it cites recorded another value."""

    path: str
    read: str
    """The evidence id it was read from."""
    read_value: float
    other: str
    """The id of the run that recorded another value, never read."""
    other_value: float


def field(doc: Mapping[str, Any], path: str) -> float | None:
    """The number at dotted ``path`` of ``doc`` (None: absent or not a number)."""
    node: Any = doc
    for part in path.split("."):
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return float(node) if isinstance(node, (int, float)) and not isinstance(node, bool) else None


def unshared_settings(reads: Mapping[str, Iterable[str]], cited: Mapping[str, Mapping[str, Any]]) -> list[Unshared]:
    """Each ``params.`` path a page read (``reads``: path -> the ids it was read from) whose value differs on a
    cited like run (``like``; ``cited``: id -> document) that the page never read it from; sorted."""
    out = []
    for path in sorted(reads):
        if not path.startswith("params."):
            continue
        read = sorted(set(reads[path]))
        for rid in read:
            doc = cited.get(rid)
            mine = field(doc, path) if doc is not None else None
            if mine is None:
                continue
            for oid in sorted(cited):
                other = cited[oid]
                if oid in read or not like(doc, other, path):  # type: ignore[arg-type]
                    continue
                theirs = field(other, path)
                if theirs is not None and theirs != mine:
                    out.append(Unshared(path, rid, mine, oid, theirs))
    return out


_CODE = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|`[^`\n]*`", re.DOTALL)
_NUMBER = r"(?<![\w.,])(\d{1,3}(?:,\d{3})+|\d+)(?![\w.,]\d)"


@dataclass(frozen=True)
class TypedSetting:
    """A count typed into prose beside the name of a setting that no cited run recorded at that value."""

    line: int
    typed: int
    field: str
    """The ``params.`` field the words name."""
    recorded: tuple[float, ...]
    """What the cited runs recorded in it."""


UNIT_WORDS = frozenset({"tokens", "bytes", "seconds", "steps", "params"})
"""Words prose uses as units of other things ("sequences of 2048 tokens"): never read as naming a field alone."""


def _phrases(name: str) -> list[str]:
    """The words a params field is written as: ``eval_batches`` -> ``eval batches``, and its last word alone
    (never a unit word, ``UNIT_WORDS``)."""
    words = name.lower().split("_")
    out = [" ".join(words)] + ([words[-1]] if len(words) > 1 and len(words[-1]) > 3 else [])
    return [p for p in out if p not in UNIT_WORDS]


def typed_settings(text: str, cited: Iterable[Mapping[str, Any]]) -> list[TypedSetting]:
    """Counts typed in ``text`` (outside ``{{ }}``, ``{% %}`` and code) right before or after the words of a
    top-level numeric ``params`` field of the ``cited`` runs (``16 eval batches``, ``batch 8``) that equal no
    run's recorded value: a setting typed where the evidence records it."""
    recorded: dict[str, set[float]] = {}
    for doc in cited:
        for name, v in (doc.get("params") or {}).items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                recorded.setdefault(str(name), set()).add(float(v))
    by_phrase: dict[str, list[str]] = {}
    for name in recorded:
        for phrase in _phrases(name):
            by_phrase.setdefault(phrase, []).append(name)
    if not by_phrase:
        return []
    words = "|".join(re.escape(p) for p in sorted(by_phrase, key=len, reverse=True))
    before = re.compile(_NUMBER + r"\s+(" + words + r")(?![a-z])", re.IGNORECASE)
    after = re.compile(r"(?<![a-z])(" + words + r")\s+" + _NUMBER, re.IGNORECASE)
    out = []
    plain = _CODE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    for n, line in enumerate(plain.split("\n"), start=1):
        found = [(m.group(1), m.group(2)) for m in before.finditer(line)]
        found += [(m.group(2), m.group(1)) for m in after.finditer(line)]
        for number, phrase in found:
            typed = int(number.replace(",", ""))
            names = by_phrase[phrase.lower()]
            values = set().union(*(recorded[f] for f in names))
            if float(typed) not in values:
                out.append(TypedSetting(n, typed, "params." + names[0], tuple(sorted(values))))
    return out
