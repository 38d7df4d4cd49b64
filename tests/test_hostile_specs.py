"""A campaign spec cannot write into the sbatch script, and every bad spec is one line naming the field, exit 2 (issue
41): newlines, spaces and control characters in Slurm strings, numbers given as strings or out of bounds, config values
of the wrong type, non-ASCII campaign names and presets; a YAML alias bomb, duplicate keys, deep nesting, a non-UTF-8
or oversized file; a grid past its bounds."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO

from measure.errors import ProbebookError
from probebook.campaign import executors, spec, yaml_file

BASE: dict[str, Any] = {
    "campaign": "t",
    "probe": "batch-sweep",
    "config": {"device": "cpu", "warmup": 1, "windows": 3, "iters": 1},
    "grid": {"preset": ["tiny"], "context": [32, 64]},
    "walk": {"max_tokens": 128, "window_tokens": 128},
}
BASE_YAML = """campaign: t
probe: batch-sweep
config: {device: cpu, warmup: 1, windows: 3, iters: 1}
grid: {preset: [tiny], context: [32, 64]}
walk: {max_tokens: 128, window_tokens: 128}
"""


def _refused(doc: dict[str, Any], *words: str) -> str:
    with pytest.raises(ProbebookError) as err:
        spec.parse(doc, "s.yaml")
    text = str(err.value)
    assert text.startswith("s.yaml") and "\n" not in text, text
    assert all(w in text for w in words), text
    return text


def _slurm(**given: Any) -> dict[str, Any]:
    return {**BASE, "executor": {"slurm": given}}


def _plan(path: Path, tmp_path: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``probebook campaign plan PATH`` as a real process; a spec that hangs it fails the test by its timeout."""
    return subprocess.run(
        [sys.executable, "-m", "probebook", "campaign", "plan", str(path), "--output", str(tmp_path / "campaign")],
        cwd=REPO, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def _one_line(proc: subprocess.CompletedProcess[str], *words: str) -> None:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert all(w in lines[0] for w in words), lines[0]


class TestSlurmStrings:
    """``partition``, ``account``, ``constraint``: one Slurm word each, never a new line of the sbatch script."""

    @pytest.mark.parametrize(
        "field,value",
        [
            ("partition", "gpu\n#SBATCH --wrap=id"),
            ("account", "lab\nrm -rf ~"),
            ("constraint", "h100\n"),
            ("partition", "gpu --exclusive"),
            ("account", "lab;id"),
            ("constraint", "h100\x00"),
            ("partition", "gpu\r#SBATCH --x"),
            ("account", "labé"),
            ("partition", ""),
            ("constraint", "x" * 300),
            ("partition", 5),
            ("account", ["a", "b"]),
        ],
    )
    def test_refused_naming_the_field(self, field: str, value: Any) -> None:
        _refused(_slurm(**{field: value}), f"executor.slurm.{field} must be one Slurm word")

    def test_a_plain_word_and_a_constraint_expression_reach_the_script_as_one_line_each(self, tmp_path: Path) -> None:
        settings = spec.parse(_slurm(partition="gpu-a", account="lab_1", constraint="h100&ib"), "s.yaml").executor
        params = executors.parameters("slurm", settings, "pb-t-tiny-s32-b1-a1", [])
        text = executors.submission_text("slurm", tmp_path / "a1", params)
        options = [line for line in text.splitlines() if line.startswith("#SBATCH")]
        assert "#SBATCH --constraint='h100&ib'" in options and "#SBATCH --partition=gpu-a" in options  # shell-quoted
        assert all(re.fullmatch(r"#SBATCH --[a-z-]+(=\S+)?", line) for line in options), options


class TestSlurmNumbers:
    """``gpus``, ``cpus``, ``mem_gb``, ``time_min``: integers within bounds, never strings (which reach the script)."""

    @pytest.mark.parametrize(
        "field,value",
        [
            ("mem_gb", "64\nrm -rf ~"),
            ("gpus", "1"),
            ("cpus", 1.5),
            ("time_min", True),
            ("mem_gb", 10**9),
            ("gpus", -1),
            ("cpus", 0),
            ("time_min", None),
        ],
    )
    def test_refused_naming_the_field(self, field: str, value: Any) -> None:
        _refused(_slurm(**{field: value}), f"executor.slurm.{field} must be an integer from")


class TestSpecValues:
    """Every other field: the campaign name, presets, contexts, the walk, the executor and the probe's config."""

    @pytest.mark.parametrize(
        "change,field",
        [
            ({"campaign": "t\u0663"}, "'campaign' must be a name of ASCII"),
            ({"campaign": "t" * 65}, "'campaign' must be a name of ASCII"),
            ({"campaign": "t\n#SBATCH"}, "'campaign' must be a name of ASCII"),
            ({"grid": {"preset": ["tiny\n#SBATCH --x"], "context": [32]}}, "grid.preset must list preset names"),
            ({"grid": {"preset": [{"a": 1}], "context": [32]}}, "grid.preset must list preset names"),
            ({"grid": {"preset": ["tiny"], "context": ["32"]}}, "grid.context must list positive integers"),
            ({"grid": {"preset": ["tiny"], "context": [2**60]}}, "grid.context must list positive integers"),
            ({"walk": {"max_tokens": "128"}}, "walk.max_tokens must be an integer from 1"),
            ({"walk": {"max_tokens": 10**30}}, "walk.max_tokens must be an integer from 1"),
            ({"executor": {"max_concurrent": "2"}}, "executor.max_concurrent must be an integer from 1"),
            ({"executor": {"point_timeout_s": float("nan")}}, "executor.point_timeout_s must be a number of seconds"),
            ({"executor": {"poll_s": float("inf")}}, "executor.poll_s must be a number of seconds"),
            ({"executor": {"gpu_lock": "yes"}}, "executor.gpu_lock must be true or false"),
            ({"config": {**BASE["config"], "windows": "3"}}, "config.windows must be int"),
            ({"config": {**BASE["config"], "dtype": "bf16\nx"}}, "config.dtype must be str"),
            ({"config": {**BASE["config"], "seed": 10**30}}, "config.seed must be int"),
            ({"config": {**BASE["config"], "warmup": [1]}}, "config.warmup must be one value, not a list"),
        ],
    )
    def test_refused_naming_the_field(self, change: dict[str, Any], field: str) -> None:
        _refused({**BASE, **change}, field)


class TestYamlFile:
    """The file itself: an alias bomb, duplicate keys, deep nesting, bytes that are not UTF-8, a FIFO, a large file.
    Each through ``campaign plan`` as a real process: one line, exit 2, in seconds."""

    @pytest.mark.parametrize(
        "text,words",
        [
            (
                'a: &a ["x","x","x","x","x","x","x","x","x"]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n'
                + "".join(f"{c}: &{c} [{','.join([f'*{p}'] * 9)}]\n" for p, c in zip("bcdefgh", "cdefghi", strict=True))
                + BASE_YAML,
                ("line 2", "a YAML alias"),
            ),
            ("campaign: t\n" + BASE_YAML, ("line 2", "key 'campaign' is given twice")),
            ("campaign: " + "[" * 5000 + "]" * 5000 + "\n", ("nested more than",)),
            (BASE_YAML.replace("{device: cpu,", "{device: cpu, dtype: &d bf16, compile: *d,"), ("a YAML alias",)),
        ],
    )
    def test_refused_in_one_line(self, tmp_path: Path, text: str, words: tuple[str, ...]) -> None:
        path = tmp_path / "spec.yaml"
        path.write_text(text, encoding="utf-8")
        started = time.monotonic()
        _one_line(_plan(path, tmp_path), str(path), *words)
        assert time.monotonic() - started < 60
        assert not (tmp_path / "campaign").exists()

    def test_bytes_that_are_not_utf8(self, tmp_path: Path) -> None:
        path = tmp_path / "spec.yaml"
        path.write_bytes(b"\xff\xfe" + BASE_YAML.encode())
        _one_line(_plan(path, tmp_path), str(path), "not UTF-8 text (byte 0 is 0xff)")

    def test_a_fifo_is_refused_not_waited_on(self, tmp_path: Path) -> None:
        path = tmp_path / "spec.yaml"
        os.mkfifo(path)
        _one_line(_plan(path, tmp_path), str(path), "a FIFO, not a regular file")

    def test_a_file_over_the_cap(self, tmp_path: Path) -> None:
        path = tmp_path / "spec.yaml"
        path.write_text(BASE_YAML + "#" * yaml_file.MAX_SPEC_BYTES, encoding="utf-8")
        _one_line(_plan(path, tmp_path), str(path), f"over {yaml_file.MAX_SPEC_BYTES} bytes")


class TestGridBounds:
    """A grid of more than ``MAX_GRID`` presets or contexts, or more than ``MAX_POINTS`` points, is refused."""

    def test_too_many_contexts(self) -> None:
        doc = {**BASE, "grid": {"preset": ["tiny"], "context": list(range(1, spec.MAX_GRID + 2))}}
        _refused(doc, f"grid.context lists {spec.MAX_GRID + 1} values; at most {spec.MAX_GRID}")

    def test_too_many_points(self) -> None:
        presets = ["tiny", "20m", "90m", "250m"]
        doc = {**BASE, "grid": {"preset": presets, "context": list(range(1, 65))}, "walk": {"max_tokens": 2**38}}
        started = time.monotonic()
        _refused(doc, f"plan over {spec.MAX_POINTS} points")
        assert time.monotonic() - started < 60
