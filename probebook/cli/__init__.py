"""Entry point: parse arguments, dispatch to one command module, turn input errors into one line.

Each module in ``COMMAND_MODULES`` exposes ``register(subparsers)``; every command it adds
gets help text with an example (``tests/test_cli_help.py`` checks that). A command line that names
a command registers only the module that owns it (``COMMANDS``), so a quick command such as
``archive verify`` does not pay for importing what ``derive`` needs (render's page functions,
numpy, scipy); ``probebook --help`` and an unknown command register them all.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

from measure.cli import HelpFormatter, archive_option, command, command_group
from measure.errors import hard_exit, run_action

COMMAND_MODULES = ("archive", "campaign", "check", "derive", "measure", "remeasure", "reproduce", "site")
COMMANDS = {
    "archive": "archive",
    "campaign": "campaign",
    "check": "check",
    "derive": "derive",
    "fit": "derive",
    "project": "derive",
    "measure": "measure",
    "remeasure": "remeasure",
    "reproduce": "reproduce",
    "build": "site",
    "serve": "site",
    "publish": "site",
    "diff": "site",
    "lint": "site",
}
"""Each command word -> the module that registers it (``tests/test_cli_help.py`` checks it against the parser)."""
__all__ = ["HelpFormatter", "build_parser", "command", "command_group", "main"]


def build_parser(modules: Sequence[str] = COMMAND_MODULES) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        allow_abbrev=False,
        prog="probebook",
        description="Measure GPU training throughput, archive the evidence, and publish a site built from it.",
        epilog="example:\n  probebook archive ls --probe step-scaling\n  probebook build",
        formatter_class=HelpFormatter,
    )
    archive_option(parser)
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in modules:
        importlib.import_module(f"probebook.cli.{name}").register(sub)
    return parser


class _Version(argparse.Action):
    """``--version``: print ``probebook <version>`` and exit. The version is looked up only when asked for:
    ``importlib.metadata`` costs about 25 ms of CPU to import, a tenth of what ``archive verify`` may take in all
    (``bench/archive.py``), and ``action="version"`` needs the text when the parser is built."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kw: Any) -> None:
        kw.setdefault("help", "show program's version number and exit")
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kw)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        print(f"probebook {version()}")
        parser.exit()


def version() -> str:
    """The installed distribution's version (``pyproject.toml``); ``unknown`` for a checkout never installed."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("probebook")
    except PackageNotFoundError:
        return "unknown"


def command_word(argv: Sequence[str]) -> str | None:
    """The command a command line names (its first word after the global options), or None."""
    rest = list(argv)
    while rest:
        word = rest.pop(0)
        if word == "--archive":
            rest = rest[1:]  # its value
        elif not word.startswith("-"):
            return word
        elif not word.startswith("--archive="):
            return None  # --help, or an option argparse will explain
    return None


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    owner = COMMANDS.get(command_word(argv) or "")
    quick = argv == ["--version"]  # nothing to register: the version needs no command module
    parser = build_parser((owner,) if owner else () if quick else COMMAND_MODULES)
    args = parser.parse_args(argv)

    def action() -> int:
        source_date_epoch()
        return int(args.func(args) or 0)

    return run_action(action, "probebook")


def source_date_epoch() -> None:
    """Refuse an out-of-range ``$SOURCE_DATE_EPOCH`` in one line before a command imports anything that reads it:
    numpy's ``f2py``, which scipy imports, formats it as a date when it is imported, and a 20-digit one ended any
    command that derives a number (``derive``, ``build``) with ``OverflowError`` before the build's own check
    (``render.assemble.stages``) was reached."""
    given = os.environ.get("SOURCE_DATE_EPOCH")
    if given is None:
        return
    from measure.errors import ProbebookError
    from render.pages.limits import EPOCH_RANGE

    low, high = EPOCH_RANGE
    if not (given.isascii() and given.lstrip("-").isdigit() and len(given) <= 20 and low <= int(given) <= high):
        raise ProbebookError(
            f"SOURCE_DATE_EPOCH={given[:40]!r} is outside {low}..{high} (1970 to 2106) or not a whole number of seconds"
        )


def run() -> None:
    """The ``probebook`` command: ``main``, then leave the process without freeing what it built.

    A build holds the parsed archive, its derivations and the tree; freeing them object by object when the
    interpreter shuts down takes a tenth to a quarter of a second at 1,000 documents, and the process ends
    anyway. So output is flushed and the process exits at once (``os._exit``), as mypy does (``hard_exit``).
    Every child process has been waited for by then; ``main`` itself, which tests call, returns normally.
    """
    hard_exit(main())
