"""probebook reproduce's commands: every Reproduce block of this repository's site builds into today's probe Configs;
--dry-run, a refused command, bad RECORD / --version / --archive / --with, and --with through a real render."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest

from measure.errors import ProbebookError
from measure.evidence.envelope import canonical_bytes
from measure.evidence.store import Store

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "fixtures" / "reproduce"
NOT_ONE_RUN = ("campaign", "campaign-plan", "campaign-audit", "reproduction")
"""Documents no single probe run writes: a record citing them cannot be re-measured, only matched."""


def _cited() -> list[tuple[str, str, str, dict]]:
    from measure.evidence.reading import for_reading, parse_archived
    from render.pages import sources

    store = Store(REPO / "archive")
    out = []
    for record in sources.load(REPO / "docs").records:
        for page in record.versions:
            for alias, ident in sorted(sources.resolve_evidence(page, store.resolve).items()):
                out.append((page.rel, alias, ident, for_reading(parse_archived(store.read_bytes(ident), ident))))
    return out


def test_every_reproduce_block_command_of_this_site_builds_into_todays_probe_config() -> None:
    from measure.cli import declarations, probe_module
    from probebook.reproduce.commands import build_config, rebuild
    from render.pages.provenance import command

    declared = declarations()
    cited = _cited()
    failures, built = [], 0
    for rel, alias, ident, doc in cited:
        if doc["probe"] in NOT_ONE_RUN or (doc.get("origin") or {}).get("kind") == "imported":
            assert command(doc, declared)[0] is None, f"{rel} {alias}: a command for a document no probe run wrote"
            continue
        try:
            run = rebuild(alias, ident, doc, declared, rel)
            config = build_config(run.command)  # the command as printed, parsed again: the same Config
        except ProbebookError as exc:
            failures.append(f"{rel} evidence {alias} ({ident[:19]}): {exc}")
            continue
        assert isinstance(config, probe_module(doc["probe"]).Config)
        built += 1
    assert not failures, "\n".join(failures)
    assert built >= 90  # 96 cited runs on 2026-12-02: a test that built nothing would pass otherwise


def test_the_site_reproduce_block_shows_the_migrated_ablate_command() -> None:
    from measure.cli import declarations
    from render.pages.provenance import command

    ablations = [doc for rel, _a, _i, doc in _cited() if doc["probe"] == "ablate" and "step-anatomy" in rel]
    text, notes = command(ablations[0], declarations())
    assert text is not None and "baseline" not in text and "--arms no-input-copy," in text
    assert any(n.startswith("migrated: --arms no longer lists baseline") for n in notes)


def test_dry_run_prints_each_cited_run_and_runs_nothing(cli_here, tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    shutil.copytree(FIXTURE / "archive", archive)
    before = sorted(p.name for p in archive.rglob("*.json"))
    r = cli_here("--archive", str(archive), "reproduce", "sleepy-step", "--docs", str(FIXTURE / "docs"), "--dry-run")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert [ln.split()[1] for ln in lines if ln.startswith("# ") and "(sha256:" in ln] == ["reference", "sweep"]
    commands = [ln for ln in lines if ln.startswith("probebook measure ")]
    assert len(commands) == 2
    assert "--workload sleepy:fixed" in commands[0] and "--workload sleepy:factory" in commands[1]
    assert all("--device cpu --workload" in c and "--seq-lens 8,16,32" in c for c in commands)
    assert sorted(p.name for p in archive.rglob("*.json")) == before
    assert not (tmp_path / "runs").exists() and not (REPO / "runs" / "reproduce-sleepy-step-v1").exists()


def test_sessions_replace_the_recorded_ones_on_each_sessioned_probes_command(cli_here, tmp_path: Path) -> None:
    from probebook.reproduce.commands import with_sessions

    assert with_sessions("probebook measure gemm --sessions 1 --device cpu", 5) == (
        "probebook measure gemm --device cpu --sessions 5"
    )
    assert with_sessions("probebook measure gemm --sessions=2 --shape 'a b'", 3) == (
        "probebook measure gemm --shape 'a b' --sessions 3"
    )
    archive = tmp_path / "archive"
    shutil.copytree(FIXTURE / "archive", archive)
    args = ["--archive", str(archive), "reproduce", "sleepy-step", "--docs", str(FIXTURE / "docs")]
    r = cli_here(*args, "--dry-run", "--sessions", "3")
    assert r.returncode == 0, r.stderr
    commands = [ln for ln in r.stdout.splitlines() if ln.startswith("probebook measure ")]
    assert len(commands) == 2 and all(c.endswith("--sessions 3") and c.count("--sessions") == 1 for c in commands)
    refused = cli_here(*args, "--dry-run", "--sessions", "0")
    assert refused.returncode == 2 and "--sessions must be between 1 and" in refused.stderr, refused.stderr
    both = cli_here(*args, "--with", str(archive), "--sessions", "3")
    assert both.returncode == 2 and "--with runs nothing" in both.stderr


def test_a_probe_measuring_in_one_session_runs_as_recorded_with_a_note() -> None:
    from measure.cli import declarations
    from probebook.reproduce.commands import rebuild

    declared = declarations()
    kernels = next(doc for _rel, _a, _i, doc in _cited() if doc["probe"] == "kernels")
    run = rebuild("k", "sha256:" + "0" * 64, kernels, declared, "here", None, 3)
    assert "--sessions" not in run.command
    assert "--sessions 3 not given: this probe measures in one session" in run.notes


def _record(docs: Path, ident: str) -> None:
    page = docs / "records" / "bad-run" / "v1.md"
    page.parent.mkdir(parents=True)
    page.write_text(
        f"---\ntitle: A run today's probe refuses\nversion: 1\ndate: 2026-12-02\nevidence:\n  sweep: {ident}\n---\n"
        'Its fixed part is {{ fit(sweep, terms="c").c }}.\n',
        encoding="utf-8",
    )
    (docs / "index.md").write_text("---\ntitle: t\n---\nA test site.\n", encoding="utf-8")


def test_a_command_todays_probe_refuses_is_one_line_before_anything_runs(cli_here, tmp_path: Path) -> None:
    store = Store(tmp_path / "archive")
    doc = json.loads((next((FIXTURE / "archive").rglob("*.json"))).read_text())
    doc = copy.deepcopy(doc)
    doc["params"]["seq_lens"] = [8, 8, 16]  # today's step-scaling wants 3 distinct lengths
    doc["notes"] = "a test's copy of a fixture run with a refused param; not a measurement"
    ident = store.put_bytes(canonical_bytes(doc))
    _record(tmp_path / "docs", ident)
    r = cli_here(
        "--archive", str(tmp_path / "archive"), "reproduce", "bad-run", "--docs", str(tmp_path / "docs"),
        "--folder", str(tmp_path / "run"),
    )  # fmt: skip
    assert r.returncode == 2, r.stdout + r.stderr
    line = r.stderr.strip()
    assert len(line.splitlines()) == 1 and "Traceback" not in line
    assert "records/bad-run/v1.md: evidence sweep (" + ident[:19] + ")" in line
    assert "refuses its command" in line and "--seq-lens 8,8,16" in line
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["no-such-record"], "RECORD 'no-such-record': no such record"),
        (["sleepy-step", "--version", "7"], "--version 7: record sleepy-step has versions 1"),
        (["sleepy-step", "--with", "/nonexistent/archive"], "--with /nonexistent/archive: not an archive"),
        (["sleepy-step", "--with", "ARCHIVE", "--dry-run"], "--with compares evidence measured elsewhere"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(cli_here, tmp_path: Path, args: list[str], says: str) -> None:
    archive = tmp_path / "archive"
    shutil.copytree(FIXTURE / "archive", archive)
    args = [str(archive) if a == "ARCHIVE" else a for a in args]
    r = cli_here("--archive", str(archive), "reproduce", *args, "--docs", str(FIXTURE / "docs"))
    assert r.returncode == 2 and says in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_a_missing_archive_is_one_line_and_exit_2(cli) -> None:
    r = cli("--archive", "/nonexistent/archive", "reproduce", "sleepy-step", "--docs", str(FIXTURE / "docs"))
    assert r.returncode == 2
    assert r.stderr.strip() == "probebook: error: --archive /nonexistent/archive: no such archive folder"


def _other(tmp_path: Path, gpu: str | None, copies: int = 1) -> Path:
    """Another archive holding re-stamped copies of the fixture's runs (same params, data and machine but ``gpu``),
    each copy a day after the last: a lease of its own, as a reproduction in another lease is."""
    store = Store(tmp_path / "other")
    for path in sorted((FIXTURE / "archive").rglob("*.json")):
        for n in range(copies):
            doc = json.loads(path.read_text())
            doc["machine"] = {**doc["machine"], "gpu": gpu}
            doc["created_at"] = f"2026-12-{3 + n:02d}T05:00:00Z"
            store.put_bytes(canonical_bytes(doc))
    return tmp_path / "other"


def _with(cli_here, tmp_path: Path, other: Path, *more: str):
    archive = tmp_path / "archive"
    if not archive.exists():
        shutil.copytree(FIXTURE / "archive", archive)
    return cli_here(
        "--archive", str(archive), "reproduce", "sleepy-step", "--docs", str(FIXTURE / "docs"), "--with", str(other),
        "--json", *more,
    )  # fmt: skip


def test_with_an_archive_of_the_same_runs_every_number_is_within_and_every_claim_held(cli_here, tmp_path) -> None:
    r = _with(cli_here, tmp_path, _other(tmp_path, None))
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["mode"] == "reproduction" and data["record"] == "sleepy-step" and data["version"] == 1
    assert [(n["key"], n["verdict"]) for n in data["numbers"]] == [
        ("fit(sweep).c", "within"),
        ("fit(reference).c", "within"),
        ("environment.gpu_count", "within"),  # the Environment block's numbers are ledger rows too
    ]
    assert [c["verdict"] for c in data["claims"]] == ["held", "held"]  # the Answer and the body's claim
    assert [n["basis"] for n in data["numbers"]] == ["measured", "measured", "recorded"]
    assert data["summary"] == {
        "numbers": 3, "measured": 2, "within": 2, "outside": 0, "not_comparable": 0, "missing": 0,
        "recorded": 1, "recorded_same": 1, "claims": 2, "held": 2, "flipped": 0, "claims_not_resolved": 0,
        "different": 0, "equivalent": 2, "not_resolved": 0,
    }  # fmt: skip  # the GPU count is a reading of the machine, counted apart from the two measured fits
    # the same runs: each fit equivalent within the step band, judged by its published interval
    assert [(n["outcome"], n["judged_by"], n["effect"]) for n in data["numbers"][:2]] == [
        ("equivalent", n["judged_by"], 0.0) for n in data["numbers"][:2]
    ] and {n["judged_by"] for n in data["numbers"][:2]} <= {"across sessions", "this run's windows"}
    assert set(data["new"].values()) <= set(Store(tmp_path / "archive").ids())  # the matches joined the archive
    stored = Store(tmp_path / "archive").get(data["evidence"])
    assert stored["probe"] == "reproduction" and stored["data"] == {k: v for k, v in data.items() if k != "evidence"}


def test_with_another_gpu_model_is_labelled_cross_machine(cli_here, tmp_path: Path) -> None:
    r = _with(cli_here, tmp_path, _other(tmp_path, "NVIDIA H200"))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout[r.stdout.index("{") :])["mode"] == "cross-machine"
    assert "matched on another GPU model (NVIDIA H200)" in r.stderr


def test_with_several_runs_of_a_key_pairs_the_newest(cli_here, tmp_path: Path) -> None:
    r = _with(cli_here, tmp_path, _other(tmp_path, None, copies=2))
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    newest = {Store(tmp_path / "other").get(i)["created_at"] for i in data["new"].values()}
    assert newest == {"2026-12-04T05:00:00Z"}  # each alias's key cited once: the newest of its two runs


def test_with_ambiguous_and_missing_matches_listed_and_partial_goes_on(cli_here, tmp_path: Path) -> None:
    other = _other(tmp_path, "NVIDIA H200", copies=2)  # another card: no key matches, the params rule finds two
    r = _with(cli_here, tmp_path, other)
    assert r.returncode == 2 and "reference: 2 matches" in r.stderr and "sweep: 2 matches" in r.stderr
    empty = tmp_path / "empty"
    (empty / "evidence").mkdir(parents=True)
    r = _with(cli_here, tmp_path, empty)
    assert r.returncode == 2 and "reference: no match; sweep: no match" in r.stderr
    r = _with(cli_here, tmp_path, empty, "--partial")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert [n["verdict"] for n in data["numbers"]] == ["missing"] * 3 and data["new"] == {}
    assert [c["verdict"] for c in data["claims"]] == [
        "not comparable",
        "not comparable",
    ]  # the Answer and the body's claim


def test_executor_spec_is_read_like_a_campaign_specs_executor_section(cli_here, tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    shutil.copytree(FIXTURE / "archive", archive)
    spec = tmp_path / "executor.yaml"
    spec.write_text("executor:\n  max_concurrent: 0\n", encoding="utf-8")
    args = ["--archive", str(archive), "reproduce", "sleepy-step", "--docs", str(FIXTURE / "docs"), "--trust-evidence"]
    r = cli_here(*args, "--executor-spec", str(spec), "--folder", str(tmp_path / "run"))
    assert r.returncode == 2 and "executor.max_concurrent must be an integer from 1" in r.stderr, r.stderr
    spec.write_text("executor:\n  slurm:\n    gpus: 1\n    no_such: 2\n", encoding="utf-8")
    r = cli_here(*args, "--executor-spec", str(spec), "--folder", str(tmp_path / "run"))
    assert r.returncode == 2 and "executor.slurm: unknown field 'no_such'" in r.stderr, r.stderr
    assert not (tmp_path / "run").exists()


def test_out_stores_the_matches_and_the_reproduction_apart_from_the_archive_read(cli_here, tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    shutil.copytree(FIXTURE / "archive", archive)
    before = sorted(Store(archive).ids())
    r = _with(cli_here, tmp_path, _other(tmp_path, None), "--out", str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert sorted(Store(archive).ids()) == before
    assert sorted(Store(tmp_path / "out").ids()) == sorted([data["evidence"], *data["new"].values()])
