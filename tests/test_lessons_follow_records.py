"""The playbook follows its records and compares like with like: a lesson renders against its records' current
versions (evidence, links, history, withdrawn claims refused), and a nominal value where the evidence records the
measured one (a parameter count, a setting of one run stated for another, a count typed beside a setting's name)
is refused unless labelled ``nominal()``; rule functions with literal inputs, then real builds of the fixture site."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from conftest import REPO, SITE_FIXTURE, run_cli_here

from render.derive import nominal
from render.numbers.ledger import read as read_ledger
from render.pages import lessons

# -- the rules, on literal inputs ---------------------------------------------------------------------------------


def test_a_nominal_count_beside_a_recorded_one_is_refused_and_an_equal_one_passes() -> None:
    recorded = {516814080: "rows' params of model 500m"}
    why = nominal.nominal_count(500e6, recorded)
    assert why == (
        "500,000,000 is a nominal count; the evidence records 516,814,080 (rows' params of model 500m), -3.3% from it"
    )
    assert nominal.nominal_count(516814080.0, recorded) is None
    assert nominal.nominal_count(500e6, {}) is None  # nothing recorded: nothing to be like


def test_recorded_counts_come_from_params_and_from_each_row() -> None:
    doc = {
        "params": {"n_params_total": 89884800, "batch": 8},
        "data": {"samples": [{"model": "20m", "params": 20157760}, {"model": "500m", "params": 516814080}]},
    }
    assert nominal.recorded_counts(doc) == {
        89884800: "params.n_params_total",
        20157760: "rows' params of model 20m",
        516814080: "rows' params of model 500m",
    }


MID = {"probe": "eval-boundary", "params": {"preset": "90m", "n_params": 89884800, "eval_batches": 16, "batch": 8}}
BIG = {"probe": "eval-boundary", "params": {"preset": "250m", "n_params": 251943360, "eval_batches": 8, "batch": 8}}


def test_a_setting_read_from_one_of_two_like_runs_is_refused_until_read_from_both() -> None:
    found = nominal.unshared_settings({"params.eval_batches": {"mid"}}, {"mid": MID, "big": BIG})
    assert found == [nominal.Unshared("params.eval_batches", "mid", 16.0, "big", 8.0)]
    assert nominal.unshared_settings({"params.eval_batches": {"mid", "big"}}, {"mid": MID, "big": BIG}) == []
    assert nominal.unshared_settings({"params.batch": {"mid"}}, {"mid": MID, "big": BIG}) == []  # they agree


def test_runs_of_another_design_are_described_one_by_one() -> None:
    lora = {"probe": "step-scaling", "params": {"workload": "h:lora", "model_flops_per_token": 1, "seq_lens": [16]}}
    plug = {"probe": "step-scaling", "params": {"workload": "h:plain", "model_flops_per_token": 2, "seq_lens": [16]}}
    assert not nominal.like(lora, plug, "params.model_flops_per_token")
    assert nominal.like(MID, BIG, "params.eval_batches")
    assert nominal.unshared_settings({"params.model_flops_per_token": {"a"}}, {"a": lora, "b": plug}) == []


def test_a_count_typed_beside_a_settings_name_must_be_a_recorded_value() -> None:
    text = "Each pass ran\n16 eval batches, at batch 8; {{ value(big, 'x') }} and `9 eval batches` are not prose."
    found = nominal.typed_settings(text, [BIG])
    assert found == [nominal.TypedSetting(2, 16, "params.eval_batches", (8.0,))]
    assert nominal.typed_settings("It ran 8 eval batches and batch 8.", [BIG]) == []
    assert nominal.typed_settings("sequences of 2048 tokens", [{"params": {"tokens": 16384}}]) == []  # a unit word


def test_one_comparison_reads_the_same_on_two_pages() -> None:
    record = {"derivation": "value(big, data.x) > value(mid, data.x) and fit(big).c <= fit(big).a"}
    lesson = {"derivation": "value(mid2, data.x) < value(big2, data.x)"}
    ids = {"big": "sha256:b", "mid": "sha256:m"}
    assert lessons.comparisons(lesson, {"big2": "sha256:b", "mid2": "sha256:m"}) <= lessons.comparisons(record, ids)
    assert lessons.comparisons(record, ids) == {
        "value(sha256:m, data.x) < value(sha256:b, data.x)",
        "fit(sha256:b).c <= fit(sha256:b).a",
    }


# -- real builds of the fixture site -------------------------------------------------------------------------------

LESSON = SITE_FIXTURE / "docs" / "playbook" / "fit-past-plateau.md"


def _docs(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    shutil.copytree(SITE_FIXTURE / "docs", docs)
    return docs


def _build(tmp_path: Path, docs: Path) -> subprocess.CompletedProcess[str]:
    return run_cli_here(
        "--archive", str(SITE_FIXTURE / "archive"), "build", "--docs", str(docs), "--out", str(tmp_path / "site"),
        "--build-dir", str(tmp_path / "build"), "--config", str(REPO / "mkdocs.yml"),
        "--published", str(tmp_path / "none.json"), "--no-site",
    )  # fmt: skip


def _refused(proc: subprocess.CompletedProcess[str], *words: str) -> str:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert all(w in lines[0] for w in words), lines[0]
    return str(lines[0])


def _lesson(docs: Path, front: str, body: str) -> Path:
    page = docs / "playbook" / "fit-past-plateau.md"
    page.write_text(f"---\ntitle: Fit past the launch-bound plateau\n{front}---\n{body}\n", encoding="utf-8")
    return page


def test_a_lesson_renders_against_its_records_current_version(tmp_path: Path) -> None:
    proc = _build(tmp_path, SITE_FIXTURE / "docs")
    assert proc.returncode == 0, proc.stderr
    page = (tmp_path / "build" / "docs" / "playbook" / "fit-past-plateau.md").read_text(encoding="utf-8")
    assert "](../records/step-time/v2.md) (version 2, current)." in page
    ledger = read_ledger(tmp_path / "build" / "docs" / "ledger.json")
    rows = [r for r in ledger if r["page"] == "playbook/fit-past-plateau.md" and r["unit"] != "claim"]
    sweep = "sha256:08e78675deb8fd5dd2f23023a7b01a3f923ee546a24aba8d2990210900bc4c1d"  # v2's, not v1's
    assert {tuple(r["evidence"]) for r in rows} == {(sweep,)}
    assert "- `sweep`:" in page and "- `ceiling`:" not in page  # only the evidence it shows is listed


def test_a_lesson_with_evidence_of_its_own_is_refused(tmp_path: Path) -> None:
    docs = _docs(tmp_path)
    page = _lesson(docs, "evidence:\n  sweep: sha256:1c7ccb387242\n", "{{ fit(sweep).c }}")
    _refused(_build(tmp_path, docs), f"{page} line 3", "a lesson takes no evidence of its own")


def test_a_link_to_a_superseded_version_needs_a_history_entry(tmp_path: Path) -> None:
    docs = _docs(tmp_path)
    body = 'Older: [version 1](../records/step-time/v1.md).\n\n{{ fit(sweep, tokens="512:").c }}'
    page = _lesson(docs, "records:\n  - step-time\n", body)
    _refused(_build(tmp_path, docs), f"{page} line 6", "records/step-time/v1.md, superseded by version 2", "history")
    front = "records: [step-time]\nhistory:\n  - {record: step-time, version: 1, note: The fit from every token.}\n"
    _lesson(docs, front, body)
    proc = _build(tmp_path, docs)
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "build" / "docs" / "playbook" / "fit-past-plateau.md").read_text(encoding="utf-8")
    assert f'!!! note "{lessons.HISTORY_TITLE}"' in text
    assert "superseded by [version 2](../records/step-time/v2.md); not what the record states today." in text


def test_a_lesson_stating_a_claim_its_record_withdrew_fails(tmp_path: Path) -> None:
    docs = _docs(tmp_path)
    v1 = docs / "records" / "step-time" / "v1.md"
    v1.write_text(
        v1.read_text(encoding="utf-8").replace("evidence:\n", "evidence:\n  batch: sha256:63cc7d4ea38d\n", 1)
        + '\n{{ claim(batch_summary(batch).largest_batch < batch_summary(batch).first_oom, "it ran out above") }}\n',
        encoding="utf-8",
    )
    said = '{{ claim(batch_summary(batch).first_oom > batch_summary(batch).largest_batch, "the OOM lies above") }}'
    page = _lesson(docs, "records:\n  - step-time\n", said)
    _refused(_build(tmp_path, docs), str(page), "records/step-time/v1.md claimed", "current version 2 no longer")
    v2 = docs / "records" / "step-time" / "v2.md"
    v2.write_text(v2.read_text(encoding="utf-8") + f"\n{said}\n", encoding="utf-8")
    proc = _build(tmp_path, docs)  # the current version states it too: the lesson may
    assert proc.returncode == 0, proc.stderr


def test_a_nominal_parameter_count_fails_unlabelled_and_passes_labelled(tmp_path: Path) -> None:
    docs = _docs(tmp_path)
    rate = "batch_summary(batch).fastest_tok_s"
    page = _lesson(docs, "records:\n  - step-time\n", f'{{{{ project({rate}, "260M").time }}}}')
    _refused(_build(tmp_path, docs), f"{page} line 6", "params '260M'", "records 250,000,000", "nominal(")
    _lesson(docs, "records:\n  - step-time\n", f'{{{{ project({rate}, "250M").time }}}}')  # the recorded count
    assert _build(tmp_path, docs).returncode == 0
    _lesson(docs, "records:\n  - step-time\n", f'{{{{ project({rate}, nominal("260M", "a round size")).time }}}}')
    proc = _build(tmp_path, docs)
    assert proc.returncode == 0, proc.stderr
    ledger = read_ledger(tmp_path / "build" / "docs" / "ledger.json")
    row = next(r for r in ledger if r["page"] == "playbook/fit-past-plateau.md" and r["key"].startswith("project("))
    assert "nominal, not measured: a round size" in row["derivation"]
    text = (tmp_path / "build" / "docs" / "playbook" / "fit-past-plateau.md").read_text(encoding="utf-8")
    assert "*(nominal P)*" in text


def test_a_recorded_count_drives_the_projection(tmp_path: Path) -> None:
    docs = _docs(tmp_path)
    said = "{{ project(batch_summary(batch).fastest_tok_s, batch_summary(batch).params).tokens }}"
    _lesson(docs, "records:\n  - step-time\n", said)
    proc = _build(tmp_path, docs)
    assert proc.returncode == 0, proc.stderr
    ledger = read_ledger(tmp_path / "build" / "docs" / "ledger.json")
    row = next(r for r in ledger if r["page"] == "playbook/fit-past-plateau.md" and r["key"].startswith("project("))
    assert row["value"] == 20 * 250000000 and "P=250 million," in row["derivation"]
