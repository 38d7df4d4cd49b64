"""ARCHITECTURE.md §A probe, run as written: a probe module, its PROBES line, a derive module and a page-function
module give a probe command whose number a page shows."""

from __future__ import annotations

import importlib.util
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from conftest import REPO, render_page

from measure import cli as measure_cli
from measure.errors import ProbebookError
from measure.evidence.store import Store
from measure.probes import PROBES
from render.derive.reading import NNBSP
from render.functions import registry
from render.functions.derivations import Library
from render.numbers.links import entry_anchor


def _blocks() -> list[str]:
    """The section's Python blocks: the probe's module, its PROBES line, the derive module, the page-function module."""
    text = (REPO / "ARCHITECTURE.md").read_text(encoding="utf-8")
    section = text[text.index("### A probe\n") : text.index("### A page function\n")]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def _path(block: str) -> str:
    """The module a block says it is, from its first line (``# render/derive/one_step.py``)."""
    first = block.splitlines()[0]
    match = re.fullmatch(r"# ([\w/]+)\.py", first)
    assert match, first
    return match.group(1).replace("/", ".")


@pytest.fixture
def one_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The example probe module written to a temp package and its registry line added to the real PROBES."""
    module, line = _blocks()[:2]
    package = tmp_path / "example_probes"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "one_step.py").write_text(module)
    name, path = re.fullmatch(r'\s*"([^"]+)": "measure\.probes\.(\w+)",\s*', line).groups()
    assert _path(module) == f"measure.probes.{path}"
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(PROBES, name, f"example_probes.{path}")
    yield name
    sys.modules.pop(f"example_probes.{path}", None)
    sys.modules.pop("example_probes", None)


def _load(name: str, source: str, folder: Path) -> ModuleType:
    """``source`` imported as module ``name`` (``render.derive.one_step``), as if it were that file of the repo."""
    path = folder / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def one_step_page(tmp_path: Path) -> Iterator[dict[str, ModuleType]]:
    """The example's derive module and page-function module, imported under their own names and registered."""
    derive, function = _blocks()[2:]
    names = [_path(derive), _path(function)]
    assert names == ["render.derive.one_step", "render.functions.one_step"]
    folder = tmp_path / "modules"
    folder.mkdir()
    try:
        yield {name: _load(name, block, folder) for name, block in zip(names, (derive, function), strict=True)}
    finally:
        registry.REGISTRY.pop("one_step", None)
        for name in names:
            sys.modules.pop(name, None)


def _doc(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {"probe": "one-step", "params": {}, "data": {"samples": rows}}


def test_the_blocks_are_the_four_places() -> None:
    paths = [_path(b) for b in _blocks() if b.startswith("#")]
    assert paths == ["measure.probes.one_step", "render.derive.one_step", "render.functions.one_step"]
    assert len(_blocks()) == 4  # and the PROBES line


def test_the_derivation_and_the_page_function_show_the_median(one_step_page, tmp_path) -> None:
    derive = one_step_page["render.derive.one_step"]
    assert derive.median_step_s([{"step_s": 0.25}, {"step_s": 1.0}, {"step_s": 0.5}]) == 0.5
    with pytest.raises(ProbebookError, match="no step_s samples"):
        derive.median_step_s([{"batch": 2}])
    assert registry.registry()["one_step"].usage() == "one_step(ref)"
    ident = "sha256:" + "1" * 64
    rows = [{"batch": 2, "seq_len": 128, "step_s": t} for t in (0.004, 0.002, 0.003)]
    text, state = render_page(Library({ident: _doc(rows)}), {"run": ident}, "Step: {{ one_step(run) }}.", tmp_path)
    shown = dict(state.rows)["one_step(run)"]
    assert shown.value == 0.003 and shown.text == "3.00 ms" and shown.evidence == (ident,)
    # a median no one row shows lands on its entry among the numbers taken from that evidence (its rows beside it)
    entry = entry_anchor(state.rel, "one_step(run)")
    assert text.startswith(f"Step: [3.00{NNBSP}ms](../../evidence/{'1' * 64}.md#{entry} ")


@pytest.mark.slow
def test_the_worked_example_is_a_working_probe(one_step, one_step_page, archive, capsys, tmp_path):
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
    text, state = render_page(Library({ident: doc}), {"run": ident}, "Step: {{ one_step(run) }}.", tmp_path)
    shown = dict(state.rows)["one_step(run)"]
    assert shown.value == one_step_page["render.derive.one_step"].median_step_s(rows) and shown.evidence == (ident,)
    assert f"Step: [{shown.text.replace(' ', NNBSP)}](" in text
