"""`archive verify`'s one pass (measure.evidence.archive_check) and the archive's fast reader (parse_archived) on
real temporary archives: the same documents and the same refusals as the strict reader (duplicate keys, integers past
64 bits, deep nesting, non-finite numbers, bad times; and on any document hypothesis makes), one process or two alike,
strays and temp files as the store names them, nothing read through a linked folder, and the command's report."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from measure.errors import EvidenceError
from measure.evidence import archive_check
from measure.evidence.envelope import (
    Evidence,
    _check_times,
    _flat_good_rows,
    canonical_bytes,
    digest,
    parse,
)
from measure.evidence.files import TEMP_PREFIX
from measure.evidence.reading import parse_archived
from measure.evidence.store import Store

REPO = Path(__file__).resolve().parent.parent
FIXTURE_ARCHIVE = REPO / "tests" / "fixtures" / "site" / "archive"
BIG = 123456789012345678901234567890  # beyond 64 bits: orjson alone would read it as a double


def _doc(**params: object) -> dict:
    ev = Evidence(
        probe="step-scaling",
        probe_version=1,
        params=dict(params),
        data={"samples": [{"tokens": 128, "step_s": 4.6e-05, "window": 0}, {"tokens": 256, "step_s": 0.25}]},
        created_at="2026-11-29T08:00:00Z",
        notes="x",
    )
    return json.loads(ev.to_bytes())


def _both(raw: bytes) -> tuple[object, object]:
    """What the strict reader and the fast one make of ``raw``: the document, or the refusal's text."""
    out = []
    for read in (parse, parse_archived):
        try:
            out.append(read(raw, "f.json"))
        except EvidenceError as exc:
            out.append(str(exc))
    return out[0], out[1]


def test_the_fast_reader_reads_every_archived_document_as_the_strict_one() -> None:
    """The fixture archive and the repository's own (real measurements of every probe, read only)."""
    paths = list(Store(FIXTURE_ARCHIVE).iter_paths()) + list(Store(REPO / "archive").iter_paths())
    assert len(paths) > 100
    for path in paths:
        raw = path.read_bytes()
        strict, fast = _both(raw)
        assert fast == strict and isinstance(fast, dict), path


@pytest.mark.parametrize(
    "name,edit,refusal",
    [
        ("duplicate key", lambda r: r.replace(b'"notes":"x"', b'"notes":"a","notes":"x"'), "key 'notes' appears twice"),
        ("duplicate key inside a row", lambda r: r.replace(b'{"step_s":0.25', b'{"step_s":1,"step_s":0.25'), "twice"),
        ("NaN", lambda r: r.replace(b'"notes":"x"', b'"notes":NaN'), "NaN is not valid JSON"),
        ("overflowing number", lambda r: r.replace(b'"notes":"x"', b'"notes":1e400'), "out of range"),
        (
            "deep nesting",
            lambda r: r.replace(b'"notes":"x"', b'"notes":' + b"[" * 40 + b"]" * 40),
            "nested more than 32",
        ),
        ("negative time", lambda r: r.replace(b'"step_s":0.25', b'"step_s":-0.25'), "must be a positive time"),
        ("nested row value", lambda r: r.replace(b'"window":0', b'"window":[0]'), "samples are flat objects"),
        ("true as a time", lambda r: r.replace(b'"step_s":0.25', b'"step_s":true'), "is not a number"),
    ],
)
def test_the_fast_reader_refuses_what_the_strict_one_refuses_in_its_words(name, edit, refusal) -> None:
    raw = edit(canonical_bytes(_doc(seed=1)))
    assert raw != canonical_bytes(_doc(seed=1)), name  # the edit applied
    strict, fast = _both(raw)
    assert isinstance(strict, str) and refusal in strict
    assert fast == strict


_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)  # some past 64 bits
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet='ab[]{}"\\\u00e9', max_size=4)  # brackets in text inflate the bracket count
)
_VALUES = st.recursive(
    _SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
)


# what a sample row may hold: the edge cases of a time (zero, negative zero, tiny, true, text, empty containers)
# drawn as often as any value at all
_ROW_VALUES = st.sampled_from([0, 0.0, -0.0, -1, 1, 2.5, 5e-324, None, True, False, "1", [], {}]) | _SCALARS | _VALUES
_ROWS = st.lists(st.dictionaries(st.sampled_from(["step_s", "t_ms", "n", "x_us"]), _ROW_VALUES, max_size=4), max_size=5)


def _nested(value: object, levels: int) -> object:
    for _ in range(levels):
        value = [value]
    return value


@settings(max_examples=150, deadline=None)
@given(
    rows=st.none() | _ROWS,
    params=st.dictionaries(st.text(max_size=3), _VALUES, max_size=3),
    levels=st.integers(min_value=0, max_value=40),
)
def test_the_fast_reader_agrees_with_the_strict_one_on_any_document(rows, params, levels) -> None:
    """Rows of any values (nested, null, negative or non-numeric times) or none at all, any params nested up to
    40 deep around the 32-level limit, brackets in text: the same document or the same refusal, word for word."""
    doc = _doc()
    if rows is None:
        del doc["data"]["samples"]
    else:
        doc["data"]["samples"] = rows
    doc["params"] = {"deep": _nested(params, levels)}
    strict, fast = _both(canonical_bytes(doc))
    assert fast == strict


@settings(max_examples=200, deadline=None)
@given(rows=_ROWS)
def test_the_fast_row_check_accepts_exactly_what_the_row_by_row_one_accepts(rows) -> None:
    """``_flat_good_rows`` (every loop in C) against ``_check_times`` (row by row, naming the problem) on rows a
    JSON parser makes: True exactly where the row-by-row check raises nothing."""
    rows = json.loads(json.dumps(rows))
    try:
        _check_times("f.json", rows)
        accepted = True
    except EvidenceError:
        accepted = False
    assert _flat_good_rows(rows) == accepted


def test_integers_past_64_bits_stay_exact() -> None:
    raw = canonical_bytes(_doc(run_id=BIG, small=-(2**63), seed=9007199254740993))
    strict, fast = _both(raw)
    assert fast == strict
    assert isinstance(fast, dict) and fast["params"]["run_id"] == BIG and fast["params"]["seed"] == 9007199254740993


def _archive(root: Path) -> tuple[Store, dict[str, str]]:
    """A copy of the fixture archive plus a mismatch, a duplicate-key file, a big integer, a link, a FIFO, a stray
    name and a temp file of a write."""
    shutil.copytree(FIXTURE_ARCHIVE, root)
    store = Store(root)
    planted = {}
    good = canonical_bytes(_doc(run_id=BIG))
    planted["big"] = store.put_bytes(good)
    dup = canonical_bytes(_doc(seed=2)).replace(b'"notes":"x"', b'"notes":"a","notes":"x"')
    for label, raw, name in (("dup", dup, digest(dup)), ("tampered", good + b" ", digest(good + b"!"))):
        path = store.path_for(name[7:])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(raw)
        planted[label] = name
    store.path_for("ab" * 32).parent.mkdir(parents=True, exist_ok=True)
    store.path_for("ab" * 32).symlink_to("/dev/zero")
    os.mkfifo(store.path_for("ab" + "d" * 62))
    (store.path_for("ab" * 32).parent / "notes.txt").write_text("stray\n")
    (store.path_for("ab" * 32).parent / f"{TEMP_PREFIX}1-ab").write_bytes(b'{"half')
    return store, planted


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_one_pass_finds_mismatches_and_invalid_files(tmp_path: Path, workers: int) -> None:
    store, planted = _archive(tmp_path / "archive")
    found = archive_check.check(store, workers=workers)
    assert found.processes == workers  # two: this process and one forked copy, sharing the folders
    assert found.count == len(store.ids())  # the link and the FIFO are not counted (strays names them)
    assert found.strays == store.strays() and len(found.strays) == 3
    assert found.temps == store.temp_files() and [p.name for p in found.temps] == [f"{TEMP_PREFIX}1-ab"]
    assert [m.expected for m in found.mismatches] == [planted["tampered"]]
    assert found.mismatches == store.verify()
    assert [str(i.path) for i in found.invalid] == [str(store.path_for(planted["dup"][7:]))]
    assert "key 'notes' appears twice" in found.invalid[0].message
    assert [i.message for i in found.invalid] == [
        i.message for i in store.invalid(skip={m.path for m in store.verify()})
    ]


def test_archive_verify_reports_them(tmp_path: Path, cli) -> None:
    store, planted = _archive(tmp_path / "archive")
    out = cli("--archive", str(store.root), "archive", "verify", "--strict")
    assert out.returncode == 1
    lines = out.stdout.splitlines()
    assert [ln.split(":")[0] for ln in lines if ln.startswith("MISMATCH")] == [
        f"MISMATCH {store.path_for(planted['tampered'][7:])}"
    ]
    assert any(ln.startswith("INVALID") and "appears twice" in ln for ln in lines)
    assert any(ln.startswith("STRAY") and "symbolic link" in ln for ln in lines)
    shutil.rmtree(tmp_path / "archive")
    clean, _ = Store(tmp_path / "clean"), shutil.copytree(FIXTURE_ARCHIVE, tmp_path / "clean")
    out = cli("--archive", str(clean.root), "archive", "verify", "--strict")
    assert out.returncode == 0 and out.stdout.strip() == f"ok: {len(clean.ids())} evidence file(s) match their names"


def test_a_linked_shard_folder_is_named_and_nothing_in_it_is_read_or_removed(tmp_path: Path, cli) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / f"{TEMP_PREFIX}1-aa").write_bytes(b"not the archive's to remove")
    (outside / f"{'a' * 62}.json").write_bytes(b"{}")
    root = tmp_path / "archive"
    shutil.copytree(FIXTURE_ARCHIVE, root)
    store = Store(root)
    (store.base / "fe").symlink_to(outside)
    found = archive_check.check(store)
    assert found.count == len(store.ids()) and found.mismatches == [] and found.temps == []
    linked = "a symbolic link; shard folders must be real folders"
    assert [(s.path.name, s.why) for s in found.strays] == [("fe", linked)]
    out = cli("--archive", str(root), "archive", "verify", "--clean")
    assert out.returncode == 1 and "temp file" not in out.stdout
    assert out.stdout.splitlines() == [f"STRAY {store.base / 'fe'}: {linked}"]
    assert sorted(p.name for p in outside.iterdir()) == [f"{TEMP_PREFIX}1-aa", f"{'a' * 62}.json"]
