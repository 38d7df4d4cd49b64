"""Shared pytest fixtures: a real temporary archive and a real ``probebook`` subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SITE_FIXTURE = FIXTURES / "site"


@pytest.fixture(scope="session")
def fixture_site(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The fixture site (tests/fixtures/site), built once per test process with the real pipeline and mkdocs.

    Shared by every test that only reads it (test_site_build, test_browser); a test that changes
    sources or the archive builds its own.
    """
    from measure.cli import declarations
    from render.build import BuildPaths, build

    root = tmp_path_factory.mktemp("fixture-site")
    paths = BuildPaths(
        docs=SITE_FIXTURE / "docs",
        archive=SITE_FIXTURE / "archive",
        build=root / "build",
        site=root / "site",
        config=REPO / "mkdocs.yml",
        published=root / "no-published-ledger.json",
        declarations=declarations(),
    )
    build(paths)
    return paths


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    """An empty archive folder (the store creates its layout on first write)."""
    root = tmp_path / "archive"
    root.mkdir()
    return root


def run_cli(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m probebook ARGS`` as a real process; return its exit code and output."""
    full_env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "probebook", *args],
        cwd=cwd or REPO,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def cli():
    """The ``run_cli`` helper, as a fixture."""
    return run_cli
