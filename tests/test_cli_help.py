"""Every command and subcommand of the real argparse tree ends its `--help` with an `example:` probebook line."""

from __future__ import annotations

import argparse
import contextlib
import io

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
                found += _commands(sub, (*path, name))
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


def _help(path: tuple[str, ...]) -> tuple[int, str]:
    """`probebook PATH --help` through the real parser in this process -> (exit code, output).

    One real process per command cost a minute of the suite's setup; the root's help runs as a
    real process below (test_the_installed_entry_point_prints_the_same_help), so the entry point
    is covered, and every subcommand is printed by the same parser that process builds.
    """
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as stop:
        build_parser().parse_args([*path, "--help"])
    return int(stop.value.code or 0), out.getvalue()


def test_the_installed_entry_point_prints_the_same_help(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")  # argparse wraps to COLUMNS: the same width in both processes
    real = run_cli("--help", env={"COLUMNS": "100"})
    assert real.returncode == 0, real.stderr
    assert (0, real.stdout) == _help(())


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "probebook")
def test_help_ends_with_an_example(path):
    code, text = _help(path)
    assert code == 0, text
    lines = text.splitlines()
    assert "example:" in lines, f"`probebook {' '.join(path)} --help` has no 'example:' section"
    after = [line.strip() for line in lines[lines.index("example:") + 1 :] if line.strip()]
    assert after and after[0].startswith("probebook "), after


def test_each_command_is_registered_by_the_module_commands_names() -> None:
    """``probebook WORD ...`` builds only WORD's module: each top-level command must sit in its named module."""
    import probebook.cli as cli_pkg

    top = {path[0] for path in COMMANDS if len(path) == 1}
    assert top == set(cli_pkg.COMMANDS)
    for word, module in cli_pkg.COMMANDS.items():
        assert (word,) in _commands(build_parser((module,))), (word, module)
    assert cli_pkg.command_word(["--archive", "a", "archive", "verify"]) == "archive"
    assert cli_pkg.command_word(["--archive=a", "build"]) == "build"
    assert cli_pkg.command_word(["--help"]) is None and cli_pkg.command_word([]) is None


def test_archive_verify_does_not_load_the_page_functions(tmp_path) -> None:
    """The quick commands start quickly: numpy, scipy and render's page functions stay unloaded."""
    import subprocess
    import sys

    code = (
        "import sys; from probebook.cli import main; rc = main(['--archive', sys.argv[1], 'archive', 'verify']); "
        "print(sorted(m for m in ('numpy', 'scipy', 'render.functions.general', 'pandas') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout + out.stderr


def _parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """The parser and every sub-parser under it (read the same way as ``_commands``)."""
    found = [parser]
    for action in parser._actions:
        choices = getattr(action, "choices", None)
        if isinstance(choices, dict):
            for sub in {id(p): p for p in choices.values() if isinstance(p, argparse.ArgumentParser)}.values():
                found += _parsers(sub)
    return found


def test_no_parser_accepts_an_abbreviated_option(capsys: pytest.CaptureFixture[str]) -> None:
    """argparse's prefix matching ran `--seq-len` as `--seq-lens` and `--context` as `--contexts` (issue 29)."""
    from measure.cli import build_parser as measure_parser

    parsers = _parsers(build_parser()) + _parsers(measure_parser())
    assert len(parsers) > 30 and [p.prog for p in parsers if p.allow_abbrev] == []
    for argv in (["measure", "step-scaling", "--seq-len", "512"], ["measure", "batch-sweep", "--context", "512"]):
        with pytest.raises(SystemExit) as stop:
            build_parser().parse_args(argv)
        assert stop.value.code == 2
        assert f"unrecognized arguments: {argv[2]} 512" in capsys.readouterr().err
