"""``publish`` writes nothing through a link in ``archive/published/`` (a planted temp name, the ledger, a dangling
``history.jsonl``, the folder itself) and publishes only what the build wrote: a ``site/ledger.json`` edited
after the build is refused. Each refusal is one line and leaves the host file and the published folder as they
were. One real build of the fixture site is shared; each test publishes into its own copy of the archive."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, SITE_FIXTURE, run_cli_here

from render.pages import history


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A complete build of the fixture site (``site/``, ``build/``) under one folder."""
    root = tmp_path_factory.mktemp("published")
    shutil.copytree(SITE_FIXTURE / "docs", root / "docs")
    proc = run_cli_here(
        "--archive", str(SITE_FIXTURE / "archive"), "build", "--docs", str(root / "docs"), "--out", str(root / "site"),
        "--build-dir", str(root / "build"), "--config", str(REPO / "mkdocs.yml"),
        "--published", str(root / "no-published-ledger.json"),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return root


def _publish(built: Path, archive: Path, site: Path | None = None) -> Any:
    return run_cli_here(
        "--archive", str(archive), "publish", "--out", str(site or built / "site"), "--docs", str(built / "docs"),
        "--config", str(REPO / "mkdocs.yml"), env={"SOURCE_DATE_EPOCH": "1764547200"},
    )  # fmt: skip


def _archive(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A copy of the fixture archive with an empty ``published/``, and a host file outside it."""
    archive = tmp_path / "archive"
    shutil.copytree(SITE_FIXTURE / "archive", archive)
    published = archive / "published"
    shutil.rmtree(published, ignore_errors=True)
    published.mkdir()
    host = tmp_path / "host-file"
    host.write_text("a host file\n")
    return archive, published, host


def _one_line(proc: Any, *words: str) -> str:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert all(w in lines[0] for w in words), lines[0]
    return lines[0]


class TestPublishWritesNothingThroughALink:
    """Items 6: planted links in ``archive/published/`` (which travels with the archive) took publish's writes."""

    def test_a_link_at_an_old_temp_name_is_never_opened(self, built: Path, tmp_path: Path) -> None:
        archive, published, host = _archive(tmp_path)
        for pid in (os.getpid(), os.getpid() + 1):  # the names earlier code wrote its temp file under
            (published / f".ledger.json.tmp-{pid}").symlink_to(host)
        proc = _publish(built, archive)
        assert proc.returncode == 0, proc.stderr
        assert host.read_text() == "a host file\n"
        assert json.loads((published / "ledger.json").read_text())["rows"]
        assert not (published / "ledger.json").is_symlink()
        assert len(history.read(published / history.NAME)) == 1

    @pytest.mark.parametrize("name", ["ledger.json", "history.jsonl"])
    def test_a_link_at_a_published_name_is_refused(self, built: Path, tmp_path: Path, name: str) -> None:
        archive, published, host = _archive(tmp_path)
        (published / name).symlink_to(host)
        _one_line(_publish(built, archive), f"{published / name}", "symbolic link")
        assert host.read_text() == "a host file\n"
        assert sorted(p.name for p in published.iterdir()) == [name]  # nothing written beside it either

    def test_a_dangling_history_link_makes_no_file_outside_the_archive(self, built: Path, tmp_path: Path) -> None:
        archive, published, _host = _archive(tmp_path)
        outside = tmp_path / "made-outside.jsonl"
        (published / history.NAME).symlink_to(outside)
        _one_line(_publish(built, archive), history.NAME, "symbolic link")
        assert not outside.exists() and not os.path.lexists(published / "ledger.json")

    def test_a_linked_published_folder_is_refused(self, built: Path, tmp_path: Path) -> None:
        archive, published, _host = _archive(tmp_path)
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        published.rmdir()
        published.symlink_to(elsewhere)
        _one_line(_publish(built, archive), "symbolic link")
        assert list(elsewhere.iterdir()) == []


class TestPublishPublishesWhatWasBuilt:
    """Item 9: a ``site/ledger.json`` edited after the build (a value set to 1e300) was published."""

    def test_an_edited_value_is_refused(self, built: Path, tmp_path: Path) -> None:
        archive, published, _host = _archive(tmp_path)
        site = tmp_path / "site"
        shutil.copytree(built / "site", site)
        path = site / "ledger.json"
        doc = json.loads(path.read_text())
        doc["rows"][0]["value"] = 1e300
        path.write_text(json.dumps(doc, indent=1, sort_keys=True))
        _one_line(_publish(built, archive, site), str(path), "edited after the build")
        assert list(published.iterdir()) == []

    def test_the_ledger_as_built_is_published(self, built: Path, tmp_path: Path) -> None:
        archive, published, _host = _archive(tmp_path)
        proc = _publish(built, archive)
        assert proc.returncode == 0, proc.stderr
        built_rows = json.loads((built / "site" / "ledger.json").read_text())["rows"]
        assert json.loads((published / "ledger.json").read_text())["rows"] == built_rows


class TestPublishOnAFullDisk:
    """Item 12: publish on a full disk printed a traceback and left its temp file in ``archive/published/``."""

    def test_a_failed_write_is_one_line_and_leaves_no_temp_file(self, built: Path, tmp_path: Path) -> None:
        """``RLIMIT_FSIZE`` (soft, this process only, restored) stands in for a full disk: Python ignores ``SIGXFSZ``,
        so a write past it fails with ``EFBIG`` as one past a full disk fails with ``ENOSPC``."""
        import resource

        archive, published, _host = _archive(tmp_path)
        soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1000, hard))  # the built ledger is larger
        # no bytecode written under the limit: a module first imported now would leave a truncated .pyc in
        # __pycache__ that every later process reads (tests/conftest.py)
        writes_bytecode, sys.dont_write_bytecode = sys.dont_write_bytecode, True
        try:
            proc = _publish(built, archive)
        finally:
            resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
            sys.dont_write_bytecode = writes_bytecode
        _one_line(proc, f"cannot write {published / 'ledger.json'}", "File too large")
        assert list(published.iterdir()) == []
