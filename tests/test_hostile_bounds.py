"""Every input bounded, every refusal one line (issue 25, items 10 and 12): template memory (``~`` doubling, string
methods, ``join``/``sum``), deep Markdown brackets, non-finite constants, Python's compile limits, huge powers,
``{{ fit|string }}``, ledgers given as a FIFO or ``/dev/zero``, long or slow ``derive`` arguments, dates past
2106, a linked ``archive/evidence``, a full disk (``RLIMIT_FSIZE``), ``--out`` naming a file, ``--config /etc``,
spreadsheet formulas in CSV downloads, and ``serve`` on ``GET /%00``, early disconnects and silent clients.
The bounds are ``render.pages.limits``; each message is checked to print the bound it enforces."""

from __future__ import annotations

import os
import resource
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, SITE_FIXTURE, run_cli_here

from render.pages import bounded, limits, sources
from render.pages import sandbox as pages
from render.tables.columns import inert_cell, samples_csv

SWEEP = "sha256:08e78675deb8fd5dd2f23023a7b01a3f923ee546a24aba8d2990210900bc4c1d"  # the fixture's step-scaling run
CAP = limits.PAGE_CHARS


def _render(body: str, tmp_path: Path) -> str:
    rel = "records/x/v1.md"
    page = sources.parse_page(tmp_path / rel, rel, "page", body)
    env = pages.make_environment({rel: (page.body, str(tmp_path / rel))})
    return pages.render_body(env, page, {}, pages.PageState(rel))


def _refused_page(tmp_path: Path, body: str) -> str:
    with pytest.raises(pages.PageError) as err:
        _render(body + "\n", tmp_path)
    text = str(err.value)
    assert text.startswith(str(tmp_path / "records/x/v1.md")) and "\n" not in text, text
    return text


def _one_line(proc: Any, *words: str) -> str:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert all(w in lines[0] for w in words), lines[0]
    return lines[0]


def _build_page(tmp_path: Path, text: str, *extra: str, env: dict[str, str] | None = None) -> Any:
    """A real build (no site engine) of the fixture's sources with one more page, ``hostile.md`` (a page, not a
    lesson: a lesson takes its evidence from its records, and these pages name their own)."""
    docs = tmp_path / "docs"
    if not docs.exists():
        shutil.copytree(SITE_FIXTURE / "docs", docs)
    (docs / "hostile.md").write_text(text, encoding="utf-8")
    return run_cli_here(
        "--archive", str(SITE_FIXTURE / "archive"), "build", "--docs", str(docs), "--out", str(tmp_path / "site"),
        "--build-dir", str(tmp_path / "build"), "--config", str(REPO / "mkdocs.yml"),
        "--published", str(tmp_path / "none.json"), "--no-site", *extra, env=env,
    )  # fmt: skip


class TestTemplateMemory:
    """Item 10: ``~`` doubling, ``ljust``/``center``/``zfill``/``replace``/``join``, ``*`` on strings."""

    @pytest.mark.parametrize(
        "body,message",
        [
            ("{% set a = 'x' * 8000000 %}{% set b = a ~ a %}{{ b|length }}",
             f"'~' would make 16000000 characters; a page holds at most {CAP}"),
            ("{{ 'x'.ljust(10**9) }}", f"'.ljust()' would make 1000000000 characters; a page holds at most {CAP}"),
            ("{{ 'x'.rjust(10**9) }}", "'.rjust()' would make 1000000000 characters"),
            ("{{ 'x'.center(10**9) }}", "'.center()' would make 1000000000 characters"),
            ("{{ 'x'.zfill(10**9) }}", "'.zfill()' would make 1000000000 characters"),
            ("{{ '\t'.expandtabs(10**9) }}", "'.expandtabs()' would make 1000000001 characters"),
            ("{{ ('x' * 1000).replace('x', 'x' * 10000) }}", "'.replace()' would make 10000000 characters"),
            ("{{ ('x' * 100000).join(['a'] * 100) }}", "join would make 9900100 characters"),
            ("{{ (['x' * 8000000] * 8000000)|join }}", "join would make 64000000000000 characters"),
            ("{{ ([[1] * 1000] * 1000)|sum(start=[]) }}", "the sum filter adds numbers only"),
            ("{{ 7|join }}", "the join filter needs a list, got a int"),
            ("{{ 'x' * 10**9 }}", f"'*' would make 1000000000 items; a page holds at most {CAP}"),
        ],
    )  # fmt: skip
    def test_an_operation_over_the_bound_is_refused_before_it_runs(
        self, tmp_path: Path, body: str, message: str
    ) -> None:
        started = time.process_time()
        assert message in _refused_page(tmp_path, body)
        assert time.process_time() - started < 2  # refused from the arguments, not after building the string

    def test_operations_under_the_bound_still_work(self, tmp_path: Path) -> None:
        body = "{{ 'ab'.ljust(4, '.') ~ 'x'.zfill(3) ~ 'a-b'.replace('-', '+') ~ ', '.join(['p', 'q']) }}"
        assert _render(body + "\n", tmp_path) == "ab..00xa+bp, q\n"
        assert bounded.concat(["a", 1, "b"]) == "a1b"

    def test_a_real_build_refuses_a_doubling_page_in_one_line(self, tmp_path: Path) -> None:
        text = "# Doubling\n\n{% set a = 'x' * 5000000 %}{% set b = a ~ a %}{{ b|length }}\n"
        _one_line(_build_page(tmp_path, text), "hostile.md", "'~' would make 10000000 characters", str(CAP))


class TestMarkdownNesting:
    """Item 10: a page of 20,000 nested brackets (Python-Markdown's time is quadratic in the depth)."""

    def test_bracket_depth_counts_unescaped_brackets(self) -> None:
        assert bounded.bracket_depth("[[a]] [b]") == 2
        assert bounded.bracket_depth(r"\[\[[x]") == 1
        assert bounded.bracket_depth("]]][[") == 2
        assert bounded.bracket_depth("no brackets") == 0

    def test_a_page_of_deep_brackets_is_refused_quickly(self, tmp_path: Path) -> None:
        started = time.monotonic()
        proc = _build_page(tmp_path, "# Deep\n\n" + "[" * 20000 + "x" + "]" * 20000 + "\n")
        line = _one_line(
            proc, "hostile.md (rendered)", "brackets nest 20000 deep", f"at most {limits.MARKDOWN_NESTING}"
        )
        assert time.monotonic() - started < 60, line

    def test_the_bound_itself_is_allowed(self, tmp_path: Path) -> None:
        n = limits.MARKDOWN_NESTING
        bounded.check_markdown("[" * n + "x" + "]" * n, "page")
        with pytest.raises(bounded.TemplateLimitError, match=f"^page: brackets nest {n + 1} deep"):
            bounded.check_markdown("[" * (n + 1) + "x" + "]" * (n + 1), "page")


class TestTemplateCompileLimits:
    """Item 12: 25 nested ``{% for %}``, a 300-term ``+`` chain (``SyntaxError``), ``{{ 1e400 }}`` and
    ``'nan'|float`` (``NameError``), ``(((10**64)**64)**64)**64``, and ``{{ fit|string }}`` (a memory address)."""

    @pytest.mark.parametrize(
        "body,message",
        [
            ("{% for a in 'x' %}" * 25 + "y" + "{% endfor %}" * 25, "nests too deeply for Python to compile"),
            ("{{ " + " + ".join(["1"] * 300) + " }}", "nests too deeply for Python to compile"),
            ("{{ 1e400 }}", "inf is not a finite number"),
            ("{{ 'nan'|float }}", "nan is not a finite number"),
            ("{{ -1e400 }}", "inf is not a finite number"),
            ("{{ (((10**64)**64)**64)**64 }}",
             f"'**' would make an integer of about 870848 bits (at most {limits.POWER_BITS})"),
            ("{{ 2 ** 65 }}", f"'**' with exponent 65 is refused (at most {limits.POWER_EXPONENT} in a page)"),
        ],
    )  # fmt: skip
    def test_one_line_naming_the_page(self, tmp_path: Path, body: str, message: str) -> None:
        assert message in _refused_page(tmp_path, body)

    def test_string_of_a_function_is_refused_not_printed(self, tmp_path: Path) -> None:
        text = f"---\ntitle: S\nevidence:\n  sweep: {SWEEP}\n---\n# S\n\n{{{{ fit|string }}}}\n"
        _one_line(_build_page(tmp_path, text), "hostile.md line", "the string filter has no text for a method")
        assert bounded.string_filter("a") == "a" and bounded.string_filter(1.5) == "1.5"
        with pytest.raises(bounded.TemplateLimitError, match="no text for a object"):
            bounded.string_filter(object())


class TestLedgerInputs:
    """Item 10: ``--published`` and ``diff`` given a FIFO (which hung) or ``/dev/zero`` (8.5 GB read)."""

    @pytest.fixture
    def fifo(self, tmp_path: Path) -> Path:
        path = tmp_path / "ledger.fifo"
        os.mkfifo(path)
        return path

    def test_diff_of_a_fifo_and_of_dev_zero(self, tmp_path: Path, fifo: Path) -> None:
        good = tmp_path / "good.json"
        good.write_text('{"schema": "probebook.ledger/1", "rows": []}\n')
        started = time.monotonic()
        _one_line(run_cli_here("diff", str(fifo), str(good)), str(fifo), "a FIFO, not a regular file")
        _one_line(run_cli_here("diff", str(good), "/dev/zero"), "/dev/zero", "not a regular file")
        big = tmp_path / "big.json"
        with big.open("wb") as f:
            f.truncate(limits.FILE_BYTES + 1)  # sparse: no disk used
        _one_line(run_cli_here("diff", str(good), str(big)), f"over the {limits.FILE_BYTES}-byte cap")
        assert time.monotonic() - started < 10

    def test_a_build_given_a_fifo_as_its_published_ledger(self, tmp_path: Path, fifo: Path) -> None:
        proc = _build_page(tmp_path, "# Plain\n")  # a first build, so the second reads --published
        assert proc.returncode == 0, proc.stderr
        docs = tmp_path / "docs"
        proc = run_cli_here(
            "--archive", str(SITE_FIXTURE / "archive"), "build", "--docs", str(docs), "--out", str(tmp_path / "site"),
            "--build-dir", str(tmp_path / "build"), "--config", str(REPO / "mkdocs.yml"),
            "--published", str(fifo), "--no-site",
        )  # fmt: skip
        _one_line(proc, str(fifo), "a FIFO, not a regular file")


class TestDeriveArguments:
    """Item 10: ``derive`` on a 120,000-digit argument (a backtracking regex) and on a power with no time limit."""

    def test_a_long_argument_is_refused_before_it_is_parsed(self) -> None:
        started = time.monotonic()
        proc = run_cli_here("--archive", str(SITE_FIXTURE / "archive"), "derive", "fit", SWEEP, "9" * 120000 + "x")
        _one_line(proc, "is 120001 characters", f"at most {limits.ARGUMENT_CHARS}")
        assert time.monotonic() - started < 5

    def test_a_huge_power_is_refused(self) -> None:
        proc = run_cli_here(
            "--archive", str(SITE_FIXTURE / "archive"), "derive", "fit", SWEEP, "--at", "(((10**64)**64)**64)**64"
        )
        _one_line(proc, f"at most {limits.POWER_BITS}")

    def test_fit_with_a_one_number_token_range(self) -> None:
        proc = run_cli_here("--archive", str(SITE_FIXTURE / "archive"), "derive", "fit", SWEEP, "--tokens", "1")
        _one_line(proc, "tokens must be a range (lo, hi) of two numbers or None, got 1")


class TestDates:
    """Item 12: a record dated 9999-12-31, or an out-of-range ``SOURCE_DATE_EPOCH`` (``struct.error`` in the engine)."""

    def test_a_record_dated_9999(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
        docs = tmp_path / "docs"
        shutil.copytree(SITE_FIXTURE / "docs", docs)
        record = docs / "records" / "step-time" / "v2.md"
        record.write_text(record.read_text().replace("date: 2026-12-01", "date: 9999-12-31"))
        proc = _build_page(tmp_path, "# Plain\n")
        _one_line(proc, str(record), "dated 9999-12-31", "1970-01-01 to 2106-02-07")

    @pytest.mark.parametrize("epoch", ["99999999999999", "-1", str(2**32)])
    def test_an_epoch_out_of_range(self, tmp_path: Path, epoch: str) -> None:
        proc = _build_page(tmp_path, "# Plain\n", env={"SOURCE_DATE_EPOCH": epoch})
        _one_line(proc, f"SOURCE_DATE_EPOCH='{epoch}'", f"outside {limits.EPOCH_RANGE[0]}..{limits.EPOCH_RANGE[1]}")


class TestFoldersAndDisks:
    """Item 12: ``archive/evidence`` as a link (``KeyError``), a full disk, ``--out`` naming a file,
    ``--config /etc``."""

    def test_a_linked_evidence_folder(self, tmp_path: Path) -> None:
        shutil.copytree(SITE_FIXTURE / "archive", tmp_path / "real")
        archive = tmp_path / "archive"
        archive.mkdir()
        (archive / "evidence").symlink_to(tmp_path / "real" / "evidence")
        docs = tmp_path / "docs"
        shutil.copytree(SITE_FIXTURE / "docs", docs)
        proc = run_cli_here(
            "--archive", str(archive), "build", "--docs", str(docs), "--out", str(tmp_path / "site"),
            "--build-dir", str(tmp_path / "build"), "--config", str(REPO / "mkdocs.yml"), "--no-site",
        )  # fmt: skip
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        errors = [line for line in proc.stderr.splitlines() if "error:" in line]
        assert len(errors) == 1 and "evidence: a symbolic link; the evidence folder must be a real folder" in errors[0]

    def test_a_full_disk_is_one_line(self, tmp_path: Path) -> None:
        """``RLIMIT_FSIZE`` stands in for a full disk (no tmpfs can be mounted here): every write past 5,000 bytes
        fails with ``EFBIG``, as with ``ENOSPC`` (Python ignores ``SIGXFSZ``)."""
        docs = tmp_path / "docs"
        shutil.copytree(SITE_FIXTURE / "docs", docs)

        def small_files() -> None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (5000, 5000))

        cmd = [sys.executable, "-m", "probebook", "--archive", str(SITE_FIXTURE / "archive"), "build", "--docs",
               str(docs), "--out", str(tmp_path / "site"), "--build-dir", str(tmp_path / "build"), "--config",
               str(REPO / "mkdocs.yml"), "--published", str(tmp_path / "none.json"), "--no-site"]  # fmt: skip
        # no bytecode written under the limit: Python's own cache write would keep a truncated .pyc that the next
        # process importing that module fails to load (tests/conftest.py keeps bytecode)
        env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1"}
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, preexec_fn=small_files, timeout=300)
        _one_line(proc, "build:", "cannot write (File too large)", "still the last good build")

    def test_out_naming_a_file_and_config_naming_a_folder(self, tmp_path: Path) -> None:
        (tmp_path / "a-file").write_text("x")
        proc = run_cli_here(
            "--archive", str(SITE_FIXTURE / "archive"), "build", "--docs", str(SITE_FIXTURE / "docs"),
            "--out", str(tmp_path / "a-file"), "--build-dir", str(tmp_path / "build"),
            "--config", str(REPO / "mkdocs.yml"),
        )  # fmt: skip
        _one_line(proc, "--out", "a file, not a folder")
        proc = run_cli_here(
            "--archive", str(SITE_FIXTURE / "archive"), "build", "--docs", str(SITE_FIXTURE / "docs"),
            "--out", str(tmp_path / "site"), "--build-dir", str(tmp_path / "build"), "--config", "/etc",
        )  # fmt: skip
        _one_line(proc, "--config /etc: a folder, not a mkdocs.yml")


class TestCsvFormulas:
    """Also: samples CSV downloads served spreadsheet formulas as they were."""

    def test_formula_cells_get_a_leading_quote(self) -> None:
        assert [inert_cell(v) for v in ("=1+2", "+1", "-x", "@SUM(A1)", "\tx", "plain", -1.5, 3)] == [
            "'=1+2", "'+1", "'-x", "'@SUM(A1)", "'\tx", "plain", -1.5, 3,
        ]  # fmt: skip

    def test_samples_csv_of_hostile_evidence(self) -> None:
        doc = {"data": {"samples": [{"=cmd": '=HYPERLINK("http://a.test","x")', "tokens": -4, "note": "@x"}]}}
        text = samples_csv(doc)
        assert "'=HYPERLINK" in text and "'@x" in text and "'=cmd" in text and ",-4" in text, text


class TestServe:
    """Item 12: ``serve`` on ``GET /%00``, clients that disconnect early, and a client that never sends a request."""

    @pytest.fixture
    def server(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
        from render.assemble import serve

        (tmp_path / "index.html").write_text("<p>ok</p>" * 10000)
        monkeypatch.setattr(limits, "SERVE_TIMEOUT", 1.0)
        monkeypatch.setattr(serve._Quiet, "timeout", 1.0)
        httpd = serve.make_server(tmp_path, "127.0.0.1", 0)
        thread = threading.Thread(target=httpd.serve_forever, daemon=True)
        thread.start()
        yield httpd.server_address[1]
        httpd.shutdown()
        httpd.server_close()

    def test_nul_disconnects_and_silence(self, server: int, capfd: pytest.CaptureFixture[str]) -> None:
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(f"http://127.0.0.1:{server}/%00", timeout=5)
        assert err.value.code == 400
        err.value.close()
        for _ in range(5):  # ask for a large page and leave at once
            with socket.create_connection(("127.0.0.1", server)) as s:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                s.sendall(b"GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n")
        silent = socket.create_connection(("127.0.0.1", server))
        started = time.monotonic()
        assert silent.recv(1) == b""  # closed by the server after its timeout
        assert time.monotonic() - started < 5
        silent.close()
        with urllib.request.urlopen(f"http://127.0.0.1:{server}/index.html", timeout=5) as response:
            assert response.status == 200
        assert "Traceback" not in capfd.readouterr().err
