"""The site commands as a new user runs them: the README walk-through from import to the Changes page (in the test
process), a new project with no evidence, this repository's own site, publish, diff, lint, serve (and a save made
while serve builds), one-line errors (real subprocesses)."""

from __future__ import annotations

import html
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from conftest import HANG_S, REPOSITORY_BUILD_STDOUT, repository_build, run_cli_here

from render.numbers.ledger import read as read_ledger
from render.pages.sources import load

REPO = Path(__file__).resolve().parent.parent
INPUTS = REPO / "tests" / "fixtures" / "site" / "inputs"  # synthetic values, see make_archive.py
FIXTURE_DOCS = REPO / "tests" / "fixtures" / "site" / "docs"
FIXTURE_ARCHIVE = REPO / "tests" / "fixtures" / "site" / "archive"

RECORD_V1 = """---
title: Where a training step's time goes
version: 1
date: 2026-11-02
evidence:
  sweep: {sweep}
---
The step splits into a fixed part of {{{{ fit(sweep).c }}}} and {{{{ fit(sweep).a }}}} per token.

{{{{ chart("step-scaling", sweep) }}}}
"""

RECORD_V2 = """---
title: Where a training step's time goes, re-measured
version: 2
date: 2026-12-01
supersedes: 1
changes: Re-measures the step on a second sweep.
evidence:
  sweep: {sweep}
{errata}---
The step splits into a fixed part of {{{{ fit(sweep{tokens}).c }}}} and {{{{ fit(sweep{tokens}).a }}}} per token.
"""


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A new project laid out like a fresh clone: the site config, the home page and an empty playbook,
    no records and no archive (the repository's own records cite the repository's archive)."""
    shutil.copy(REPO / "mkdocs.yml", tmp_path / "mkdocs.yml")
    (tmp_path / "docs" / "playbook").mkdir(parents=True)
    shutil.copy(REPO / "docs" / "index.md", tmp_path / "docs" / "index.md")
    (tmp_path / "docs" / "playbook" / "index.md").write_text("---\ntitle: Playbook\n---\nNo lessons yet.\n")
    return tmp_path


def _ok(out: subprocess.CompletedProcess[str]) -> str:
    assert out.returncode == 0, out.stderr
    return out.stdout


def _text(path: Path) -> str:
    """The visible text of a built page, whitespace collapsed."""
    page = path.read_text(encoding="utf-8")
    article = re.search(r"<article.*?</article>", page, re.DOTALL).group(0)  # type: ignore[union-attr]
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", article)).split())


def test_fresh_checkout_builds_with_an_empty_archive(checkout: Path, cli) -> None:
    out = _ok(cli("build", cwd=checkout, env={"PROBEBOOK_ARCHIVE": "archive"}))
    assert out.splitlines()[0] == (
        "built site/ from 0 evidence file(s): 7 pages (7 written anew, the rest unchanged), 0 numbers in the ledger"
    )
    assert json.loads((checkout / "site" / "ledger.json").read_text())["rows"] == []
    assert "No evidence is archived yet" in _text(checkout / "site" / "evidence" / "index.html")
    # the seventh page: the History index the nav links to, built empty
    assert "0 configurations with measured points." in _text(checkout / "site" / "evidence" / "history" / "index.html")
    assert "No numbers are published on this site yet." in _text(checkout / "site" / "changes.html")
    assert (checkout / "site" / "index.html").exists() and (checkout / "site" / "playbook" / "index.html").exists()


@pytest.mark.slow  # the whole repository site, every chart drawn: the longest test of the default run
def test_repository_site_builds_from_its_own_archive(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The README's first command on this repository: every record and playbook page renders from archive/.

    The command's run is the session's one build of the repository (``conftest.repository_build``: ``probebook
    build`` as a real process in the repository, its site written outside it), which the tests that read the
    repository's site share."""
    built = repository_build(tmp_path_factory)
    stored = sorted(p.parent.name + p.stem for p in (REPO / "archive" / "evidence" / "sha256").glob("??/*.json"))
    out = (built / REPOSITORY_BUILD_STDOUT).read_text(encoding="utf-8")
    assert out.startswith(f"built {built / 'site'}/ from {len(stored)} evidence file(s)"), out
    rows = json.loads((built / "site" / "ledger.json").read_text())["rows"]
    assert rows, "the repository's records publish numbers"
    cited = {e[len("sha256:") :] for row in rows for e in row["evidence"]}
    assert cited <= set(stored)
    for ident in cited:
        assert (built / "site" / "evidence" / f"{ident}.html").exists()
    # every current record's first screen opens with its Answer: the first thing under its title (issue 28)
    for record in load(REPO / "docs").records:
        html = (built / "site" / record.current.rel.replace(".md", ".html")).read_text(encoding="utf-8")
        article = html[html.index("<article") :]
        after = article[article.index("</h1>") + len("</h1>") :].lstrip()
        box = '<div class="admonition info answer">\n<p class="admonition-title">Answer</p>'
        assert after.startswith(box), record.slug


def test_readme_walkthrough_import_record_build_supersede_correct_changes(checkout: Path, cli_here) -> None:
    # the commands run in this process (conftest.run_cli_here: ten new interpreters cost more than the walk
    # itself); the other tests here run build, publish, diff and lint as real processes
    cli = cli_here
    env = {"PROBEBOOK_ARCHIVE": "archive"}
    # 1. archive the measurements
    sweep1 = _ok(
        cli(
            "archive",
            "import",
            "--probe",
            "step-scaling",
            str(INPUTS / "step-v1.csv"),
            "--source",
            "lab notebook, 2026-11-02",
            cwd=checkout,
            env=env,
        )
    ).strip()
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", sweep1)
    # 2. write the record (a 12-hex prefix of the id, as the README allows)
    record = checkout / "docs" / "records" / "step-time"
    record.mkdir(parents=True)
    (record / "v1.md").write_text(RECORD_V1.format(sweep=sweep1[:19]))
    # 3. build, browse, publish
    out = _ok(cli("build", cwd=checkout, env=env))
    # the record's two numbers and the five of its chart's alt text (its samples, lengths and fitted range)
    assert "from 1 evidence file(s)" in out and "7 numbers in the ledger" in out
    v1_html = (checkout / "site" / "records" / "step-time" / "v1.html").read_text()
    assert f'href="../../evidence/{sweep1[7:]}.html"' in v1_html and "step-time-v1" not in v1_html
    assert (checkout / "site" / "records" / "step-time" / "v1-step-scaling-1.svg").exists()
    assert _ok(cli("publish", cwd=checkout, env=env)).startswith("published 7 numbers from site/ledger.json")
    published = checkout / "archive" / "published" / "ledger.json"
    assert read_ledger(published) == read_ledger(checkout / "site" / "ledger.json")
    # 4. supersede it with a v2 on new evidence
    sweep2 = _ok(
        cli(
            "archive",
            "import",
            "--probe",
            "step-scaling",
            str(INPUTS / "step-v2.csv"),
            "--source",
            "lab notebook, 2026-12-01",
            cwd=checkout,
            env=env,
        )
    ).strip()
    (record / "v2.md").write_text(RECORD_V2.format(sweep=sweep2, errata="", tokens=""))
    out = _ok(cli("build", cwd=checkout, env=env))
    assert "changes since published: 2 added, 0 removed, 0 changed" in out
    # v2's numbers beside v1's, number by number (issue 40)
    versions = _ok(cli("diff", "archive/published/ledger.json", "site/ledger.json", cwd=checkout))
    assert [ln.split(":")[0] for ln in versions.splitlines() if ln.startswith("version")] == [
        "version  records/step-time/v2.md fit(sweep).a",
        "version  records/step-time/v2.md fit(sweep).c",
    ]
    assert "New record versions" in _text(checkout / "site" / "changes.html")
    v1_text = _text(checkout / "site" / "records" / "step-time" / "v1.html")
    assert "Archived reference. Read the current results →" in v1_text
    assert "Archived reference" not in _text(checkout / "site" / "records" / "step-time" / "v2.html")
    assert "v1.html" in (checkout / "site" / "archive" / "index.html").read_text()
    _ok(cli("publish", cwd=checkout, env=env))
    # 5. correct the derivation, with an erratum
    errata = "errata:\n  - date: 2026-12-03\n    text: The fixed term is now fitted from 512 tokens up.\n"
    (record / "v2.md").write_text(RECORD_V2.format(sweep=sweep2, errata=errata, tokens=', tokens="512:"'))
    out = _ok(cli("build", cwd=checkout, env=env))
    assert "changes since published: 0 added, 0 removed, 2 changed" in out
    v2_text = _text(checkout / "site" / "records" / "step-time" / "v2.html")
    assert "Errata 2026-12-03 : The fixed term is now fitted from 512 tokens up." in v2_text
    # 6. see what moved
    changes = _text(checkout / "site" / "changes.html")
    assert "0 added, 0 removed, 2 changed, 2 unchanged." in changes  # the chart's alt text is left out
    assert "Numbers whose shown text changed" in changes  # both moved numbers, named by their derivation
    assert changes.count("derivation was: step-scaling fit") == 2 and "tokens 512:" in changes
    diff = cli("diff", "archive/published/ledger.json", "site/ledger.json", "--fail-on-change", cwd=checkout)
    assert diff.returncode == 1
    lines = diff.stdout.splitlines()
    assert [ln.split(":")[0] for ln in lines[:-1]] == [
        "changed  records/step-time/v2.md fit(sweep).a",
        "changed  records/step-time/v2.md fit(sweep).c",
    ]
    assert lines[-1] == "0 added, 0 removed, 2 changed, 2 unchanged"
    assert _ok(cli("diff", "archive/published/ledger.json", "site/ledger.json", cwd=checkout)) == diff.stdout


def test_every_site_command_has_help_with_an_example(cli) -> None:
    for command in ("build", "serve", "publish", "diff", "lint"):
        out = _ok(cli(command, "--help"))
        assert out.rstrip().splitlines()[-1].strip().startswith(f"probebook {command}"), command


def test_diff_of_a_malformed_ledger_is_one_line(tmp_path: Path, cli) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    good = tmp_path / "good.json"
    good.write_text('{"schema": "probebook.ledger/1", "rows": []}')
    out = cli("diff", str(bad), str(good))
    assert out.returncode == 2
    assert out.stderr.startswith(f"probebook: error: {bad}: not a JSON ledger")
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr
    same = cli("diff", str(good), str(good), "--fail-on-change")
    assert same.returncode == 0 and same.stdout.strip() == "0 added, 0 removed, 0 changed, 0 unchanged"


def test_lint_lists_every_hit(tmp_path: Path, cli) -> None:
    docs = tmp_path / "docs"
    (docs / "playbook").mkdir(parents=True)
    (docs / "index.md").write_text("# Home\n\nA step of 12.3 ms.\n")
    (docs / "playbook" / "index.md").write_text("# Playbook\n\nAbout 40% faster, see `1.5 s` in code.\n")
    out = cli("lint", "--docs", str(docs))
    assert out.returncode == 1
    assert out.stdout.splitlines() == [
        f"{docs / 'index.md'} line 3 column 11: hand-typed measurement '12.3 ms' in prose; template it from "
        "evidence ({{ ... }}) or put it in `code`",
        f"{docs / 'playbook' / 'index.md'} line 3 column 7: hand-typed measurement '40%' in prose; template it from "
        "evidence ({{ ... }}) or put it in `code`",
        f"{docs / 'playbook' / 'index.md'} line 3: comparative sentence ('faster' near a number) is not checked: "
        "'About 40% faster, see `1.5 s` in code.'; make it a claim(...) the evidence checks, or end it with "
        "{{ context() }}",
    ]
    assert out.stderr.strip() == "probebook: 2 hand-typed measurement(s), 1 unchecked comparative sentence(s)"
    ok = "ok: no hand-typed measurements, no unchecked comparative sentences"
    assert _ok(run_cli_here("lint", "--docs", str(REPO / "docs"))).strip() == ok


def test_bad_input_is_one_line_and_leaves_the_archive_untouched(tmp_path: Path, cli) -> None:
    archive = tmp_path / "archive"
    shutil.copytree(FIXTURE_ARCHIVE, archive)
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in archive.rglob("*") if p.is_file()}
    docs = tmp_path / "docs"
    shutil.copytree(FIXTURE_DOCS, docs)
    v2 = docs / "records" / "step-time" / "v2.md"
    v2.write_text(v2.read_text().replace("version: 2", "version: two"))
    args = (
        "build",
        "--docs",
        str(docs),
        "--archive",
        str(archive),
        "--out",
        str(tmp_path / "site"),
        "--build-dir",
        str(tmp_path / "build"),
    )
    out = cli(*args)
    assert out.returncode == 2
    assert out.stderr == f"probebook: error: {v2} line 3: field 'version' must be a whole number >= 1, got 'two'\n"
    # a tampered evidence file stops the build before anything is rendered
    shutil.copytree(FIXTURE_DOCS, docs, dirs_exist_ok=True)
    victim = next(p for p in sorted(archive.rglob("*.json")))
    victim.chmod(0o644)
    victim.write_bytes(victim.read_bytes().replace(b"synthetic", b"Synthetic"))
    # this refusal and the next in this process (conftest.run_cli_here); the first kept the real exit status and stderr
    out = run_cli_here(*args)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.startswith(f"probebook: error: {victim}: bytes do not match the file's name")
    assert not (tmp_path / "site").exists()
    after = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in archive.rglob("*") if p.is_file()}
    assert sorted(after) == sorted(before)
    assert [p for p in after if after[p] != before[p]] == [victim]
    missing = run_cli_here("build", "--docs", str(tmp_path / "nowhere"), "--archive", str(FIXTURE_ARCHIVE))
    assert missing.returncode == 2 and "no such sources folder" in missing.stderr


def _lines(stream) -> queue.Queue[str]:
    q: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [q.put(line) for line in stream], daemon=True).start()
    return q


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=HANG_S) as response:
        return response.read().decode()


def _wait_for(q: queue.Queue[str], pattern: str, timeout: float = HANG_S) -> re.Match[str]:
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        try:
            line = q.get(timeout=max(0.1, deadline - time.monotonic()))
        except queue.Empty:
            break
        seen.append(line)
        m = re.search(pattern, line)
        if m:
            return m
    raise AssertionError(f"no line matching {pattern!r} in: {seen}")


# slow: a real `probebook serve` process through a build and rebuilds (about 7 s of CPU), end to end; .ci/run runs it
@pytest.mark.slow
def test_serve_rebuilds_when_a_source_changes(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(FIXTURE_DOCS, docs)
    cmd = [
        sys.executable,
        "-m",
        "probebook",
        "serve",
        "--docs",
        str(docs),
        "--archive",
        str(FIXTURE_ARCHIVE),
        "--out",
        str(tmp_path / "site"),
        "--build-dir",
        str(tmp_path / "build"),
        "--published",
        str(tmp_path / "none.json"),
        "--port",
        "0",
        "--interval",
        "0.2",
    ]
    proc = subprocess.Popen(
        cmd,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    try:
        q = _lines(proc.stderr)
        _wait_for(q, r"^probebook: built ")
        url = _wait_for(q, r"serving .* at (http://127\.0\.0\.1:\d+/)").group(1)
        page = _get(url + "playbook/index.html")
        assert "Lessons backed by numbers from the records." in page
        (docs / "playbook" / "index.md").write_text("---\ntitle: Playbook\n---\nEdited while serving.\n")
        _wait_for(q, r"^probebook: change detected: rebuilding")
        _wait_for(q, r"^probebook: built ")
        page = _get(url + "playbook/index.html")
        assert "Edited while serving." in page
        (docs / "playbook" / "index.md").write_text("A typed 1.5 ms number.\n")
        error = _wait_for(q, r"^probebook: error: ")
        assert "hand-typed measurement '1.5 ms'" in error.string
        page = _get(url + "playbook/index.html")
        assert "Edited while serving." in page  # the last good site stays up
    finally:
        proc.terminate()
        proc.wait(timeout=HANG_S)
        assert proc.stderr is not None
        proc.stderr.close()


def test_serve_builds_again_after_a_save_made_while_it_built(tmp_path: Path) -> None:
    from conftest import fixture_site_paths

    from render.assemble.serve import serve

    docs = tmp_path / "docs"
    shutil.copytree(FIXTURE_DOCS, docs)
    paths = fixture_site_paths(tmp_path, docs)
    page, stop, lines = docs / "playbook" / "index.md", threading.Event(), []

    def log(line: str) -> None:
        lines.append(line)
        built = sum(1 for seen in lines if seen.startswith("built "))
        if line.startswith("built ") and built == 1:  # saved as the first build ends, before serve looks again
            page.write_text("---\ntitle: Playbook\n---\nSaved as the first build ended.\n", encoding="utf-8")
        if built == 2 or line.startswith("probebook: error"):
            stop.set()

    worker = threading.Thread(
        target=serve, args=(paths,), kwargs={"port": 0, "interval": 0.05, "log": log, "stop": stop}
    )
    worker.start()
    worker.join(timeout=HANG_S)
    stop.set()
    assert [line.split(" ", 1)[0] for line in lines] == ["built", "serving", "change", "built"]
    assert "Saved as the first build ended." in (paths.site / "playbook" / "index.html").read_text(encoding="utf-8")
