"""What a page must say about the evidence it cites: failed evidence refuses the build with the page, alias and
error; numbers from partial evidence carry a visible mark and the page a note; kernels built for another
architecture than the device get a warning. Real temp archives, rendered trees."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from measure.evidence.envelope import Evidence
from measure.evidence.store import Store
from render.assemble.stages import BuildPaths, build
from render.errors import BuildError
from render.numbers import legend

REPO = Path(__file__).resolve().parent.parent
MACHINE = {"gpu": "NVIDIA H200", "gpu_count": 1, "compute_capability": "9.0", "gpu_memory_bytes": 150109880320}
CODE = {"probebook": "0.1.0", "git_commit": None, "dirty": None}


def _copy(status: str, error: str | None = None) -> Evidence:
    rows = [{"direction": "h2d", "window": w, "gb_s": g} for w, g in enumerate((50.0, 52.0, 54.0))]
    return Evidence(
        probe="copy",
        probe_version=1,
        params={"preset": "tiny"},
        data={"samples": rows},
        machine=MACHINE,
        code=CODE,
        status=status,
        error=error,
        created_at="2026-11-29T08:00:00Z",
    )


def _kernels(names: list[str]) -> Evidence:
    rows = [{"kernel": n, "category": "gemm", "calls": 1, "device_time_s": 0.25} for n in names]
    return Evidence(
        probe="kernels",
        probe_version=2,
        params={"preset": "tiny", "steps": 1},
        data={"samples": rows},
        machine=MACHINE,
        code=CODE,
        created_at="2026-11-29T08:00:00Z",
    )


def _site(tmp: Path, evidence: dict[str, Evidence], body: str) -> BuildPaths:
    store = Store(tmp / "archive")
    ids = {alias: store.put(ev) for alias, ev in evidence.items()}
    record = tmp / "docs" / "records" / "r"
    record.mkdir(parents=True)
    (tmp / "docs" / "index.md").write_text("# Home\n")
    front = "\n".join(f"  {alias}: {ident}" for alias, ident in ids.items())
    (record / "v1.md").write_text(
        f"---\ntitle: A record\nversion: 1\ndate: 2026-11-30\nevidence:\n{front}\n---\n{body}\n"
    )
    return BuildPaths(
        docs=tmp / "docs",
        archive=tmp / "archive",
        build=tmp / "build",
        site=tmp / "site",
        config=REPO / "mkdocs.yml",
        published=tmp / "none.json",
    )


def test_failed_evidence_refuses_the_build_naming_page_alias_and_error(tmp_path):
    paths = _site(tmp_path, {"copy": _copy("failed", "the profiler dropped events")}, "A page.")
    ident = Store(paths.archive).ids()[0]
    with pytest.raises(BuildError) as info:
        build(paths, site=False)
    assert str(info.value) == (
        f"{paths.docs}/records/r/v1.md line 5: evidence copy (sha256:{ident.split(':')[1][:12]}) has status failed "
        "(the profiler dropped events); failed evidence is never published"
    )


def test_partial_evidence_marks_each_number_and_the_page(tmp_path):
    paths = _site(
        tmp_path,
        {"copy": _copy("partial", "stopped at its time budget"), "full": _copy("complete")},
        'Copies ran at {{ median(copy, "gb_s") }}; the full run at {{ median(full, "gb_s") }}.',
    )
    build(paths, site=False)
    page = (paths.tree / "records" / "r" / "v1.md").read_text()
    assert '!!! warning "Partial evidence"' in page
    assert "stopped at its time budget" in page
    assert "Copies ran at [52.0\u202fGB/s (50.0–54.0)](" in page  # the mark is a sign after the link
    assert legend.sign_markdown(legend.PARTIAL) + "; the full run" in page
    assert "from partial evidence" in page
    assert "the full run at [52.0\u202fGB/s (50.0–54.0)](" in page  # complete evidence: no mark


def test_kernels_built_for_another_architecture_are_warned_about(tmp_path):
    paths = _site(
        tmp_path,
        {
            "native": _kernels(["nvjet_sm90_tst_96x128", "void cub::Scan<thrust::THRUST_300001_SM_750_800_NS::x>"]),
            "foreign": _kernels(["ampere_bf16_s16816gemm_sm80_tn", "nvjet_sm90_tst_96x128"]),
        },
        'Shares: {{ kernel_share(native, "gemm") }} and {{ kernel_share(foreign, "gemm") }}.',
    )
    build(paths, site=False)
    page = (paths.tree / "records" / "r" / "v1.md").read_text()
    assert page.count('!!! warning "Kernels built for another architecture"') == 1
    assert "`foreign` (sha256:" in page and "kernels tagged sm80 ran on it" in page
    assert "`native` (sha256:" not in page.split("## Evidence")[0]  # SM_750 is a namespace, not a tag


def test_the_numbers_a_partial_runs_note_quotes_are_ledger_rows_linked_to_it(tmp_path):
    # issue 23: the budget and the count a stop reason names are shown, so the ledger holds them
    paths = _site(
        tmp_path,
        {"copy": _copy("partial", "BudgetSpent: time budget of 72 s spent after 8 points")},
        'Copies ran at {{ median(copy, "gb_s") }}.',
    )
    build(paths, site=False)
    ident = Store(paths.archive).ids()[0]
    rows = json.loads((paths.tree / "ledger.json").read_text())["rows"]
    quoted = [(r["key"], r["text"], r["value"], r["evidence"]) for r in rows if r["key"].startswith("notice(")]
    assert quoted == [
        ("notice(copy).stopped[0]", "72", 72.0, [ident]),
        ("notice(copy).stopped[1]", "8", 8.0, [ident]),
    ]
    page = (paths.tree / "records" / "r" / "v1.md").read_text()
    assert "time budget of [72](../../evidence/" in page
