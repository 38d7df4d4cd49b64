"""What ``probebook reproduce`` takes from a cited run's evidence on its own, and what it needs the user's word for.

Evidence arrives from other labs (``archive add``), so the params a cited document recorded are input from whoever
wrote it. ``reproduce`` prints every command before it runs anything; of the values in them it takes on its own:

- a **closed** value: a flag, a number within its bound (``measure.evidence.reruns.BOUNDS``; past it the command
  is refused whatever the user says), one of the option's declared choices, or a text the probe reads as a label or
  an id only (``INERT``);
- **never** a folder of the machine that measured (``LOCAL_FOLDERS``: eval-boundary's
  ``--checkpoint-dir``): the probe's default applies, so nothing is written into a host folder the evidence names.

Any other (**open**) value (``--workload``, a ``module:callable`` the job would import and call; ``--corpus`` or
``--tokenizer``, paths it would read; a glob) runs only when this command line gives that option that same value
(``probebook reproduce REC --workload pkg.mod:factory``) or ``--trust-evidence``, after the commands were read
(``--dry-run`` prints them and runs nothing). Otherwise reproduce stops with one line naming the option, the
value and the evidence, exit 2.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from typing import Any

LOCAL_FOLDERS: dict[str, tuple[str, ...]] = {"eval-boundary": ("checkpoint_dir",)}
"""Probe -> params that name a folder on the machine that measured (``--checkpoint-dir``): never taken from evidence."""

INERT: dict[str, str] = {
    "fit": "an evidence id (the probe accepts sha256: and hex digits only) the page reads, never the probe",
    "name": "a label the evidence records for the corpus, never opened",
    "column": "a field name inside the corpus, never opened as a path",
    "roots": "a keyword or a field name inside the corpus, never opened as a path",
    "arms": "names of ablation arms, each checked against the arms the workload declares",
}
"""Text options whose value is never run, imported or opened: taken from evidence like a closed value."""


def _base(annotation: Any) -> Any:
    """A Config field's annotation without ``| None``."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return args[0] if len(args) == 1 else annotation
    return annotation


@functools.cache
def open_fields(probe: str) -> dict[str, tuple[str, bool]]:
    """The open options of ``probe``: param -> (its ``--flag``, whether it takes a comma list).

    Every text option without declared choices, but ``INERT`` ones and the recording machine's folders
    (never taken from evidence at all)."""
    from measure.cli import probe_module
    from measure.options import flag_name

    cls = probe_module(probe).Config
    hints = typing.get_type_hints(cls)
    out = {}
    for f in dataclasses.fields(cls):
        if not f.init or f.metadata.get("choices") or f.name in INERT or f.name in LOCAL_FOLDERS.get(probe, ()):
            continue
        kind = _base(hints[f.name])
        if kind is str or kind == tuple[str, ...]:
            out[f.name] = (flag_name(f.name), kind is not str)
    return out


def every_open_option() -> dict[str, str]:
    """param -> ``--flag`` of every probe's open options (the values ``reproduce`` accepts on its command line)."""
    from measure.probes import PROBES

    out: dict[str, str] = {}
    for probe in PROBES:
        out.update({name: flag for name, (flag, _many) in open_fields(probe).items()})
    return dict(sorted(out.items()))


def _normal(value: Any) -> Any:
    """A value as compared: a list's items as a tuple of text, a single value as text."""
    if isinstance(value, list | tuple):
        return tuple(str(v) for v in value)
    return str(value)


def given_values(raw: list[str], many: bool) -> set[Any]:
    """The values one option was given on reproduce's command line, as ``_normal`` compares them (a comma list
    split as the probe's parser splits it)."""
    if not many:
        return {str(v) for v in raw}
    return {tuple(p.strip() for p in v.split(",") if p.strip()) for v in raw}


def asks(probe: str, values: dict[str, Any], defaults: dict[str, Any], given: dict[str, list[str]]) -> list[str]:
    """One phrase per open option whose value came from evidence (``values``: the run's config, ``defaults``:
    the probe's) and was not given that value on this command line: ``--workload 'pkg.mod:factory'``."""
    out = []
    for name, (flag, many) in sorted(open_fields(probe).items()):
        value = values.get(name)
        if value is None or _normal(value) == _normal(defaults.get(name)):
            continue  # not from the evidence: the probe's default
        if _normal(value) in given_values(given.get(name, []), many):
            continue
        shown = ",".join(value) if isinstance(value, list | tuple) else str(value)
        out.append(f"{flag} {shown!r}")
    return out


def consent_error(where: str, wanted: dict[str, list[str]]) -> str:
    """The one line that refuses runs whose evidence names open values (``wanted``: 'alias (id)' -> phrases): what
    to do first, then each value with the evidence naming it (a long line is cut at its end, never the advice)."""
    by_value: dict[str, list[str]] = {}
    for who, phrases in sorted(wanted.items()):
        for phrase in phrases:
            by_value.setdefault(phrase, []).append(who)
    named = "; ".join(f"{phrase} (evidence {', '.join(whos)})" for phrase, whos in by_value.items())
    return (
        f"{where}: values from evidence that reproduce would import, run or open need your word: pass each option "
        f"with that value to reproduce yourself, or --trust-evidence having read the commands above: {named}"
    )
