"""Entry point: parse arguments, dispatch to one command module, turn input errors into one line.

Each module in ``COMMAND_MODULES`` exposes ``register(subparsers)``; every command it adds
gets help text with an example (``tests/test_cli_help.py`` checks that).
"""

from __future__ import annotations

import argparse
import importlib
from typing import Sequence

from measure.cli import HelpFormatter, archive_option, command, command_group
from measure.errors import run_action

COMMAND_MODULES = ("archive", "campaign", "derive", "measure", "site")
__all__ = ["HelpFormatter", "build_parser", "command", "command_group", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="probebook",
        description="Measure GPU training throughput, archive the evidence, and publish a site built from it.",
        epilog="example:\n  probebook archive ls --probe step-scaling\n  probebook build",
        formatter_class=HelpFormatter,
    )
    archive_option(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(f"probebook.cli.{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return run_action(lambda: args.func(args), "probebook")
