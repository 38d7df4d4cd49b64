"""Every command and subcommand of the real argparse tree ends its `--help` with an `example:` probebook line."""

from __future__ import annotations

import argparse
import os
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import run_cli

from probebook.cli import build_parser


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command path in the tree, the root included; new modules are picked up automatically.

    argparse has no public way to list subcommands, so this reads ``parser._actions`` (an
    attribute, not an import) and keeps the actions whose ``choices`` are sub-parsers.
    """
    found = [path]
    seen: set[int] = set()
    for action in parser._actions:
        choices = getattr(action, "choices", None)
        if not isinstance(choices, dict):
            continue
        for name, sub in choices.items():
            if isinstance(sub, argparse.ArgumentParser) and id(sub) not in seen:  # aliases share a parser
                seen.add(id(sub))
                found += _commands(sub, path + (name,))
    return found


COMMANDS = _commands(build_parser())


def test_the_walk_finds_the_archive_commands():
    names = {" ".join(c) for c in COMMANDS}
    assert {
        "",
        "archive",
        "archive import",
        "archive add",
        "archive ls",
        "archive show",
        "archive verify",
        "archive migrate",
    } <= names


@pytest.fixture(scope="module")
def helps():
    """`probebook ... --help` for every command, each a real process, run side by side to save time."""
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        return dict(zip(COMMANDS, pool.map(lambda path: run_cli(*path, "--help"), COMMANDS), strict=True))


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "probebook")
def test_help_ends_with_an_example(helps, path):
    out = helps[path]
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "example:" in lines, f"`probebook {' '.join(path)} --help` has no 'example:' section"
    after = [line.strip() for line in lines[lines.index("example:") + 1 :] if line.strip()]
    assert after and after[0].startswith("probebook "), after
