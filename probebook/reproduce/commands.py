"""Each cited run's command, rebuilt with today's probe, and the probe ``Config`` it builds (or one line why not).

The command text is the record's own Reproduce block's (``render.pages.provenance.command``: recorded
params, migrated by ``measure.evidence.reruns``), never a second copy of that logic. It is then parsed by
the same argument parser ``probebook measure`` uses and built into today's probe ``Config``, so a command
today's probe would refuse is refused here, before anything runs, naming the record, the alias and the id.

One more adjustment is this machine's, not the probe's: a param naming a folder of the recording machine
(``LOCAL_FOLDERS``) that does not exist here is left out, so the probe's default (the working folder)
applies, and the command says so.
"""

from __future__ import annotations

import argparse
import dataclasses
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from measure.errors import ProbebookError

LOCAL_FOLDERS: dict[str, tuple[str, ...]] = {"eval-boundary": ("checkpoint_dir",)}
"""Probe -> params that name a folder on the machine that measured (``--checkpoint-dir``)."""


@dataclass(frozen=True)
class Run:
    """One cited evidence document and the run that repeats it today."""

    alias: str
    """Its alias in the record's front matter."""
    original: str
    """The cited evidence id."""
    probe: str
    command: str
    """``probebook measure ...`` as printed and archived."""
    config: dict[str, Any]
    """``dataclasses.asdict`` of today's probe ``Config`` built from ``command``."""
    notes: tuple[str, ...]


class _Refusing(argparse.ArgumentParser):
    """An argument parser whose usage errors are a ``ProbebookError`` (one line), not an exit."""

    def error(self, message: str) -> Any:
        raise ProbebookError(message)


_PARSER: list[argparse.ArgumentParser] = []


def parser() -> argparse.ArgumentParser:
    """``probebook measure``'s probe commands (``measure.cli.add_probe_commands``), built once per process."""
    if not _PARSER:
        from measure.cli import add_probe_commands

        p = _Refusing(prog="probebook measure", add_help=False)
        add_probe_commands(p.add_subparsers(dest="probe", required=True))
        _PARSER.append(p)
    return _PARSER[0]


def _here(doc: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The document with its recording machine's missing folders left out of its params, and a note for each."""
    params = dict(doc.get("params") or {})
    notes = []
    for name in LOCAL_FOLDERS.get(str(doc.get("probe")), ()):
        folder = params.get(name)
        if isinstance(folder, str) and not Path(folder).is_dir():
            del params[name]
            notes.append(f"{name} {folder} was a folder of the machine that measured; not here, so the default applies")
    return {**doc, "params": params}, notes


def build_config(command: str) -> Any:
    """Today's probe ``Config`` of one ``probebook measure PROBE ...`` command line (refused in one line)."""
    from measure.cli import build_config as from_args

    words = shlex.split(command)
    if words[:2] != ["probebook", "measure"]:
        raise ProbebookError(f"not a probebook measure command: {command[:80]!r}")
    args = parser().parse_args(words[2:])
    return from_args(args.probe_name, args)


def rebuild(alias: str, ident: str, doc: dict[str, Any], declarations: dict[str, Any], where: str) -> Run:
    """The run repeating ``doc`` (cited as ``alias`` at ``where``) with today's probe; one line if it cannot."""
    from render.pages.provenance import command

    here, local = _here(doc)
    cmd, notes = command(here, declarations, public=False)  # the folders as recorded: this command runs
    what = f"{where}: evidence {alias} ({ident[:19]})"
    if cmd is None:
        raise ProbebookError(f"{what}: {notes[0] if notes else 'no command'}; it cannot be re-measured")
    try:
        config = build_config(cmd)
    except ProbebookError as exc:
        raise ProbebookError(f"{what}: today's {doc.get('probe')} probe refuses its command ({exc}): {cmd}") from None
    except (TypeError, ValueError) as exc:
        raise ProbebookError(f"{what}: today's {doc.get('probe')} probe refuses its command ({exc}): {cmd}") from None
    values = dataclasses.asdict(config)
    return Run(alias, ident, str(doc["probe"]), cmd, values, tuple(notes + local))
