"""probebook reproduce on every probe and every kind of record (issue 40, item 3): a record citing one run of each
probe and a campaign's documents is printed by --dry-run, each command built into today's probe Config, the campaign
part named with the campaign commands that redo it; a record citing padding runs twice under two aliases and a
campaign is re-measured on the CPU through the campaign machinery (no KeyError on a probe without --device), the
campaign's spec written, then compared again --with its folder, paired by the folder's manifest where the match rule
finds each alias ambiguous; a re-measure on another GPU model is cross-machine; the summary counts recorded numbers
apart from measured ones; and this repository's memory-250m record, which cites a campaign, dry-runs."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from measure.evidence.envelope import Evidence
from measure.evidence.store import Store
from measure.probes import PROBES

REPO = Path(__file__).resolve().parents[1]
SPEC = {
    "name": "tiny-sweep",
    "probe": "batch-sweep",
    "config": {"device": "cpu", "warmup": 1, "windows": 3, "iters": 1},
    "grid": {"preset": ["tiny"], "context": [32]},
    "walk": {"start_batch": 1, "max_batch": 2, "max_tokens": None, "window_tokens": 0},
    "executor": {"max_concurrent": 1, "point_timeout_s": 60.0, "grace_s": 60.0, "gpu_lock": True, "poll_s": 5.0},
}
"""A campaign spec's fields as a manifest (``campaign-plan``) records them in its params."""


def _campaign(store: Store) -> dict[str, str]:
    """A campaign's three documents (plan, collected, audit): made-up contents, not a measurement."""
    plan = store.put(Evidence("campaign-plan", 1, SPEC, {"points": [], "curves": []}, notes="a test's manifest"))
    about = {"campaign": SPEC["name"], "manifest": plan}
    sweep = store.put(Evidence("campaign", 1, {**about, "probe": "batch-sweep"}, {"samples": []}, notes="a test's"))
    audit = store.put(Evidence("campaign-audit", 1, about, {"verdict": "clean", "lines": []}, notes="a test's"))
    return {"plan": plan, "sweep": sweep, "audit": audit}


def _write_record(docs: Path, slug: str, evidence: dict[str, str], body: str) -> None:
    page = docs / "records" / slug / "v1.md"
    page.parent.mkdir(parents=True, exist_ok=True)
    cited = "".join(f"  {alias}: {ident}\n" for alias, ident in sorted(evidence.items()))
    page.write_text(
        f"---\ntitle: {slug}\nversion: 1\ndate: 2026-12-02\nevidence:\n{cited}---\n{body}\n", encoding="utf-8"
    )
    (docs / "index.md").write_text("---\ntitle: t\n---\nA test site.\n", encoding="utf-8")


def _every_probe(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """An archive holding one run of every probe (today's defaults, tiny on the CPU; its data made up: only its
    params, the command, matter to --dry-run) and a campaign's documents."""
    from measure.cli import probe_module

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    store = Store(tmp_path / "archive")
    cited = {}
    for probe in PROBES:
        module = probe_module(probe)
        config = module.Config(corpus=str(corpus)) if probe == "padding" else module.Config(device="cpu")
        doc = Evidence(probe, module.VERSION, dataclasses.asdict(config), {"samples": []}, notes="a test's params")
        cited[probe.replace("-", "_")] = store.put(doc)
    cited.update({f"campaign_{k}": v for k, v in _campaign(store).items()})
    return tmp_path / "archive", cited


def test_dry_run_prints_a_command_for_every_probe_and_the_campaign_commands(cli_here, tmp_path: Path) -> None:
    from probebook.reproduce.commands import build_config

    archive, cited = _every_probe(tmp_path)
    _write_record(tmp_path / "docs", "every-probe", cited, "Every probe, once.")
    r = cli_here("--archive", str(archive), "reproduce", "every-probe", "--docs", str(tmp_path / "docs"), "--dry-run")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    commands = [ln for ln in lines if ln.startswith("probebook measure ")]
    assert sorted(c.split()[2] for c in commands) == sorted(PROBES)  # one run of each probe, none refused
    for command in commands:  # each parses into today's probe Config again, as the job would build it
        build_config(command)
    heads = [ln for ln in lines if ln.startswith("# ") and "(sha256:" in ln]
    assert sorted(h.split()[1] for h in heads) == sorted(a for a in cited if not a.startswith("campaign_"))
    # the campaign's three documents: one part, with the commands that redo it, not a refusal of the record
    [part] = [ln for ln in lines if ln.startswith("# campaign_audit, campaign_plan, campaign_sweep: ")]
    assert f"campaign 'tiny-sweep' (manifest {cited['campaign_plan'][:19]})" in part
    [redo] = [ln for ln in lines if ln.startswith("probebook campaign plan ")]
    spec = f"runs/reproduce-every-probe-v1/campaigns/campaign-{cited['campaign_plan'][7:19]}.yaml"
    assert redo == (
        f"probebook campaign plan {spec} --output runs/tiny-sweep && probebook campaign run runs/tiny-sweep && "
        f"probebook --archive {archive} campaign collect runs/tiny-sweep && "
        f"probebook --archive {archive} campaign audit runs/tiny-sweep"
    )
    assert not (tmp_path / "runs").exists() and not Path(spec).exists()  # a dry run writes nothing


def test_this_sites_memory_record_dry_runs_its_three_runs_and_names_the_campaign(cli_here) -> None:
    r = cli_here(
        "--archive", str(REPO / "archive"), "reproduce", "memory-250m", "--docs", str(REPO / "docs"), "--dry-run"
    )
    assert r.returncode == 0, r.stderr
    probes = [ln.split()[2] for ln in r.stdout.splitlines() if ln.startswith("probebook measure ")]
    assert probes == ["loss-memory", "batch-sweep", "batch-sweep"]  # loss, oom, peaks
    assert "# sweep: documents of campaign 'batch-sweep-h200' (manifest sha256:5053df7de3d1)" in r.stdout
    assert "probebook campaign run runs/batch-sweep-h200 && " in r.stdout


def _padding_record(cli_here, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A record citing one padding command twice (``pad``, ``pad_again``: real runs on a small corpus) and a
    campaign's collected document."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i in range(24):
        (corpus / f"doc{i:02d}.txt").write_text("x" * (7 + 13 * i) + "\n", encoding="utf-8")
    archive = tmp_path / "archive"
    args = ["--archive", str(archive), "measure", "padding", "--corpus", str(corpus), "--glob", "*.txt"]
    args += ["--width", "64", "--microbatch", "2", "--accumulation", "2", "--bucket-sizes", "8,16,32", "--quiet"]
    runs = []
    for _ in range(2):
        r = cli_here(*args)
        assert r.returncode == 0, r.stderr
        runs.append(r.stdout.strip().splitlines()[-1])
    campaign = _campaign(Store(archive))
    cited = {"pad": runs[0], "pad_again": runs[1], "sweep": campaign["sweep"]}
    body = (
        "Naive batching pads {{ padding(pad).before }} ({{ padding(pad_again).before }} again) at width "
        '{{ value(pad, "params.width", fmt="d") }}.'
    )
    _write_record(tmp_path / "docs", "pad-twice", cited, body)
    return corpus, cited


@pytest.mark.slow
def test_padding_and_a_campaign_remeasure_then_pair_by_the_folders_manifest(cli, cli_here, tmp_path: Path) -> None:
    corpus, cited = _padding_record(cli_here, tmp_path)
    archive, folder = tmp_path / "archive", tmp_path / "run"
    args = ["--archive", str(archive), "reproduce", "pad-twice", "--docs", str(tmp_path / "docs")]
    env = {"PYTHONPATH": str(REPO)}
    r = cli(*args, "--folder", str(folder), "--corpus", str(corpus), "--glob", "*.txt", "--json", env=env, timeout=300)
    assert r.returncode == 0, r.stderr  # was: KeyError 'device' (exit 70) in the campaign runner
    assert "Traceback" not in r.stderr
    data = json.loads(r.stdout)
    assert data["mode"] == "reproduction" and sorted(data["new"]) == ["pad", "pad_again"]
    assert data["original"] == cited  # the campaign's document is cited, set aside, not re-run
    assert data["campaign_commands"]["sweep"].startswith("probebook campaign plan ")
    spec = Path(data["campaign_commands"]["sweep"].split()[3])  # probebook campaign plan SPEC --output ...
    assert spec.parent == folder / "campaigns" and yaml.safe_load(spec.read_text()) == SPEC
    by_label = {n["key"]: n for n in data["numbers"]}
    befores = [n for k, n in by_label.items() if k.startswith("padding(")]
    assert befores and all(n["verdict"] == "within" and n["basis"] == "measured" for n in befores)  # deterministic
    [width] = [n for k, n in by_label.items() if "params.width" in k]
    assert (width["basis"], width["verdict"], width["old"]) == ("recorded", "within", 64.0)
    s = data["summary"]
    assert s["measured"] + s["recorded"] == s["numbers"] and s["recorded"] >= 1 and s["within"] == s["measured"]

    # --with the folder: each alias answered by its own run, as the manifest planned it
    again = cli_here(*args, "--with", str(folder), "--json")
    assert again.returncode == 0, again.stderr
    paired = json.loads(again.stdout)
    assert paired["new"] == data["new"] and paired["mode"] == "reproduction"
    # the same runs as a plain archive: the match rule finds two of each command, ambiguous
    plain = tmp_path / "plain"
    shutil.copytree(folder / "archive" / "evidence", plain / "evidence")
    ambiguous = cli_here(*args, "--with", str(plain))
    assert (
        ambiguous.returncode == 2
        and "pad: 2 matches" in ambiguous.stderr
        and "pad_again: 2 matches" in (ambiguous.stderr)
    )


def test_a_remeasure_on_another_gpu_model_is_across_machines() -> None:
    from probebook.reproduce.session import across_machines

    def doc(gpu: str | None) -> dict[str, Any]:
        return {"machine": {"gpu": gpu}}

    docs = {"sha256:a": doc("NVIDIA H200"), "sha256:b": doc(None)}
    aliases = {"gpu_run": "sha256:a", "cpu_run": "sha256:b"}
    new_docs = {"sha256:c": doc("NVIDIA H100 80GB HBM3"), "sha256:d": doc(None), "sha256:e": doc("NVIDIA H200")}
    assert across_machines(aliases, docs, {"gpu_run": "sha256:c", "cpu_run": "sha256:d"}, new_docs) == {
        "gpu_run": "NVIDIA H200 -> NVIDIA H100 80GB HBM3"
    }
    assert across_machines(aliases, docs, {"gpu_run": "sha256:e", "cpu_run": "sha256:d"}, new_docs) == {}
    assert across_machines(aliases, docs, {"cpu_run": "sha256:e"}, new_docs) == {"cpu_run": "CPU -> NVIDIA H200"}


def test_recorded_numbers_are_told_from_measured_ones_by_their_ledger_row() -> None:
    from probebook.reproduce.compare import summary
    from probebook.reproduce.verdict import number_basis

    assert number_basis({"key": "value(m, params.batch)", "derivation": "evidence field params.batch"}) == "recorded"
    assert number_basis({"key": "constant(X)", "derivation": "the code's constant measure.timing.X"}) == "recorded"
    assert number_basis({"key": "environment.gpu_count", "derivation": "machine.gpu_count as recorded"}) == "recorded"
    assert number_basis({"key": "environment[a].sm_clock_mhz", "derivation": "machine.sm_clock_mhz"}) == "recorded"
    assert number_basis({"key": "value(m, machine.power_limit_w)", "derivation": "evidence field machine.x"}) == (
        "recorded"
    )
    assert number_basis({"key": "fit(sweep).c", "derivation": "least squares fit of step_s"}) == "measured"
    assert number_basis({"key": "peak(m)", "derivation": "evidence field data.peak_bytes"}) == "measured"
    rows = [
        {"verdict": "within", "basis": "measured"},
        {"verdict": "outside", "basis": "measured"},
        {"verdict": "within", "basis": "recorded"},
        {"verdict": "outside", "basis": "recorded"},
    ]
    assert summary(rows, []) == {
        "numbers": 4, "measured": 2, "within": 1, "outside": 1, "not_comparable": 0, "missing": 0,
        "recorded": 2, "recorded_same": 1, "claims": 0, "held": 0, "flipped": 0,
        "different": 0, "equivalent": 0, "not_resolved": 0, "claims_not_resolved": 0,
    }  # fmt: skip
