"""Fuzz (hypothesis) of the CSV and JSON importer through the real `probebook archive import` and of the front
matter loader: every input is stored exactly or refused with one line and exit 2, never a traceback, and a refusal
leaves the archive's bytes as they were."""

from __future__ import annotations

import collections
import contextlib
import csv
import decimal
import io
import json
import math
import re
import shutil
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from measure.evidence.store import Store
from probebook.cli import main
from render.pages import sources

REPO = Path(__file__).resolve().parent.parent
SEED_ARCHIVE = REPO / "tests" / "fixtures" / "site" / "archive"
OUTCOMES: collections.Counter[str] = collections.Counter()
"""How many fuzzed inputs each test stored or refused (read by whoever runs the module, e.g. for a report)."""
_INT = re.compile(r"[+-]?[0-9]+")
# Derandomized: CI tries the same examples every run (a failure reproduces); no example database is written.
FUZZ = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Cells that look like numbers to someone: exact and inexact integers, decimals, separators, other scripts' digits.
TRICKY = [
    "", " ", "0", "-0", "007", "1_000", "１２８", "1,5", "1.5", "1.50", "1e3", "1E-3", ".5", "5.", "+5", " 12 ",
    "NaN", "nan", "inf", "-Infinity", "1e999", "0x10", "٣", "²", "9007199254740993", "123456789012345678901",
    "1" * 30, "\u00a0128", "12\u200b", "ok", "oom", "\x1b[31m", "a\nb", '"', "=1+1",
]  # fmt: skip
cells = st.one_of(
    st.sampled_from(TRICKY),
    st.integers(min_value=-(10**25), max_value=10**25).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(max_size=8),
)


def _snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _import(archive: Path, path: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--archive", str(archive), "archive", "import", "--probe", "step-scaling", str(path),
                     "--source", "fuzz"])  # fmt: skip
    return code, out.getvalue(), err.getvalue()


def _fresh_archive(tmp_path: Path) -> Path:
    archive = tmp_path / "archive"
    if not archive.exists():
        shutil.copytree(SEED_ARCHIVE, archive)
    return archive


def _refused_cleanly(code: int, out: str, err: str, archive: Path, before: dict[str, bytes]) -> bool:
    assert code == 2, (code, out, err)
    assert out == "" and err.count("\n") == 1 and err.startswith("probebook: error: "), err
    assert _snapshot(archive) == before
    return True


def _exact_number(text: str) -> decimal.Decimal:
    return decimal.Decimal(text.strip())


def _stored_extra_matches(stored: Any, given: Any) -> bool:
    """An extra column keeps its value: the same text, or a number that reads back as exactly that text."""
    if stored == given and type(stored) is type(given):
        return True
    if isinstance(given, str) and isinstance(stored, int) and not isinstance(stored, bool):
        return str(stored) == given
    if isinstance(given, str) and isinstance(stored, float):
        return repr(stored) == given
    return False


# Mostly well-formed rows, so the storing path is fuzzed as hard as the refusing one.
_valid_tokens = st.integers(min_value=1, max_value=10**22).map(str)
_valid_times = st.floats(min_value=1e-9, max_value=1e6).map(repr)
tokens_cells = st.one_of(_valid_tokens, _valid_tokens, _valid_tokens, _valid_tokens, cells)
time_cells = st.one_of(_valid_times, _valid_times, _valid_times, _valid_times, cells)


@FUZZ
@given(rows=st.lists(st.tuples(tokens_cells, time_cells, cells), min_size=1, max_size=3))
def test_csv_import_stores_exactly_or_refuses_in_one_line(tmp_path: Path, rows: list[tuple[str, str, str]]) -> None:
    archive = _fresh_archive(tmp_path)
    before = _snapshot(archive)
    path = tmp_path / "rows.csv"
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(["tokens", "step_s", "run"])
        writer.writerows(rows)
    code, out, err = _import(archive, path)
    if code != 0:
        OUTCOMES["csv refused"] += _refused_cleanly(code, out, err, archive, before)
        return
    samples = Store(archive).get(out.strip())["data"]["samples"]
    assert len(samples) == len(rows)
    for stored, (tokens, step_s, run) in zip(samples, rows, strict=True):
        assert decimal.Decimal(stored["tokens"]) == _exact_number(tokens) and isinstance(stored["tokens"], int)
        assert stored["step_s"] == float(step_s.strip()) and math.isfinite(stored["step_s"])
        assert _stored_extra_matches(stored["run"], run), (stored["run"], run)
    OUTCOMES["csv stored"] += 1


json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(10**30), max_value=10**30),
        st.floats(allow_nan=False, allow_infinity=False),
        st.sampled_from(TRICKY),
        st.text(max_size=6),
    ),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner, max_size=2),
    max_leaves=4,
)
_scalars = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30), st.sampled_from(TRICKY), st.text(max_size=6), st.none()
)
extra_columns = st.dictionaries(
    st.sampled_from(["run", "id", "note", "run", "id", "note", "wait_ms", "", " ", "mode"])
    | st.text(min_size=1, max_size=4),
    _scalars | _scalars | json_values,
    max_size=3,
)
well_formed = st.builds(
    lambda tokens, step_s, extra: {**extra, "tokens": tokens, "step_s": step_s},
    st.one_of(st.integers(min_value=1, max_value=10**22), st.integers(1, 10**6).map(float), tokens_cells),
    st.one_of(st.floats(min_value=1e-9, max_value=1e6), time_cells),
    extra_columns,
)
json_rows = st.lists(
    well_formed
    | well_formed
    | well_formed
    | st.dictionaries(st.sampled_from(["tokens", "step_s", "run", "mode"]) | st.text(max_size=4), json_values),
    min_size=0,
    max_size=3,
)


@FUZZ
@given(rows=json_rows, duplicate=st.booleans())
def test_json_import_stores_exactly_or_refuses_in_one_line(
    tmp_path: Path, rows: list[dict[str, Any]], duplicate: bool
) -> None:
    archive = _fresh_archive(tmp_path)
    before = _snapshot(archive)
    text = json.dumps(rows)
    if duplicate and rows and rows[0]:
        key = json.dumps(next(iter(rows[0])))
        text = text.replace("{", "{" + key + ": 1, ", 1)  # the same key twice in one object
    path = tmp_path / "rows.json"
    path.write_text(text, encoding="utf-8")
    code, out, err = _import(archive, path)
    if code != 0:
        OUTCOMES["json refused"] += _refused_cleanly(code, out, err, archive, before)
        return
    assert not (duplicate and rows and rows[0]), "a key given twice was accepted"
    samples = Store(archive).get(out.strip())["data"]["samples"]
    assert len(samples) == len(rows)
    for stored, given_row in zip(samples, rows, strict=True):
        assert set(stored) == set(given_row)
        for column, value in given_row.items():
            if column == "tokens":
                assert stored[column] == (int(value) if isinstance(value, (int, float)) else _exact_number(value))
            elif column == "step_s":
                assert stored[column] == float(value)
            elif column == "mode" and value is not None and str(value).strip():
                assert stored[column] == str(value).strip()
            elif column not in ("mode", "wait_ms"):
                assert _stored_extra_matches(stored[column], value), (column, stored[column], value)
    OUTCOMES["json stored"] += 1


FRONT_ALPHABET = st.sampled_from([*list("abt:-[]{}&*!|>'\"#\n .01?,%@`~\t\ufeff"), "title", "evidence", "version"])
FRONT_LINES = st.sampled_from(
    [
        "title: A record",
        "version: 1",
        "date: 2026-12-01",
        "date: 2026-13-45",
        "supersedes: 1",
        "evidence:\n  sweep: sha256:4be1c0ffee12",
        "errata:\n  - date: 2026-12-03\n    text: fixed",
        "errata: [1, 2]",
        "title: [nested, [list]]",
        "? [complex]\n: key",
        "title: &a x",
        "title: !!python/object:os.system x",
        "title: !!binary aGVsbG8=",
    ]
)
front_matter = st.lists(st.one_of(FRONT_LINES, st.lists(FRONT_ALPHABET, max_size=12).map("".join)), max_size=6).map(
    "\n".join
)


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(front=front_matter, kind=st.sampled_from(["page", "record"]))
def test_front_matter_parses_or_refuses_in_one_line(front: str, kind: str) -> None:
    path = Path("/nonexistent/docs/records/x/v1.md")
    try:
        sources.parse_page(path, "records/x/v1.md", kind, f"---\n{front}\n---\nBody.\n")
    except sources.SourceError as exc:
        assert str(exc).startswith(str(path)) and "\n" not in str(exc), str(exc)
        OUTCOMES["front matter refused"] += 1
        return
    OUTCOMES["front matter parsed"] += 1
