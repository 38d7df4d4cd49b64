"""Provenance of evidence: the hash of the whole measuring source tree, and the git commit and
``dirty`` flag, which are unknown (``None``) rather than ``false`` where there is no commit."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from measure.machine import code_fingerprint, source_tree_sha256

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _tree(root: Path) -> Path:
    (root / "pkg" / "probes").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_bytes(b"")
    (root / "pkg" / "timing.py").write_bytes(b"WINDOWS = 5\n")
    (root / "pkg" / "probes" / "gemm.py").write_bytes(b"VERSION = 1\n")
    return root / "pkg"


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


def test_tree_hash_is_a_fixed_function_of_paths_and_bytes(tmp_path):
    pkg = _tree(tmp_path)
    # sha256(b"__init__.py\x000\x00" b"probes/gemm.py\x0012\x00VERSION = 1\n" b"timing.py\x0012\x00WINDOWS = 5\n")
    assert source_tree_sha256(pkg) == "70556d7e5e5d7bd8d65283fc3d1fe59355bca8ef46198bb2d330d411c7436aca"


def test_tree_hash_covers_every_file_but_not_bytecode(tmp_path):
    pkg = _tree(tmp_path)
    before = source_tree_sha256(pkg)
    (pkg / "__pycache__").mkdir()
    (pkg / "__pycache__" / "timing.cpython-311.pyc").write_bytes(b"\0bytecode")
    assert source_tree_sha256(pkg) == before  # compiled files are not source
    (pkg / "timing.py").write_bytes(b"WINDOWS = 6\n")  # a shared module, not the probe's own file
    edited = source_tree_sha256(pkg)
    assert edited != before
    (pkg / "timing.py").rename(pkg / "clock.py")  # same bytes under another name
    assert source_tree_sha256(pkg) not in (before, edited)


def test_code_fingerprint_hashes_the_measure_package():
    import measure

    code = code_fingerprint()
    assert code["measure_source_sha256"] == source_tree_sha256(Path(measure.__file__).resolve().parent)


def test_without_a_commit_git_commit_and_dirty_are_unknown(tmp_path):
    plain = tmp_path / "copy"  # a copy of the tree with no git at all
    plain.mkdir()
    assert (code_fingerprint(repo=plain)["git_commit"], code_fingerprint(repo=plain)["dirty"]) == (None, None)
    unborn = tmp_path / "unborn"  # a repository with no commit yet: HEAD names nothing
    unborn.mkdir()
    _git(unborn, "init", "-q")
    (unborn / "a.py").write_text("x = 1\n")
    _git(unborn, "add", "a.py")
    code = code_fingerprint(repo=unborn)
    assert (code["git_commit"], code["dirty"]) == (None, None)


def test_with_a_commit_dirty_follows_tracked_edits(tmp_path):
    _git(tmp_path, "init", "-q")
    (tmp_path / "a.py").write_text("x = 1\n")
    _git(tmp_path, "add", "a.py")
    _git(tmp_path, "commit", "-q", "-m", "one")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tmp_path, capture_output=True, text=True).stdout.strip()
    code = code_fingerprint(repo=tmp_path)
    assert (code["git_commit"], code["dirty"]) == (head, False)
    (tmp_path / "a.py").write_text("x = 2\n")
    assert code_fingerprint(repo=tmp_path)["dirty"] is True
