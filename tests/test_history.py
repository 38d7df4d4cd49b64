"""The published history and the changelog: publish appends a dated, chained entry; a rewritten history is refused;
the Changes page lists each publish (records versioned, errata, numbers moved) and previews only unpublished changes."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from render.numbers import ledger
from render.pages import changes, history
from render.pages.sources import load

REPO = Path(__file__).resolve().parent.parent
SITE_FIXTURE = REPO / "tests" / "fixtures" / "site"


def _row(page: str, key: str, value: float, text: str) -> dict:
    return {
        "page": page,
        "key": key,
        "value": value,
        "unit": "s",
        "text": text,
        "uncertainty": None,
        "evidence": ["sha256:" + "1" * 64],
        "derivation": "d",
    }


def test_entry_records_what_a_publish_accepted() -> None:
    src = load(SITE_FIXTURE / "docs")
    before = [_row("records/step-time/v2.md", "fit(sweep).c", 0.010, "10 ms")]
    rows = [_row("records/step-time/v2.md", "fit(sweep).c", 0.012, "12 ms"), _row("index.md", "x", 1.0, "1 s")]
    e = history.entry("2026-12-01", rows, before, src)
    assert e["date"] == "2026-12-01" and e["numbers"] == 2 and e["added"] == 1 and e["removed"] == 0
    assert e["ledger_sha256"] == hashlib.sha256(ledger.to_bytes(rows)).hexdigest()
    (moved,) = e["changed"]
    assert moved["relative"] == pytest.approx(0.2)
    assert {k: moved[k] for k in ("page", "key", "old", "new")} == {
        "page": "records/step-time/v2.md",
        "key": "fit(sweep).c",
        "old": "10 ms",
        "new": "12 ms",
    }
    assert e["records"] == {
        "step-time": {
            "version": 2,
            "date": "2026-12-01",
            "title": "Where a training step's time goes (fixture preset, re-measured)",
            "page": "records/step-time/v2.md",
        }
    }
    assert e["errata"] == [
        {
            "page": "records/step-time/v2.md",
            "date": "2026-12-03",
            "text": "The fixed term is now fitted from 512 tokens up; below that the step is launch-bound.",
        }
    ]


def test_append_chains_every_entry_and_a_rewritten_history_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "published" / history.NAME
    assert history.read(path) == []
    first = history.append(path, {"date": "2026-12-01", "ledger_sha256": "a" * 64})
    assert first["previous"] == hashlib.sha256(b"").hexdigest()
    one = path.read_bytes()
    second = history.append(path, {"date": "2026-12-02", "ledger_sha256": "b" * 64})
    assert second["previous"] == hashlib.sha256(one).hexdigest()
    assert path.read_bytes().startswith(one)  # appended, the first line's bytes untouched
    assert [e["date"] for e in history.read(path)] == ["2026-12-01", "2026-12-02"]
    path.write_bytes(path.read_bytes().replace(b"2026-12-01", b"2026-11-01"))
    with pytest.raises(history.HistoryError, match=r"history\.jsonl line 2: 'previous' does not match"):
        history.read(path)
    with pytest.raises(history.HistoryError, match="line 2"):
        history.append(path, {"date": "2026-12-03", "ledger_sha256": "c" * 64})
    path.write_text("{}\n")
    with pytest.raises(history.HistoryError, match=r"line 1: an entry needs date, ledger_sha256 and previous"):
        history.read(path)


def test_the_repositorys_history_is_seeded_from_the_git_publishes_and_chains() -> None:
    entries = history.read(REPO / "archive" / "published" / history.NAME)
    assert [e["date"] for e in entries[:3]] == ["2026-11-29", "2026-11-29", "2026-11-30"]
    assert all("Seeded from git" in e["source"] for e in entries[:3])
    published = ledger.read(REPO / "archive" / "published" / "ledger.json")
    assert entries[-1]["ledger_sha256"] == hashlib.sha256(ledger.to_bytes(published)).hexdigest()
    assert entries[2]["numbers"] == 416 and len(entries[2]["changed"]) == 32 and entries[2]["added"] == 330


def _page(published: bool, d: ledger.Diff, past: list[dict]) -> str:
    return changes.page_markdown(d, published, {"records/a/v1.md", "records/a/v2.md"}, {}, [], past)


def test_changes_page_lists_each_publish_newest_first_with_records_errata_and_moved_numbers() -> None:
    rec = {"page": "records/a/v1.md", "version": 1, "date": "2026-12-01", "title": "A"}
    past = [
        {"date": "2026-12-01", "ledger_sha256": "a" * 64, "numbers": 1, "added": 1, "removed": 0, "changed": [],
         "records": {"a": rec}, "errata": [], "previous": ""},
        {"date": "2026-12-05", "ledger_sha256": "b" * 64, "numbers": 1, "added": 0, "removed": 0,
         "changed": [{"page": "records/a/v2.md", "key": "fit(s).c", "old": "10 ms", "new": "12 ms", "relative": 0.2}],
         "records": {"a": {**rec, "page": "records/a/v2.md", "version": 2}},
         "errata": [{"page": "records/a/v2.md", "date": "2026-12-04", "text": "Refitted."}], "previous": ""},
    ]  # fmt: skip
    same = ledger.diff([_row("p.md", "k", 1.0, "1 s")], [_row("p.md", "k", 1.0, "1 s")])
    text = _page(True, same, past)
    assert "Unpublished changes" not in text  # a build equal to the published numbers previews nothing
    assert text.index("### Publish 2: 2026-12-05") < text.index("### Publish 1: 2026-12-01")
    newest = text[text.index("### Publish 2: 2026-12-05") : text.index("### Publish 1: 2026-12-01")]
    assert "- [records/a/v2.md](records/a/v2.md): version 2, was 1" in newest
    assert (
        "Refitted." in newest
        and "| [fit(s).c](records/a/v2.md) | [records/a/v2.md](records/a/v2.md) | 10 ms | 12 ms | +20% |" in newest
    )
    assert "new record" in text[text.index("### Publish 1: 2026-12-01") :]
    assert "probebook publish" not in text and "accepts" not in text  # it speaks to readers, not the maintainer
    now = {"records": {"a": {**rec, "page": "records/a/v2.md", "version": 3}}, "errata": past[1]["errata"]}
    text = changes.page_markdown(same, True, {"records/a/v2.md"}, {}, [], past, now)
    preview = text[text.index("## Unpublished changes") : text.index("## History")]
    assert "version 3, was 2" in preview and "Refitted" not in preview and "No number changed." in preview
    moved = ledger.diff([_row("p.md", "k", 1.0, "1 s")], [_row("p.md", "k", 2.0, "2 s")])
    text = _page(True, moved, past)
    assert text.index("## Unpublished changes") < text.index("## History")
    assert "0 added, 0 removed, 1 changed, 0 unchanged." in text


def test_publish_appends_a_dated_entry_and_the_built_changes_page_shows_it(tmp_path: Path, cli_here) -> None:
    cli = cli_here  # build and publish in this process; test_site_atomic and test_site_cli run them as real processes
    docs = tmp_path / "docs"
    shutil.copytree(SITE_FIXTURE / "docs", docs)
    archive = tmp_path / "archive"
    shutil.copytree(SITE_FIXTURE / "archive", archive)
    env = {"SOURCE_DATE_EPOCH": "1764547200"}  # 2025-12-01
    common = ["--docs", str(docs), "--out", str(tmp_path / "site"), "--config", str(REPO / "mkdocs.yml")]

    def run(*words: str) -> str:
        proc = cli("--archive", str(archive), *words, cwd=tmp_path, env=env)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    run("build", *common, "--build-dir", str(tmp_path / "build"))
    out = run("publish", *common)
    assert "dated 2025-12-01 in" in out
    (entry,) = history.read(archive / "published" / history.NAME)
    # 100: the numbers of the fixture site (its tables, alt text and Environment block too) and its Answer's claim;
    # 89 added: a diff leaves the 11 numbers read out of its charts' alt text out (issue 40)
    assert entry["numbers"] == 100 and entry["added"] == 89 and set(entry["records"]) == {"step-time"}
    assert "as last published" in run("publish", *common)
    assert len(history.read(archive / "published" / history.NAME)) == 1  # nothing new: no second entry
    run("build", *common, "--build-dir", str(tmp_path / "build"))
    page = (tmp_path / "build" / "docs" / "changes.md").read_text()
    assert "Unpublished changes" not in page and "### Publish 1: 2025-12-01" in page
    assert "100 numbers published" in page
    assert json.loads((tmp_path / "site" / "ledger.json").read_text())["rows"]
