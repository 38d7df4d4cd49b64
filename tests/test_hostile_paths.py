"""Every reader of a path refuses a FIFO or a device in one line, never blocking on it (issue 41): padding's corpus,
``archive add``, ``build --config``, a campaign spec, a campaign's ``manifest.id``, a journal; a corpus that is not
UTF-8. Every remaining traceback is one line, exit 2: ``derive`` expressions touching dunder attributes, a 20-digit
``SOURCE_DATE_EPOCH`` in a fresh process, ``build --out /proc/x``. ``serve`` serves no link planted in ``site/``.
Each command that reads a path runs as a real process, so one that blocks fails the test by its timeout; the
dunder expressions after each test's first run in this process."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO, SITE_FIXTURE, run_cli_here

SWEEP = "sha256:08e78675deb8"  # the fixture's step-scaling run
BUILD = ["build", "--docs", str(SITE_FIXTURE / "docs"), "--config", str(REPO / "mkdocs.yml")]
TIMEOUT_S = 300.0
"""Past this a command has blocked (each here answers in seconds)."""


def _cli(*args: str, env: dict[str, str] | None = None, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "probebook", "--archive", str(SITE_FIXTURE / "archive"), *args],
        cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT_S,
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
    )  # fmt: skip


def _cli_here(*args: str) -> subprocess.CompletedProcess[str]:
    """``_cli`` in this process (``conftest.run_cli_here``): the same parser, dispatch and one-line errors without a
    new interpreter, which costs about 1 s of CPU for render's imports; the first case of each test keeps ``_cli``,
    so the real process's exit status and stderr stay tested."""
    return run_cli_here("--archive", str(SITE_FIXTURE / "archive"), *args)


def _one_line(proc: subprocess.CompletedProcess[str], *words: str) -> str:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert all(w in lines[0] for w in words), lines[0]
    return lines[0]


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "fifo.csv"
    os.mkfifo(path)
    return path


class TestFifosAndDevices:
    """A FIFO blocks its reader forever, ``/dev/zero`` never ends: each reader names what it was given."""

    @pytest.mark.parametrize("device", [False, True])
    def test_padding_corpus(self, fifo: Path, device: bool) -> None:
        given = "/dev/zero" if device else str(fifo)
        _one_line(_cli("measure", "padding", "--corpus", given), f"--corpus {given}", "not a regular file")

    @pytest.mark.parametrize("device", [False, True])
    def test_archive_add(self, fifo: Path, tmp_path: Path, device: bool) -> None:
        given = "/dev/null" if device else str(fifo)
        archive = tmp_path / "archive"
        proc = subprocess.run(
            [sys.executable, "-m", "probebook", "--archive", str(archive), "archive", "add", given],
            cwd=REPO, capture_output=True, text=True, timeout=TIMEOUT_S, env={**os.environ, "PYTHONPATH": str(REPO)},
        )  # fmt: skip
        _one_line(proc, given, "a device" if device else "a FIFO", "nothing was added")
        assert not archive.exists() or not any(archive.rglob("*.json"))

    def test_build_config(self, fifo: Path, tmp_path: Path) -> None:
        args = [a if a != str(REPO / "mkdocs.yml") else str(fifo) for a in BUILD]
        proc = _cli(*args, "--out", str(tmp_path / "site"), "--build-dir", str(tmp_path / "build"))
        _one_line(proc, f"--config {fifo}", "a FIFO")

    def test_campaign_spec(self, fifo: Path, tmp_path: Path) -> None:
        _one_line(_cli("campaign", "plan", str(fifo), "--output", str(tmp_path / "c")), str(fifo), "a FIFO")

    def test_campaign_manifest_id(self, tmp_path: Path) -> None:
        (tmp_path / "c").mkdir()
        os.mkfifo(tmp_path / "c" / "manifest.id")
        _one_line(_cli("campaign", "status", str(tmp_path / "c")), "manifest.id", "a FIFO")

    def test_journal(self, fifo: Path) -> None:
        _one_line(_cli("measure", "recover", str(fifo)), str(fifo), "a FIFO")

    @pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
    def test_a_corpus_that_is_not_utf8(self, tmp_path: Path, suffix: str) -> None:
        corpus = tmp_path / f"corpus{suffix}"
        corpus.write_bytes(b"length\n\xff\xfe\n" if suffix == ".csv" else b'{"text": "\xff"}\n')
        _one_line(_cli("measure", "padding", "--corpus", str(corpus)), str(corpus), "not UTF-8")


class TestDeriveDunders:
    """The page sandbox refuses these; in ``derive`` they were a traceback (``SecurityError``), now one line."""

    @pytest.mark.parametrize(
        "expression",
        [
            "(1).__class__",
            "(1).__class__.__base__.__subclasses__()",
            "(ev.__class__)",
            "({}).__init__",
            "value(ev.__class__, 'samples')",
            "(ev.__init__.__globals__)",
        ],
    )
    def test_refused_in_one_line(self, expression: str) -> None:
        run = _cli if expression == "(1).__class__" else _cli_here
        _one_line(run("derive", "value", SWEEP, expression), expression, "not allowed in a page", "unsafe")

    @pytest.mark.parametrize("expression", ["(1/0)", "([1][5])"])
    def test_an_expressions_own_error(self, expression: str) -> None:
        run = _cli if expression == "(1/0)" else _cli_here
        _one_line(run("derive", "value", SWEEP, expression), f"argument {expression!r}")


class TestEpochAndFolders:
    """A 20-digit ``SOURCE_DATE_EPOCH`` (numpy's ``f2py`` formats it when scipy imports it: ``OverflowError``), and
    ``--out`` or ``--build-dir`` where no folder can be made."""

    @pytest.mark.parametrize("command", ["derive", "build"])
    def test_a_huge_epoch(self, tmp_path: Path, command: str) -> None:
        args = ["derive", "value", SWEEP, "samples"] if command == "derive" else [*BUILD, "--out", str(tmp_path / "s")]
        proc = _cli(*args, env={"SOURCE_DATE_EPOCH": "9" * 20})
        _one_line(proc, f"SOURCE_DATE_EPOCH='{'9' * 20}'", "outside 0..4294967295")

    @pytest.mark.parametrize(
        "flag,given,words",
        [
            ("--out", "/proc/x", ("no folder can be made there",)),
            ("--build-dir", "/proc/y", ("no folder can be made there",)),
            ("--out", "/dev/null/x", ("a file stands on its path",)),
        ],
    )
    def test_a_folder_that_cannot_be_made(self, tmp_path: Path, flag: str, given: str, words: tuple[str, ...]) -> None:
        folders = {"--out": str(tmp_path / "site"), "--build-dir": str(tmp_path / "build"), flag: given}
        run = _cli if given == "/proc/x" else _cli_here  # the first in a real process, the rest in this one
        proc = run(*BUILD, "--published", str(tmp_path / "none.json"), *(x for kv in folders.items() for x in kv))
        _one_line(proc, f"{flag} {given}", *words)
        assert not (tmp_path / "build").exists() or flag == "--out"


class TestServeLinks:
    """``serve`` hands out the site's own files only: a link planted in ``site/`` (to a host file or folder) and a
    FIFO there are a 404; the site's files still a 200."""

    @pytest.fixture
    def served(self, tmp_path: Path) -> Iterator[str]:
        from render.assemble import serve

        site = tmp_path / "site"
        (site / "pages").mkdir(parents=True)
        (site / "index.html").write_text("<p>ok</p>")
        (site / "pages" / "a.html").write_text("<p>a</p>")
        secret = tmp_path / "secret.txt"
        secret.write_text("host file")
        (site / "secret.txt").symlink_to(secret)
        (site / "outside").symlink_to(tmp_path)
        (site / "pages" / "up").symlink_to(site)
        os.mkfifo(site / "fifo.html")
        httpd = serve.make_server(site, "127.0.0.1", 0)
        thread = threading.Thread(target=httpd.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{httpd.server_address[1]}/"
        finally:
            httpd.shutdown()
            httpd.server_close()

    @pytest.mark.parametrize(
        "path", ["secret.txt", "outside/secret.txt", "outside/", "pages/up/index.html", "fifo.html", "pages/up/"]
    )
    def test_refused(self, served: str, path: str) -> None:
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(served + path, timeout=30)
        assert err.value.code == 404
        err.value.close()

    @pytest.mark.parametrize("path", ["index.html", "pages/a.html", "pages/"])
    def test_the_sites_own_files(self, served: str, path: str) -> None:
        with urllib.request.urlopen(served + path, timeout=30) as response:
            assert response.status == 200
