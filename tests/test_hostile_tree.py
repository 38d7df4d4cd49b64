"""No code runs from the tree and nothing is read from the host through it: a nested ``docs/.git`` whose
``core.fsmonitor`` names a command, planted build caches, ``docs/`` files named like generated chart specs or
table downloads, ``docs/`` as a link or a hard-linked source, and a build folder inside the sources or the
archive. Each class is a real build of a copy of the fixture site."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, SITE_FIXTURE, run_cli_here

GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_AUTHOR_NAME": "t",
           "GIT_AUTHOR_EMAIL": "t@a.test", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@a.test"}  # fmt: skip


def _project(root: Path) -> tuple[Path, Path]:
    """A copy of the fixture's sources and archive under ``root``; returns (docs, archive)."""
    docs, archive = root / "docs", root / "archive"
    shutil.copytree(SITE_FIXTURE / "docs", docs)
    shutil.copytree(SITE_FIXTURE / "archive", archive)
    return docs, archive


def _build(root: Path, docs: Path, archive: Path, *extra: str, build_dir: Path | None = None) -> Any:
    return run_cli_here(
        "--archive", str(archive), "build", "--docs", str(docs), "--out", str(root / "site"),
        "--build-dir", str(build_dir or root / "build"), "--config", str(REPO / "mkdocs.yml"),
        "--published", str(root / "no-published-ledger.json"), *extra,
    )  # fmt: skip


def _git(folder: Path, *args: str) -> str:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("GIT_")}, **GIT_ENV}
    proc = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, env=env, check=True)
    return proc.stdout.strip()


class TestNoGitUnderTheSources:
    """Item 4: a ``docs/.git`` with one commit and ``core.fsmonitor`` set ran its command at every build."""

    def test_a_planted_fsmonitor_runs_nothing_and_the_outer_commit_is_named(self, tmp_path: Path) -> None:
        root = tmp_path / "project"
        root.mkdir()
        (root / "README").write_text("project\n")
        _git(root, "init", "-q")
        _git(root, "add", "README")
        _git(root, "commit", "-q", "-m", "outer")
        outer = _git(root, "rev-parse", "HEAD")[:12]
        docs, archive = _project(root)
        marker = tmp_path / "fsmonitor-ran"
        script = tmp_path / "monitor.sh"
        script.write_text(f"#!/bin/sh\ntouch {marker}\n")
        script.chmod(0o755)
        _git(docs, "init", "-q")
        _git(docs, "add", "-A")
        _git(docs, "commit", "-q", "-m", "planted")
        _git(docs, "config", "core.fsmonitor", str(script))
        _git(root, "config", "core.fsmonitor", str(script))  # forced off in the outer repository too
        hooks = root / ".git" / "hooks"
        (hooks / "post-index-change").write_text(f"#!/bin/sh\ntouch {marker}\n")
        (hooks / "post-index-change").chmod(0o755)
        proc = _build(root, docs, archive, "--no-site")
        assert proc.returncode == 0, proc.stderr
        assert not marker.exists()
        config = (root / "build" / "mkdocs.yml").read_text()
        assert f"from source commit {outer}-dirty" in config  # docs/ is untracked in the outer repository


class _Planted:
    """A pickle that, unpickled, creates ``marker``: what a planted cache file holds."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self) -> tuple[Any, tuple[str, ...]]:
        return (os.system, (f"touch {self.marker}",))


class TestCachesRunNoCode:
    """Item 5: ``build/cache/*.pickle`` was unpickled as found, so a planted file ran code on the next build."""

    def test_planted_cache_files_run_nothing_and_are_made_again(self, tmp_path: Path) -> None:
        import pickle

        from render.assemble import incremental, sealed

        docs, archive = _project(tmp_path)
        first = _build(tmp_path, docs, archive, "--no-site")
        assert first.returncode == 0, first.stderr
        cache = tmp_path / "build" / "cache"
        kept = {p: p.read_bytes() for p in sorted(cache.rglob("*")) if p.is_file()}
        pages = [p for p in kept if p.parent.name == "pages"]
        assert pages and cache / "derived.pickle" in kept and any(p.parent.name == "assets" for p in kept)
        marker = tmp_path / "cache-code-ran"
        evil = pickle.dumps(_Planted(marker))
        for path in kept:
            path.write_bytes(evil)
        assert sealed.unseal(evil) is None
        again = _build(tmp_path, docs, archive, "--no-site")
        assert again.returncode == 0, again.stderr
        assert not marker.exists()
        warnings = [line for line in again.stderr.splitlines() if "not sealed" in line]
        # one line for all page entries, one for the derivations, one for each kept file (the bundle, the tarball)
        named = [next(str(p) for p in kept if str(p) in line) for line in warnings]
        assert len(warnings) == len(set(named)) == 2 + len(kept) - len(pages) - 1, again.stderr
        assert all("Traceback" not in line for line in again.stderr.splitlines())
        for path in kept:  # each made again, sealed, with what the first build made
            assert sealed.unseal(path.read_bytes()) == sealed.unseal(kept[path]), path
        assert incremental.DerivedCache(tmp_path / "build").load()

    def test_a_cache_sealed_with_another_key_is_not_read(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        from render.assemble import sealed

        blob = sealed.seal(b"payload")
        assert sealed.unseal(blob) == b"payload"
        assert sealed.unseal(blob[:-1] + b"X") is None  # one byte of the payload changed
        assert sealed.unseal(b"probebook-sealed-cache/1\n" + bytes(32) + b"payload") is None
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "other-user"))
        sealed.key.cache_clear()
        try:
            assert sealed.unseal(blob) is None  # another user's (or machine's) key
            key_file = tmp_path / "other-user" / "probebook" / "build-cache.key"
            assert key_file.stat().st_mode & 0o777 == 0o600 and key_file.stat().st_size == 32
            assert sealed.unseal(sealed.seal(b"")) == b""
        finally:
            sealed.key.cache_clear()


def _refused(proc: Any, *words: str) -> str:
    """The one line a refused command printed, checked to name each of ``words``."""
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert all(w in lines[0] for w in words), lines[0]
    return lines[0]


class TestNoSourceShadowsAGeneratedFile:
    """Item 7: a ``.json`` or ``.csv`` in ``docs/`` named like a chart spec or table download replaced it silently."""

    @pytest.mark.parametrize(
        "rel",
        [
            "records/step-time/v2-step-scaling-1.vl.json",  # the spec vega-embed draws
            "records/step-time/v2-step-scaling-1.dark.vl.json",
            "records/step-time/v2-loss-memory-1.csv",  # a table's downloads
            "records/step-time/v1-step-scaling-2.json",
            "records/step-time/v2-step-scaling-9.vl.json",  # a number no page made yet: the next chart's name
        ],
    )
    def test_a_source_named_like_a_generated_file_is_refused(self, tmp_path: Path, rel: str) -> None:
        docs, archive = _project(tmp_path)
        (docs / rel).write_text('{"data": {"url": "http://a.test/planted.json"}}')
        page = rel.rsplit("-", 3 if "step-scaling" in rel or "loss-memory" in rel else 2)[0]
        _refused(_build(tmp_path, docs, archive, "--no-site"), str(docs / rel), f"beside {page}.md", "rename it")
        assert not (tmp_path / "build" / "docs").exists()  # refused before the tree is written

    def test_other_downloads_beside_a_page_are_copied(self, tmp_path: Path) -> None:
        docs, archive = _project(tmp_path)
        (docs / "records" / "step-time" / "v2-raw.csv").write_text("a,b\n1,2\n")
        proc = _build(tmp_path, docs, archive, "--no-site")
        assert proc.returncode == 0, proc.stderr
        assert (tmp_path / "build" / "docs" / "records" / "step-time" / "v2-raw.csv").read_text() == "a,b\n1,2\n"


class TestNoHostFileThroughTheSources:
    """Item 8: ``docs`` as a link to a host folder, or a hard link to a host file, published that file."""

    def test_a_linked_sources_folder_is_refused(self, tmp_path: Path) -> None:
        real, archive = _project(tmp_path)
        docs = tmp_path / "linked-docs"
        docs.symlink_to(real)
        _refused(_build(tmp_path, docs, archive, "--no-site"), str(docs), "symbolic link")

    def test_a_hard_linked_source_is_refused(self, tmp_path: Path) -> None:
        docs, archive = _project(tmp_path)
        host = tmp_path / "host-secret.txt"
        host.write_text("password: hunter2\n")
        os.link(host, docs / "playbook" / "notes.txt")
        _refused(_build(tmp_path, docs, archive, "--no-site"), str(docs / "playbook" / "notes.txt"), "hard link")
        assert not (tmp_path / "build" / "docs").exists()


class TestTheBuildWritesNothingIntoItsSources:
    """Item 13: ``--build-dir docs`` or ``--build-dir archive`` wrote build files among the sources."""

    @pytest.mark.parametrize("where", ["docs", "archive", "docs/records", "archive/evidence", "."])
    def test_a_build_folder_overlapping_the_sources_is_refused(self, tmp_path: Path, where: str) -> None:
        docs, archive = _project(tmp_path)
        before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
        proc = _build(tmp_path, docs, archive, "--no-site", build_dir=tmp_path / where)
        _refused(proc, "--build-dir", "overlaps the")
        assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before

    def test_a_site_folder_overlapping_the_sources_is_refused(self, tmp_path: Path) -> None:
        docs, archive = _project(tmp_path)
        proc = run_cli_here(
            "--archive", str(archive), "build", "--docs", str(docs), "--out", str(docs / "site"),
            "--build-dir", str(tmp_path / "build"), "--config", str(REPO / "mkdocs.yml"),
        )  # fmt: skip
        _refused(proc, "--out", "overlaps the --docs folder")
        assert not (tmp_path / "build").exists()
