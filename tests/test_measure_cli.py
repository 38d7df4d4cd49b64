"""The measure CLI: options generated from each probe's Config, help without torch, examples, one-line errors."""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import subprocess
import sys

import pytest
from conftest import REPO, run_cli_here

from measure import cli as measure_cli
from measure.options import field_docs
from measure.probes import PROBES as REGISTRY
from probebook.cli import build_parser

PROBES = list(REGISTRY)


def _parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["measure", *argv])


@pytest.mark.parametrize("probe", PROBES)
def test_every_probe_module_has_the_one_declaration_shape(probe):
    module = importlib.import_module(REGISTRY[probe])
    assert probe == module.PROBE and isinstance(module.VERSION, int) and module.VERSION >= 1
    assert module.HELP and "\n" not in module.HELP
    assert module.EXAMPLE.startswith(f"probebook measure {probe}")
    assert dataclasses.is_dataclass(module.Config)
    docs = field_docs(module.Config)
    for f in dataclasses.fields(module.Config):
        assert f.default is not dataclasses.MISSING, f"{probe}: {f.name} has no default"
        assert docs.get(f.name), f"{probe}: {f.name} has no docstring"


@pytest.mark.parametrize("probe", PROBES)
def test_cli_defaults_equal_the_config_defaults(probe):
    """The CLI declares no default of its own: an option left out takes the dataclass's default."""
    args = _parse(probe)
    config_cls = importlib.import_module(REGISTRY[probe]).Config
    assert {f.name: getattr(args, f.name) for f in dataclasses.fields(config_cls)} == {
        f.name: f.default for f in dataclasses.fields(config_cls)
    }


def test_rounds_and_windows_are_one_option_with_the_probe_default():
    assert measure_cli.build_config("ablate", _parse("ablate")).windows == 9  # odd, nine rounds a session
    assert measure_cli.build_config("optimizer", _parse("optimizer", "--rounds", "4")).windows == 4
    assert measure_cli.build_config("gemm", _parse("gemm")).windows == 9


def test_a_config_with_valid_defaults_equals_the_parsed_one():
    for probe in PROBES:
        config_cls = importlib.import_module(REGISTRY[probe]).Config
        if all(f.default != "" for f in dataclasses.fields(config_cls)):  # padding's --corpus has no default
            assert measure_cli.build_config(probe, _parse(probe)) == config_cls()


def test_example_options_parse_into_a_valid_config():
    for probe in PROBES:
        example = importlib.import_module(REGISTRY[probe]).EXAMPLE.split()[2:]
        config = measure_cli.build_config(probe, build_parser().parse_args(["measure", *example]))
        assert type(config).__module__ == REGISTRY[probe]


def test_options_from_the_dataclass_types():
    config = measure_cli.build_config(
        "step-scaling", _parse("step-scaling", "--seq-lens", "64,128,256", "--modes", "fixed_tokens", "--compile")
    )
    assert config.seq_lens == (64, 128, 256) and config.modes == ("fixed_tokens",) and config.compile is True
    config = measure_cli.build_config("gemm", _parse("gemm", "--window-s", "0.5", "--gemm-dtype", "fp16"))
    assert config.window_s == 0.5 and config.gemm_dtype == "fp16"


def test_help_does_not_import_torch():
    code = (
        "import sys, contextlib, io\n"
        "from probebook.cli import build_parser\n"
        "p = build_parser()\n"
        f"for probe in {PROBES!r}:\n"
        "    with contextlib.redirect_stdout(io.StringIO()):\n"
        "        try: p.parse_args(['measure', probe, '--help'])\n"
        "        except SystemExit: pass\n"
        "print('torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("probe", PROBES)
def test_every_probe_help_ends_with_an_example(cli_here, probe):
    # in this process, as test_cli_help prints every command's help; the real process prints its help there
    out = cli_here("measure", probe, "--help")
    assert out.returncode == 0
    for f in dataclasses.fields(importlib.import_module(REGISTRY[probe]).Config):
        assert f"--{f.name.replace('_', '-')}" in out.stdout
    assert out.stdout.rstrip().splitlines()[-1].strip().startswith("probebook measure " + probe)


def test_python_dash_m_measure_shares_the_parser(archive):
    out = subprocess.run([sys.executable, "-m", "measure", "gemm", "--help"], cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0 and "--square" in out.stdout
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "measure",
            "--archive",
            str(archive),
            "step-scaling",
            "--device",
            "cpu",
            "--seq-lens",
            "16,32",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2
    assert out.stderr.strip().splitlines()[-1].startswith("measure: error: --seq-lens needs at least 3")


@pytest.mark.parametrize(
    "args, message",
    [
        (["step-scaling", "--device", "cpu", "--seq-lens", "64,64,32"], "--seq-lens needs at least 3 distinct"),
        (["step-scaling", "--device", "cpu", "--batch", "0"], "--batch must be >= 1"),
        (["step-scaling", "--device", "cpu", "--modes", "fixed_batch,sideways"], "--modes must be a comma list"),
        (["gemm", "--device", "cpu", "--square", "-4"], "--square must be >= 1"),
        (["copy", "--device", "cpu", "--directions", "h2x"], "--directions must be a comma list"),
        (["gemm", "--device", "cpu", "--windows", "0"], "--windows must be >= 1"),
        (["gemm", "--device", "cpu", "--workload", "not a spec"], "expected package.module:factory"),
        (["gemm", "--device", "cpu", "--workload", "no_such_module_q:make"], "cannot import 'no_such_module_q'"),
    ],
)
def test_bad_options_are_one_line_errors_and_archive_nothing(cli_here, archive, args, message):
    # in this process (each probe's own checks); the real process refuses below (CUDA, argparse, python -m measure)
    out = cli_here("--archive", str(archive), "measure", *args)
    assert out.returncode == 2, out.stderr
    lines = [line for line in out.stderr.splitlines() if not line.startswith("USDT:")]
    assert len(lines) == 1 and "Traceback" not in out.stderr
    assert message in lines[0]
    assert not (archive / "evidence").exists()


def test_cuda_on_a_machine_without_it_is_refused(archive):
    pytest.importorskip("torch")
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    # in this process, where torch is already imported (conftest.run_cli_here): a child imported it again to refuse,
    # about 1.8 s of CPU; a refusal's real exit status and stderr are test_python_dash_m_measure_shares_the_parser's
    out = run_cli_here("--archive", str(archive), "measure", "gemm", "--device", "cuda")
    assert out.returncode == 2
    assert out.stderr.strip() == "probebook: error: --device cuda: torch sees no CUDA device here; use --device cpu"


def test_argparse_rejects_unknown_preset_and_bad_list(cli):
    out = cli("measure", "gemm", "--preset", "7b")
    assert out.returncode == 2 and "invalid choice: '7b'" in out.stderr
    out = run_cli_here("measure", "step-scaling", "--seq-lens", "a,b")  # the first in a real process, this one here
    assert out.returncode == 2 and "expected comma-separated integers" in out.stderr
