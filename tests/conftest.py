"""Shared pytest fixtures: a real temporary archive and a real ``probebook`` subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"


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
