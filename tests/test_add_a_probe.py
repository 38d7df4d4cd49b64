"""ARCHITECTURE.md §9.1's worked example: one new module plus one line in PROBES gives a working probe command."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from conftest import REPO

from measure import cli as measure_cli
from measure.evidence.store import Store
from measure.probes import PROBES


def _blocks() -> list[str]:
    text = (REPO / "ARCHITECTURE.md").read_text(encoding="utf-8")
    section = text[text.index("### 9.1 A probe") : text.index("### 9.2")]
    return re.findall(r"```python\n(.*?)```", section, re.S)


@pytest.fixture
def one_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The example module written to a temp package and its registry line added to the real PROBES."""
    module, line = _blocks()
    package = tmp_path / "example_probes"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "one_step.py").write_text(module)
    name, path = re.fullmatch(r'\s*"([^"]+)": "measure\.probes\.(\w+)",\s*', line).groups()
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(PROBES, name, f"example_probes.{path}")
    yield name
    sys.modules.pop(f"example_probes.{path}", None)
    sys.modules.pop("example_probes", None)


@pytest.mark.slow
def test_the_worked_example_is_a_working_probe(one_step, archive, capsys):
    pytest.importorskip("torch")
    from probebook.cli import build_parser

    parser = build_parser()
    args = parser.parse_args(
        ["--archive", str(archive), "measure", one_step, "--device", "cpu", "--windows", "2", "--iters", "1"]
    )
    config = measure_cli.build_config(one_step, args)
    assert config.label == "default" and config.windows == 2
    assert args.func(args) == 0
    ident = capsys.readouterr().out.strip()
    doc = Store(archive).get(ident)
    assert doc["probe"] == one_step and doc["params"]["label"] == "default"
    rows = doc["data"]["samples"]  # two windows, or seven when their CV asked for the extra five
    assert len(rows) in (2, 7) and {(row["batch"], row["seq_len"]) for row in rows} == {(2, 128)}
