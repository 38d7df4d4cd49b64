"""`probebook fit step-scaling` and `probebook project` as real subprocesses on a real temporary archive (the synthetic
runs are imported, and the later bad arguments refused, through the CLI's entry point in this process; so are the fits
whose printed numbers are checked after the first, the real process's exit status, stdout and stderr being tested by
the JSON fit, the plateau's warning and the refusals)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import FIT_JSON_KEYS, run_cli_here


def write_csv(path: Path, header: str, rows: list[tuple]) -> Path:
    path.write_text(header + "\n" + "".join(",".join(str(v) for v in r) + "\n" for r in rows))
    return path


def import_step_scaling(cli, archive: Path, tmp_path: Path, rows: list[tuple], name: str = "sweep.csv") -> str:
    """Import synthetic (tokens, step_s) rows through the CLI's entry point in this process (``run_cli_here``: the
    import's real process is tested in test_archive_cli, and one here cost about 0.5 s of CPU a test); return the id."""
    csv = write_csv(tmp_path / name, "tokens,step_s", rows)
    done = run_cli_here(
        "--archive",
        str(archive),
        "archive",
        "import",
        "--probe",
        "step-scaling",
        str(csv),
        "--source",
        "synthetic test rows, not a measurement",
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


# step = 0.01 s + 2e-5 s/token·S, three windows per S spread by ±1e-4 s (means exactly on the line)
LINEAR = [(s, round(0.01 + 2e-5 * s + e, 10)) for s in (512, 1024, 2048, 4096) for e in (-1e-4, 0.0, 1e-4)]
# launch-bound plateau at 0.02 s below 2048 tokens, 1e-5 s/token above
PLATEAU = [
    (s, round(max(0.02, 1e-5 * s) + e, 10)) for s in (128, 256, 512, 1024, 2048, 4096, 8192) for e in (-1e-4, 0.0, 1e-4)
]


def files(archive: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(archive.rglob("*")) if p.is_file()}


def test_fit_json_prints_exactly_the_design_object(cli, archive, tmp_path):
    ident = import_step_scaling(cli, archive, tmp_path, LINEAR)
    done = cli("--archive", str(archive), "fit", "step-scaling", ident[:19], "--at", "1024,4096", "--json")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    out = json.loads(done.stdout)
    assert list(out) == FIT_JSON_KEYS
    assert out["terms"] == ["c", "a"]
    assert out["c_s"] == pytest.approx(0.01, rel=1e-9)
    assert out["a_s_per_token"] == pytest.approx(2e-5, rel=1e-9)
    assert out["b_s_per_token2"] == 0
    assert out["residuals_s"] == pytest.approx([0.0] * 4, abs=1e-12)
    assert out["max_abs_residual_s"] == pytest.approx(0.0, abs=1e-12)
    assert out["asymptote_tok_s"] == pytest.approx(50_000.0, rel=1e-9)
    assert out["quadratic_share"] == {"1024": 0.0, "4096": 0.0}
    assert out["n_points"] == 4


def test_token_range_and_named_terms(cli, archive, tmp_path):
    ident = import_step_scaling(cli, archive, tmp_path, PLATEAU)
    done = run_cli_here(
        "--archive", str(archive), "fit", "step-scaling", ident, "--tokens", "2048:", "--terms", "a", "--json"
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["terms"] == ["a"] and out["n_points"] == 3 and out["c_s"] == 0
    assert out["a_s_per_token"] == pytest.approx(1e-5, rel=1e-9)
    assert out["asymptote_tok_s"] == pytest.approx(1e5, rel=1e-9)


def test_linear_fit_through_a_plateau_warns_on_stderr(cli, archive, tmp_path):
    ident = import_step_scaling(cli, archive, tmp_path, PLATEAU)
    done = cli("--archive", str(archive), "fit", "step-scaling", ident, "--terms", "c+a", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["terms"] == ["c", "a"]
    warning = done.stderr.strip().splitlines()
    assert len(warning) == 1
    assert warning[0].startswith("probebook: warning: the point means lie further from the")


def test_too_few_points_is_one_line_naming_the_evidence(cli, archive, tmp_path):
    ident = import_step_scaling(cli, archive, tmp_path, LINEAR)
    before = files(archive)
    done = cli(
        "--archive", str(archive), "fit", "step-scaling", ident, "--tokens", ":2048", "--terms", "c+a+b", "--json"
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == (
        f"probebook: error: fit c+a+b needs at least 4 distinct token counts; evidence {ident} has 3 in :2048\n"
    )
    assert files(archive) == before


@pytest.mark.parametrize(
    "args, message",
    [
        (["--terms", "c+q"], "unknown term 'q'"),
        (["--tokens", "4096:512"], "lower bound is above the upper bound"),
        (["--at", "1024,wide"], "'wide' is not a number"),
    ],
)
def test_bad_arguments_are_one_line(cli, archive, tmp_path, args, message):
    ident = import_step_scaling(cli, archive, tmp_path, LINEAR)
    run = cli if args[0] == "--terms" else run_cli_here  # the first in a real process, the rest in this one
    done = run("--archive", str(archive), "fit", "step-scaling", ident, *args)
    assert done.returncode == 2
    assert len(done.stderr.splitlines()) == 1 and message in done.stderr
    assert "Traceback" not in done.stderr


def test_fit_refuses_other_probes_and_unknown_ids(cli, archive, tmp_path):
    csv = write_csv(
        tmp_path / "sweep.csv",
        "model,params,context,batch,tok_s,peak_bytes,status",
        [("20m", 20000000, 2048, 1, 1000.0, 100, "ok")],
    )
    done = run_cli_here(  # the import's real process is test_archive_cli's
        "--archive",
        str(archive),
        "archive",
        "import",
        "--probe",
        "batch-sweep",
        str(csv),
        "--source",
        "synthetic test row",
    )
    assert done.returncode == 0, done.stderr
    ident = done.stdout.strip()
    done = cli("--archive", str(archive), "fit", "step-scaling", ident)
    assert done.returncode == 2
    assert done.stderr == (
        f"probebook: error: evidence {ident} is batch-sweep evidence; fit step-scaling needs a step-scaling run\n"
    )
    done = run_cli_here("--archive", str(archive), "fit", "step-scaling", "sha256:" + "0" * 64)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1 and "no evidence" in done.stderr


def test_fit_table_output(cli, archive, tmp_path):
    ident = import_step_scaling(cli, archive, tmp_path, LINEAR)
    done = run_cli_here("--archive", str(archive), "fit", "step-scaling", ident, "--bootstrap", "50")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["terms", "c+a"]
    assert any(line.startswith("asymptote") and "95% CI" in line for line in lines)


def test_project_json(cli):
    done = cli("project", "--params", "250M", "--tok-s", "180000", "--batch-tokens", "524288", "--gpus", "8", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["tokens"] == 5_000_134_656  # 9537 whole updates of 524,288 tokens
    assert out["optimizer_updates"] == 9537
    assert out["seconds"] == pytest.approx(5_000_134_656 / 180_000, rel=1e-15)
    assert out["gpu_hours"] == pytest.approx(5_000_134_656 / 180_000 / 3600 * 8, rel=1e-15)
    assert out["seconds_per_billion_tokens"] == pytest.approx(1e9 / 180_000, rel=1e-15)
    assert out["tokens_per_param"] == 20


def test_project_refuses_bad_numbers_in_one_line(cli):
    done = cli("project", "--params", "250M", "--tok-s", "-3")
    assert done.returncode == 2
    assert done.stderr == "probebook: error: --tok-s must be a positive number, got -3.0\n"


@pytest.mark.parametrize("argv", [["fit", "step-scaling", "--help"], ["project", "--help"]])
def test_help_ends_with_an_example(cli, argv):
    done = cli(*argv)
    assert done.returncode == 0
    assert done.stdout.rstrip().splitlines()[-2] == "example:"
    assert done.stdout.rstrip().splitlines()[-1].strip().startswith("probebook ")
