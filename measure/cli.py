"""``probebook measure <probe>`` and ``python -m measure <probe>``: one subcommand per probe.

``add_probe_commands(subparsers)`` adds every probe in ``measure.probes.PROBES`` (and ``recover``) to
whichever subparsers object it is given: ``probebook measure`` gives its own, ``python -m measure``
its top level. A probe's options are generated from its ``Config`` dataclass (``measure.options``),
its help and example are its module's ``HELP`` and ``EXAMPLE`` (ARCHITECTURE.md §Probes). Nothing here
imports torch: probe modules import it inside ``run``.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from measure.errors import EXIT, run_action
from measure.options import add_options, config_from_args, declared
from measure.probes import PROBES

log = logging.getLogger(__name__)


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the hand-wrapped examples in epilogs as written."""


def command(
    sub: Any, name: str, help: str, example: str, func: Callable[..., int] | None = None, **kw: Any
) -> argparse.ArgumentParser:
    """Add a subcommand whose ``--help`` ends with a worked example; ``func(args)`` runs it when given."""
    # allow_abbrev=False on every parser, subparsers included (each gets it at creation): "--seq-len" must not run
    # as "--seq-lens" (issue 29); tests/test_cli_help.py walks every parser
    p = sub.add_parser(
        name,
        allow_abbrev=False,
        help=help,
        description=help,
        epilog=f"example:\n  {example}",
        formatter_class=HelpFormatter,
        **kw,
    )
    if func is not None:
        p.set_defaults(func=func)
    return p


def command_group(sub: Any, name: str, help: str, example: str, dest: str, metavar: str) -> Any:
    """Add a command whose own subcommands follow it (``probebook campaign plan``); returns their subparsers."""
    return command(sub, name, help, example).add_subparsers(dest=dest, metavar=metavar, required=True)


def probe_module(name: str) -> ModuleType:
    """The module of probe ``name`` (imported; it imports no torch until ``run``)."""
    return importlib.import_module(PROBES[name])


def declarations() -> dict[str, dict[str, Any]]:
    """Every probe's current version and options as plain data (``measure.options.declared``), by probe name.

    The CLI hands this to render, which writes each evidence document's command back from its params
    (a record's reproduce block) and never imports a probe itself (ARCHITECTURE.md §Invariants).
    """
    out = {}
    for name in PROBES:
        module = probe_module(name)
        out[name] = {"version": module.VERSION, "options": declared(module.Config)}
    return out


def _run_options(p: argparse.ArgumentParser) -> None:
    """Options of a probe run that are not the probe's config: where to store, notes, quiet."""
    p.add_argument("--out", metavar="ARCHIVE", help="archive to store the evidence in (default: the global --archive)")
    p.add_argument("--notes", help="free text kept with the evidence")
    p.add_argument("--quiet", action="store_true", help="no per-point progress on stderr")


def add_probe_commands(sub: Any, prog: str = "probebook measure") -> None:
    """Add one subcommand per probe, and ``recover``, to ``sub``; examples are written as ``prog ...``."""
    for name in PROBES:
        module = probe_module(name)
        p = command(sub, name, module.HELP, module.EXAMPLE.replace("probebook measure", prog, 1))
        add_options(p, module.Config)
        _run_options(p)
        p.set_defaults(func=run_probe, probe_name=name)
    p = command(
        sub,
        "recover",
        "Archive what a journal holds (a probe process that died before storing) as partial.",
        f"{prog} recover archive/journal/step-scaling-20261129T080000Z-4242.jsonl",
    )
    p.add_argument("journal", type=Path, help="a journal file under <archive>/journal/")
    p.add_argument("--out", metavar="ARCHIVE", help="archive to store the evidence in (default: the global --archive)")
    p.set_defaults(func=run_recover)


def build_config(name: str, args: argparse.Namespace) -> Any:
    """Probe ``name``'s ``Config`` from parsed arguments (validated by the dataclass)."""
    return config_from_args(probe_module(name).Config, args)


def run_probe(args: argparse.Namespace) -> int:
    """Run one probe, store its evidence, print the id; non-zero when it is not complete."""
    from measure.evidence.store import Store
    from measure.progress import separate_foreign_logs
    from measure.run.runner import journal_path

    separate_foreign_logs()  # torch's lines and warnings apart from the progress lines (issue 29)
    module, config = probe_module(args.probe_name), build_config(args.probe_name, args)
    archive = Path(args.out or args.archive)
    # SIGTERM (e.g. from `timeout`) becomes KeyboardInterrupt (measure.errors.run_action), which the runner turns
    # into partial evidence: stored, then the command exits 130 as any interrupted command does
    journal = journal_path(archive, args.probe_name)
    evidence = module.run(config, journal=journal, progress=not args.quiet)
    if args.notes:
        from dataclasses import replace

        evidence = replace(evidence, notes=args.notes)
    ident = Store(archive).put(evidence)
    journal.unlink(missing_ok=True)
    print(ident)
    if (evidence.error or "").startswith("KeyboardInterrupt"):
        log.warning("interrupted: %s evidence stored as %s (%s)", args.probe_name, evidence.status, evidence.error)
        return EXIT["interrupted"]
    if evidence.status != "complete":
        log.warning("warning: %s evidence stored as %s: %s", args.probe_name, evidence.status, evidence.error)
        return 1
    return 0


def run_recover(args: argparse.Namespace) -> int:
    from measure.evidence.store import Store
    from measure.run.runner import recover

    evidence = recover(args.journal)
    print(Store(Path(args.out or args.archive)).put(evidence))
    return 0


def archive_option(parser: argparse.ArgumentParser) -> None:
    """The global ``--archive`` option of ``probebook`` and ``python -m measure``."""
    parser.add_argument(
        "--archive",
        default=os.environ.get("PROBEBOOK_ARCHIVE", "archive"),
        help="archive folder (default: ./archive or $PROBEBOOK_ARCHIVE)",
    )


def build_parser() -> argparse.ArgumentParser:
    """``python -m measure``: the probes of ``probebook measure`` at the top level."""
    parser = argparse.ArgumentParser(
        allow_abbrev=False,
        prog="python -m measure",
        description="Run probebook probes.",
        epilog="example:\n  python -m measure step-scaling --preset tiny --device cpu",
        formatter_class=HelpFormatter,
    )
    archive_option(parser)
    add_probe_commands(parser.add_subparsers(dest="probe", metavar="PROBE", required=True), "python -m measure")
    return parser


def main(argv: list[str] | None = None) -> int:
    """``python -m measure``: the same probes without the rest of probebook's commands."""
    args = build_parser().parse_args(argv)
    return run_action(lambda: args.func(args), "measure")
