"""The measure CLI: help without importing torch, examples in every help, bad options as one-line errors."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import REPO

PROBES = ["gemm", "copy", "step-scaling", "kernels", "ablate", "optimizer"]


def test_help_does_not_import_torch():
    code = (
        "import sys, contextlib, io\n"
        "from probebook.cli import build_parser\n"
        "p = build_parser()\n"
        "for probe in %r:\n"
        "    with contextlib.redirect_stdout(io.StringIO()):\n"
        "        try: p.parse_args(['measure', probe, '--help'])\n"
        "        except SystemExit: pass\n"
        "print('torch' in sys.modules)\n" % PROBES
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("probe", PROBES)
def test_every_probe_help_ends_with_an_example(cli, probe):
    out = cli("measure", probe, "--help")
    assert out.returncode == 0
    assert "--preset" in out.stdout and "--device" in out.stdout and "--workload" in out.stdout
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
def test_bad_options_are_one_line_errors_and_archive_nothing(cli, archive, args, message):
    out = cli("--archive", str(archive), "measure", *args)
    assert out.returncode == 2, out.stderr
    lines = [l for l in out.stderr.splitlines() if not l.startswith("USDT:")]
    assert len(lines) == 1 and "Traceback" not in out.stderr
    assert message in lines[0]
    assert not (archive / "evidence").exists()


def test_cuda_on_a_machine_without_it_is_refused(cli, archive):
    pytest.importorskip("torch")
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    out = cli("--archive", str(archive), "measure", "gemm", "--device", "cuda")
    assert out.returncode == 2
    assert out.stderr.strip() == "probebook: error: --device cuda: torch sees no CUDA device here; use --device cpu"


def test_argparse_rejects_unknown_preset_and_bad_list(cli):
    out = cli("measure", "gemm", "--preset", "7b")
    assert out.returncode == 2 and "invalid choice: '7b'" in out.stderr
    out = cli("measure", "step-scaling", "--seq-lens", "a,b")
    assert out.returncode == 2 and "expected comma-separated integers" in out.stderr
