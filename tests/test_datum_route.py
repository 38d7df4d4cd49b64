"""bench/datum_route.py: the walk through a datum's call paths counts each move to another file as a hop, and a
traced build finds a route from the evidence's bytes to the ledger's."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _route() -> object:
    spec = importlib.util.spec_from_file_location("datum_route", REPO / "bench" / "datum_route.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_walk_goes_up_to_the_shared_frame_and_down_again() -> None:
    walk = _route().walk  # type: ignore[attr-defined]
    build = ("s.py", "build")
    load = (build, ("a.py", "load"), ("f.py", "read"))
    render = (build, ("p.py", "render"), ("q.py", "fit"))
    again = (build, ("p.py", "render"), ("q.py", "fit"))  # a loop calling the same path: one visit
    ledger = (build, ("s.py", "generate"), ("l.py", "to_bytes"))
    assert walk([load, render, again, ledger]) == [
        "s.py",
        "a.py",
        "f.py",
        "a.py",
        "s.py",
        "p.py",
        "q.py",
        "p.py",
        "s.py",
        "l.py",
    ]
    assert walk([render, (build, ("p.py", "render"))]) == ["s.py", "p.py", "q.py", "p.py"]
    assert walk([]) == []


@pytest.mark.slow
def test_a_traced_build_finds_the_route_from_the_bytes_to_the_ledger() -> None:
    out = subprocess.run(
        [sys.executable, str(REPO / "bench" / "datum_route.py"), "--json"], capture_output=True, text=True, check=True
    )
    result = json.loads(out.stdout)
    assert result["walk"][0] == "render/assemble/stages.py" and result["walk"][-1] == "render/numbers/ledger.py"
    assert {"measure/evidence/reading.py", "render/derive/fit.py", "render/numbers/ledger.py"} <= set(result["walk"])
    assert result["hops"] == len(result["walk"]) - 1 and result["files"] == len(set(result["walk"]))
    # the layout's goal: a step_s sample reaches its ledger row through at most 12 project files (31 hops over 12
    # files when the ledger's row format moved into the ledger module)
    assert result["files"] <= 12, result["walk"]
