"""Hostile inputs end in one line, never a traceback: template limits (include/import/extends, recursion, huge
operators and format widths, time, output size), front matter (deep nesting, list keys, aliases, BOM), ledgers
(huge integers, deep nesting, NaN) in diff, terminal escape codes in ls/diff, --json without Infinity/NaN, and
exact import (big integers, leading zeros, duplicate keys, full-width digits, 1_000, empty column names)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from measure.errors import ProbebookError
from measure.evidence.importer import read_rows
from measure.evidence.store import Store
from probebook.cli import main
from render.numbers.ledger import to_bytes as ledger_bytes
from render.pages import bounded, sources
from render.pages import sandbox as pages

REPO = Path(__file__).resolve().parent.parent


def cli(*args: str) -> tuple[int, str, str]:
    """Run ``probebook ARGS`` in this process (its real parser and error handling); return status, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def render(body: str, tmp_path: Path) -> str:
    rel = "records/x/v1.md"
    path = tmp_path / rel
    page = sources.parse_page(path, rel, "page", body)
    env = pages.make_environment({rel: (page.body, str(path))})
    return pages.render_body(env, page, {}, pages.PageState(rel))


# -- templates ------------------------------------------------------------------------------------------

TEMPLATES = [
    ('{% include "records/x/v1.md" %}', "{% include %} is not allowed: a page is one file"),
    ('{% import "records/x/v1.md" as m %}', "{% import %} is not allowed"),
    ('{% from "records/x/v1.md" import m %}', "{% from %} is not allowed"),
    ('{% extends "records/x/v1.md" %}', "{% extends %} is not allowed"),
    ("{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}", "the template recurses too deeply"),
    ("{{ 'x' * 10**10 }}", "'*' would make 10000000000 items"),
    ("{{ ['x'] * 10**9 }}", "'*' would make 1000000000 items"),
    ("{{ 2 ** 2 ** 100 }}", "'**' with exponent"),
    ("{{ '%999999999d' % 1 }}", "format spec '999999999' asks for more than 200 characters"),
    ("{{ '%.*f' % (999999999, 1.0) }}", "format spec '.*' asks for more than 200 characters"),
    ("{{ '{:999999999}'.format(1) }}", "format spec '999999999' asks for more than 200 characters"),
    ("{{ '{:{w}}'.format(1, w=999999999) }}", "format spec '{w}' asks for more than 200 characters"),
    # Python's format accepts every Unicode decimal digit: full-width ones are a width too
    ("{{ '{:２０１}'.format(1) }}", "format spec '２０１' asks for more than 200 characters"),
    ("{{ 'x'|center(999999999) }}", "No filter named 'center'"),
    ("{{ 'x'|indent(999999999) }}", "No filter named 'indent'"),
    ("{{ 'x'|replace('x', 'xx') }}", "No filter named 'replace'"),
    ("{{ 'x'|format(1) }}", "No filter named 'format'"),
    ("{% set s = 'y' * 4000000 %}{% for a in 'xxxxxx' %}{{ s }}{% endfor %}", "passes 8388608 characters"),
]


@pytest.mark.parametrize("body,message", TEMPLATES)
def test_template_limits_are_one_line(tmp_path: Path, body: str, message: str) -> None:
    with pytest.raises(pages.PageError) as err:
        render(body + "\n", tmp_path)
    text = str(err.value)
    assert text.startswith(str(tmp_path / "records/x/v1.md")) and "\n" not in text, text
    assert message in text, text


def test_a_template_that_runs_too_long_is_stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pages, "MAX_TEMPLATE_SECONDS", 0.5)
    body = "{% for a in 'x' * 100000 %}{% for b in 'x' * 100000 %}{% endfor %}{% endfor %}\n"
    with pytest.raises(pages.PageError, match=r"v1\.md: .*the template used more than 0\.5 s of CPU time"):
        render(body, tmp_path)


def test_the_time_limit_leaves_no_alarm_behind(tmp_path: Path) -> None:
    import signal

    assert render("plain text {{ 'ok' }}\n", tmp_path) == "plain text ok\n"
    assert signal.getitimer(signal.ITIMER_PROF) == (0.0, 0.0)


def _burn_cpu(seconds: float) -> None:
    import time

    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_untimed_work_is_off_the_clock_and_the_page_keeps_what_it_had_left() -> None:
    # what a page's first derivation spends loading libraries (bounded.untimed) does not count against it ...
    with bounded.time_limit(0.3, "page"):
        with bounded.untimed():
            _burn_cpu(0.6)
        _burn_cpu(0.1)
    # ... but the clock runs again afterwards, with the time the page had left
    with pytest.raises(pages.TemplateLimitError, match=re.escape("page used more than 0.3 s of CPU time")):
        with bounded.time_limit(0.3, "page"):
            with bounded.untimed():
                _burn_cpu(0.1)
            _burn_cpu(1.0)


# -- front matter ---------------------------------------------------------------------------------------

FRONT_MATTER = [
    ("title: " + "[" * 200 + "]" * 200, "front matter nests"),
    ("title: " + "[" * 5000 + "]" * 5000, "front matter nests too deeply"),
    ("[a, b]: 1", "a key must be text, not a list"),
    ("{a: 1}: 1", "a key must be text, not a dict"),
    ("a: &x [1]\nb: *x", "aliases (*name) are not allowed in front matter"),
    ("title: a\ntitle: b", "key 'title' is given twice"),
]


@pytest.mark.parametrize("front,message", FRONT_MATTER)
def test_front_matter_refusals_are_one_line(tmp_path: Path, front: str, message: str) -> None:
    path = tmp_path / "page.md"
    with pytest.raises(sources.SourceError) as err:
        sources.parse_page(path, "page.md", "page", f"---\n{front}\n---\nBody.\n")
    assert str(err.value).startswith(f"{path}") and "\n" not in str(err.value)
    assert message in str(err.value), str(err.value)


def test_a_byte_order_mark_is_tolerated(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_bytes("\ufeff---\ntitle: Home\n---\nBody.\n".encode())
    (page,) = sources.load(docs).pages
    assert page.title == "Home" and page.body.strip() == "Body."


# -- ledgers, diff, ls, --json ---------------------------------------------------------------------------


def _row(key: str, value: Any, text: str = "1 s") -> dict[str, Any]:
    return {
        "page": "p.md",
        "key": key,
        "value": value,
        "unit": "s",
        "text": text,
        "uncertainty": None,
        "evidence": [],
        "derivation": "d",
    }


def test_diff_of_huge_integers_and_escape_codes(tmp_path: Path) -> None:
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_bytes(ledger_bytes([_row("k", 1), _row("esc\x1b[2J", 1)]))
    new.write_bytes(ledger_bytes([_row("k", 10**400), _row("esc\x1b[2J", 2, "\x1b]0;owned\x07 2 s")]))
    code, out, err = cli("diff", str(old), str(new))
    assert code == 0 and err == ""
    assert "\x1b" not in out and "\x07" not in out
    assert "changed  p.md esc\\x1b[2J: 1 s -> \\x1b]0;owned\\x07 2 s (+100%)" in out
    assert "changed  p.md k: 1 s -> 1 s (n/a)" in out
    code, out, err = cli("diff", "--json", str(old), str(new))
    assert code == 0 and "Infinity" not in out and "NaN" not in out
    assert json.loads(out)["changed"][1]["relative_change"] is None


@pytest.mark.parametrize(
    "text,message",
    [
        ('{"schema": "probebook.ledger/1", "rows": [' + "[" * 100 + "]" * 100 + "]}", "nested more than 32"),
        ('{"schema": "probebook.ledger/1", "rows": [' + "[" * 9000 + "]" * 9000 + "]}", "nested more than 32"),
        ('{"schema": "probebook.ledger/1", "rows": [{"value": NaN}]}', "NaN is not valid JSON"),
        ('{"schema": "probebook.ledger/1", "rows": [{"value": 1e999}]}', "out of range"),
        ('{"schema": "probebook.ledger/1", "schema": "x", "rows": []}', "key 'schema' appears twice"),
        ('{"schema": "probebook.ledger/1", "rows": [{"value": ' + "9" * 5000 + "}]}", "not a JSON ledger"),
    ],
)
def test_diff_refuses_malformed_ledgers_in_one_line(tmp_path: Path, text: str, message: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    good = tmp_path / "good.json"
    good.write_bytes(ledger_bytes([]))
    code, out, err = cli("diff", str(good), str(bad))
    assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith(f"probebook: error: {bad}: ")
    assert message in err, err


def test_ls_shows_escape_codes_from_evidence_escaped(tmp_path: Path) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text("tokens,step_s\n128,0.5\n256,0.9\n")
    archive = str(tmp_path / "a")
    gpu = "\x1b[31mH200\x1b]0;title\x07\u202e"
    code, _, err = cli("--archive", archive, "archive", "import", "--probe", "step-scaling", str(rows),
                       "--source", "x", "--gpu", gpu)  # fmt: skip
    assert code == 0, err
    code, out, _ = cli("--archive", archive, "archive", "ls")
    assert code == 0 and "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert "\\x1b[31mH200\\x1b]0;title\\x07\\u202e" in out
    code, out, _ = cli("--archive", archive, "archive", "ls", "--json")
    assert json.loads(out)[0]["gpu"] == gpu and "\x1b" not in out


def test_long_values_in_error_lines_are_clipped(tmp_path: Path) -> None:
    code, _, err = cli("--archive", str(tmp_path), "archive", "show", "x" * 5000)
    assert code == 2 and err.count("\n") == 1 and len(err) <= 620 and err.rstrip("\n").endswith("…")


# -- exact import -----------------------------------------------------------------------------------------


def _csv(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "rows.csv"
    path.write_text(text, encoding="utf-8")
    return path


def test_import_keeps_integers_and_extra_text_exactly(tmp_path: Path) -> None:
    path = _csv(
        tmp_path,
        "tokens,step_s,run,lot,ratio,zero,exp\n"
        "9007199254740993,0.5,012345678901234567890,123456789012345678901,0.5,-0,1e3\n",
    )
    (row,) = read_rows("step-scaling", path)
    assert row == {
        "tokens": 9007199254740993,
        "step_s": 0.5,
        "run": "012345678901234567890",  # leading zero: kept as text
        "lot": 123456789012345678901,  # 21 digits, exact
        "ratio": 0.5,
        "zero": "-0",
        "exp": "1e3",
    }
    code, out, err = cli("--archive", str(tmp_path / "a"), "archive", "import", "--probe", "step-scaling", str(path),
                         "--source", "x")  # fmt: skip
    assert code == 0, err
    doc = Store(tmp_path / "a").get(out.strip())
    assert doc["data"]["samples"][0]["tokens"] == 9007199254740993
    assert doc["data"]["samples"][0]["lot"] == 123456789012345678901


@pytest.mark.parametrize(
    "name,text,message",
    [
        (
            "full-width",
            "tokens,step_s\n１２８,0.5\n",
            "column 'tokens': not a number: '１２８' (write plain ASCII digits",
        ),
        ("underscore", "tokens,step_s\n1_000,0.5\n", "column 'tokens': not a number: '1_000' (write plain ASCII"),
        ("decimal comma", 'tokens,step_s\n128,"1,5"\n', "column 'step_s': not a number: '1,5' (write plain ASCII"),
        ("empty name", "tokens,step_s,\n128,0.5,x\n", "row 1: header column 3 has no name"),
        ("arabic digits", "tokens,step_s\n١٢٨,0.5\n", "not a number: '١٢٨'"),
        ("superscript", "tokens,step_s\n²,0.5\n", "not a number: '²'"),
        ("huge exponent", "tokens,step_s\n1e999999999,0.5\n", "column 'tokens': out of range"),
        ("inf", "tokens,step_s\n128,inf\n", "column 'step_s': must be finite, got 'inf'"),
    ],
)
def test_import_refuses_ambiguous_numbers_in_one_line(tmp_path: Path, name: str, text: str, message: str) -> None:
    path = _csv(tmp_path, text)
    code, _, err = cli("--archive", str(tmp_path / "a"), "archive", "import", "--probe", "step-scaling", str(path),
                       "--source", "x")  # fmt: skip
    assert code == 2 and err.count("\n") == 1, (name, err)
    assert message in err, (name, err)
    assert not (tmp_path / "a").exists()


@pytest.mark.parametrize(
    "text,message",
    [
        ('[{"tokens": 1, "tokens": 2, "step_s": 0.5}]', "key 'tokens' appears twice in one object"),
        ('[{"tokens": 1, "step_s": 0.5, "": 3}]', "row 1: a column has no name"),
        ('[{"tokens": 1, "step_s": 0.5, " ": 3}]', "row 1: a column has no name"),
        ("[" * 40 + "]" * 40, "nested more than 32 levels deep"),
    ],
)
def test_json_import_refuses_in_one_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "rows.json"
    path.write_text(text)
    with pytest.raises(ProbebookError) as err:
        read_rows("step-scaling", path)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_json_import_keeps_big_integers(tmp_path: Path) -> None:
    path = tmp_path / "rows.json"
    path.write_text('[{"tokens": 9007199254740993, "step_s": 0.5, "id": 123456789012345678901, "tag": "007"}]')
    assert read_rows("step-scaling", path) == [
        {"tokens": 9007199254740993, "step_s": 0.5, "id": 123456789012345678901, "tag": "007"}
    ]


def test_evidence_with_a_duplicate_key_or_deep_nesting_is_refused_by_add(tmp_path: Path) -> None:
    source = Store(REPO / "tests" / "fixtures" / "site" / "archive")
    raw = source.read_bytes(source.ids()[0]).decode()
    dup = tmp_path / "dup.json"
    dup.write_text(raw[:-1] + ',"notes":"a","notes":"b"}')
    deep = tmp_path / "deep.json"
    deep.write_text(raw[:-1] + ',"notes":' + "[" * 1000 + "]" * 1000 + "}")
    for path, message in ((dup, "key 'notes' appears twice"), (deep, "nested more than 32 levels deep")):
        code, _, err = cli("--archive", str(tmp_path / "a"), "archive", "add", str(path))
        assert code == 2 and err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "a").exists()
    assert os.environ.get("PROBEBOOK_MAX_EVIDENCE_BYTES") is None


@pytest.mark.parametrize(
    "args,message",
    [
        (("--params", "1e308", "--tok-s", "1e-300", "--json"), "does not fit in a double"),
        (("--params", "1,5B", "--tok-s", "180000"), "--params '1,5B' is not a number"),
        (("--params", "２５０M", "--tok-s", "180000"), "--params '２５０M' is not a number"),
    ],
)
def test_project_refuses_overflow_and_decimal_commas(args: tuple[str, ...], message: str) -> None:
    code, out, err = cli("project", *args)
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err, err
