"""The CLI behaves as its peers do (issue 29): one exit status per meaning (measure.errors.EXIT, the README's table),
a page function given the wrong kind of argument is one line and status 2, an evidence id is taken wherever an
alias is (`derive padding --fit ID`), and the README's `derive project` example runs as written."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from conftest import REPO, run_cli_here

from measure.errors import EXIT, ProbebookError, run_action

SITE_ARCHIVE = REPO / "tests" / "fixtures" / "site" / "archive"
STEP = "sha256:1c7ccb387242"  # a step-scaling document of the fixture site's archive


def test_each_exit_status_has_one_meaning_and_the_readme_lists_them_all() -> None:
    def bug() -> int:
        raise KeyError("x")

    def bad() -> int:
        raise ProbebookError("sweep.csv, row 3, column 'mode': 'eager' is not one of fixed_batch, fixed_tokens")

    assert [run_action(f, "probebook") for f in (lambda: 0, lambda: 1, bad, bug)] == [0, 1, 2, 70]
    assert sorted(EXIT.values()) == [0, 1, 2, 3, 69, 70, 130]
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    table = readme[readme.index("### Exit status") :].split("\n\n", 3)[2]
    assert [int(n) for n in re.findall(r"^\| `(\d+)` \|", table, re.M)] == sorted(EXIT.values())


def test_a_missing_package_is_one_line_naming_it_and_a_missing_own_module_stays_a_bug(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def needs_nh3() -> int:
        raise ModuleNotFoundError("No module named 'nh3'", name="nh3")

    def broken_checkout() -> int:
        raise ModuleNotFoundError("No module named 'render.site'", name="render.site")

    assert run_action(needs_nh3, "probebook") == 69
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("probebook: error: this command needs the Python package 'nh3', which is not installed")
    assert run_action(broken_checkout, "probebook") == 70
    assert "Traceback" in capsys.readouterr().err


def test_a_page_expression_where_fit_takes_a_range_is_one_line_and_bad_input() -> None:
    # fit(ev, fit(ev).c): the expression becomes fit's token range; this was a TypeError traceback, exit 1. In this
    # process (conftest.run_cli_here): derive's real exit status and stderr on a refusal are test_derive_page_functions'
    out = run_cli_here("--archive", str(SITE_ARCHIVE), "derive", "fit", STEP, "fit(ev).c")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr
    # fit() checks its token range itself (issue 25): the refusal names the argument
    assert out.stderr.startswith("probebook: error: tokens must be a range (lo, hi) of two numbers or None, got ")


def test_an_option_takes_an_evidence_id_as_measure_does(tmp_path: Path) -> None:
    archive = REPO / "archive"
    pad, fit = "sha256:eebdc310478c", "sha256:82604df8c5ff"
    by_id = run_cli_here("--archive", str(archive), "derive", "padding", pad, "--bucket", "8", "--fit", fit, "--json")
    by_alias = run_cli_here(
        "--archive", str(archive), "derive", "padding", pad, "--bucket", "8", "--ev2", fit, "--fit", "ev2", "--json"
    )
    assert (by_id.returncode, by_alias.returncode) == (0, 0), by_id.stderr + by_alias.stderr
    assert by_id.stdout == by_alias.stdout and '"saving"' in by_id.stdout


def test_the_readme_derive_project_example_runs_as_written() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    line = next(ln for ln in readme.splitlines() if ln.startswith("probebook derive project "))
    words = shlex.split(line, comments=True)[1:]
    out = run_cli_here("--archive", str(REPO / "archive"), *words)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("time ") and "250m at context 2048" in out.stdout


def test_an_import_with_a_mode_the_fit_cannot_read_is_refused_before_archiving(tmp_path: Path) -> None:
    bad = REPO / "tests" / "fixtures" / "malformed" / "import" / "step-scaling--unknown-mode.csv"
    out = run_cli_here(
        "--archive", str(tmp_path), "archive", "import", "--probe", "step-scaling", str(bad), "--source", "x"
    )
    assert out.returncode == 2 and "column 'mode': must be one of fixed_batch, fixed_tokens" in out.stderr
    assert not (tmp_path / "evidence").exists() or not any((tmp_path / "evidence").rglob("*.json"))


def test_importing_the_same_file_again_names_the_document_already_archived(tmp_path: Path) -> None:
    good = REPO / "tests" / "fixtures" / "import" / "step-scaling.csv"
    argv = ("--archive", str(tmp_path), "archive", "import", "--probe", "step-scaling", str(good), "--source", "lab")
    first, again = run_cli_here(*argv), run_cli_here(*argv)
    assert (first.returncode, again.returncode, first.stderr) == (0, 0, "")
    assert again.stdout == first.stdout
    said = f"probebook: {good} is already archived as {first.stdout.strip()} (the same rows and source)"
    assert again.stderr == said + "; nothing stored\n"
    assert len(list((tmp_path / "evidence").rglob("*.json"))) == 1
    other = run_cli_here(*argv[:-1], "another source")  # the same rows from another source are another document
    assert other.returncode == 0 and other.stdout != first.stdout


def _row(key: str, value: float | None, text: str | None = None) -> dict:
    return {
        "page": "records/a/v1.md",
        "key": key,
        "value": value,
        "unit": "s",
        "text": text or f"{value} s",
        "uncertainty": None,
        "evidence": ["sha256:" + "0" * 64],
        "derivation": "d",
    }


def test_the_tolerance_of_a_change_is_a_percentage_of_the_old_value() -> None:
    from render.numbers.ledger import Change, beyond_tolerance

    assert [beyond_tolerance(Change(_row("k", 100.0), _row("k", new)), 2.5) for new in (102.5, 97.5, 102.6)] == [
        False,
        False,
        True,
    ]
    assert beyond_tolerance(Change(_row("k", 0.0), _row("k", 1e-9)), 50.0)  # from zero: no relative size
    assert not beyond_tolerance(Change(_row("k", 1.0, "1 s"), _row("k", 1.0, "1.00 s")), 1.0)  # text only
    assert beyond_tolerance(Change(_row("k", 1.0, "1 s"), _row("k", 1.0, "1.00 s")), 0.0)


def test_diff_fails_on_change_only_beyond_its_tolerance(tmp_path: Path) -> None:
    import json

    def ledger(name: str, rows: list[dict]) -> str:
        path = tmp_path / name
        path.write_text(json.dumps({"schema": "probebook.ledger/1", "rows": rows}), encoding="utf-8")
        return str(path)

    old = ledger("old.json", [_row("a", 100.0), _row("b", 10.0)])
    small = ledger("small.json", [_row("a", 101.0), _row("b", 10.0)])
    big = ledger("big.json", [_row("a", 104.0), _row("b", 10.0)])
    fewer = ledger("fewer.json", [_row("a", 100.0)])
    code = {
        new: run_cli_here("diff", old, new, "--fail-on-change", *extra).returncode
        for new, extra in ((small, ("--tolerance", "2")), (big, ("--tolerance", "2")), (fewer, ("--tolerance", "50")))
    }
    assert code == {small: 0, big: 1, fewer: 1}  # a removed number fails whatever the tolerance
    assert run_cli_here("diff", old, small, "--fail-on-change").returncode == 1  # no tolerance: any change
    out = run_cli_here("diff", old, small, "--fail-on-change", "--tolerance", "2", "--json")
    body = json.loads(out.stdout)
    assert (body["tolerance_pct"], body["changed_beyond_tolerance"], len(body["changed"])) == (2.0, 0, 1)
    refused = run_cli_here("diff", old, small, "--tolerance", "-1")
    assert refused.returncode == 2 and "give a percentage of at least 0" in refused.stderr


def test_build_and_verify_print_json_and_the_build_counts_every_page(tmp_path: Path) -> None:
    import json

    docs, archive = tmp_path / "docs", tmp_path / "archive"
    (docs / "playbook").mkdir(parents=True)
    (docs / "index.md").write_text("# Home\n", encoding="utf-8")
    (docs / "playbook" / "a.md").write_text("# A\n\nText.\n", encoding="utf-8")
    good = REPO / "tests" / "fixtures" / "import" / "step-scaling.csv"
    assert run_cli_here("--archive", str(archive), "archive", "import", "--probe", "step-scaling", str(good),
                        "--source", "lab").returncode == 0  # fmt: skip
    argv = ["--archive", str(archive), "build", "--no-site", "--docs", str(docs), "--build-dir", str(tmp_path / "b")]
    argv += ["--config", str(REPO / "mkdocs.yml"), "--published", str(tmp_path / "none.json")]
    first = run_cli_here(*argv, "--json")
    assert first.returncode == 0, first.stderr
    cold = json.loads(first.stdout)
    (docs / "playbook" / "a.md").write_text("# A\n\nText, edited.\n", encoding="utf-8")
    warm = run_cli_here(*argv)
    assert warm.returncode == 0, warm.stderr
    assert cold["pages"] == cold["pages_written"] and cold["evidence"] == 1 and cold["pages"] >= 3
    # an incremental build: the page count is the site's, and says how many were written anew
    assert f": {cold['pages']} pages (1 written anew, the rest unchanged)," in warm.stdout
    verified = run_cli_here("--archive", str(archive), "archive", "verify", "--json")
    assert verified.returncode == 0 and json.loads(verified.stdout)["files"] == 1
    assert json.loads(verified.stdout)["ok"] is True


def test_fit_json_carries_its_confidence_intervals() -> None:
    import json

    out = run_cli_here("--archive", str(SITE_ARCHIVE), "fit", "step-scaling", STEP, "--at", "2048", "--json")
    assert out.returncode == 0, out.stderr
    ci = json.loads(out.stdout)["ci"]
    assert ci["level"] == 0.95 and {"c_s", "a_s_per_token"} <= set(ci["intervals"])
    for name, interval in ci["intervals"].items():
        assert list(interval) == ["low", "high"] and interval["low"] <= interval["high"], name


def test_the_footer_date_is_the_build_day_unless_source_date_epoch_says(monkeypatch) -> None:
    from render.assemble.dates import footer_epoch

    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    assert footer_epoch(now=1764590400.5) == 1764547200  # 2025-12-01 12:00:00.5 UTC -> that day's midnight
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "86400")
    assert footer_epoch(now=1764590400.5) == 86400


def test_imported_evidence_without_a_gpu_is_not_listed_as_a_cpu_run() -> None:
    from render.evidence.index import NO_GPU, UNRECORDED, machine_name

    imported, measured = {"kind": "imported", "source": "lab"}, {"kind": "measured"}
    assert machine_name({"machine": {"gpu": None}, "origin": imported}) == UNRECORDED
    assert machine_name({"machine": {"gpu": None}, "origin": measured}) == NO_GPU
    assert machine_name({"machine": {"gpu": "NVIDIA  H200"}, "origin": imported}) == "NVIDIA H200"
