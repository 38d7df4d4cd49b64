"""The write-once store on real temporary archives: layout, no-overwrite, id resolution, verify, temp files;
and that bench/archive.py runs end to end on a small archive."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import HANG_S

from measure.errors import EvidenceError, StoreError
from measure.evidence.envelope import Evidence, canonical_bytes, digest
from measure.evidence.files import TEMP_PREFIX
from measure.evidence.store import Store, claimed_id, normalize_id, stored_id

FIXTURE_ARCHIVE = Path(__file__).resolve().parent / "fixtures" / "archive"


def _ev(i: int = 0) -> Evidence:
    return Evidence(
        probe="step-scaling",
        probe_version=1,
        params={"seed": i},
        data={"samples": [{"tokens": 128, "step_s": 0.25}]},
        created_at="2026-11-29T08:00:00Z",
    )


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _plant(store: Store, name_hex: str, raw: bytes) -> Path:
    """Write a file under a final name directly, as a copy from elsewhere would arrive."""
    path = store.path_for(name_hex)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(raw)
    return path


def test_put_writes_canonical_bytes_under_their_digest(archive):
    store = Store(archive)
    ev = _ev()
    ident = store.put(ev)
    raw = ev.to_bytes()
    assert ident == digest(raw)
    hexd = ident[7:]
    path = archive / "evidence" / "sha256" / hexd[:2] / f"{hexd[2:]}.json"
    assert path.read_bytes() == raw
    assert stat.S_IMODE(path.stat().st_mode) & 0o222 == 0  # written read-only
    assert store.ids() == [ident]
    assert store.get(ident[:19]) == json.loads(raw)
    assert store.temp_files() == []


def test_identical_bytes_again_are_a_no_op(archive):
    store = Store(archive)
    first = store.put(_ev())
    path = store.path_for(first[7:])
    before = path.stat()
    assert store.put(_ev()) == first
    assert store.put_bytes(_ev().to_bytes()) == first
    after = path.stat()
    assert (before.st_ino, before.st_mtime_ns) == (after.st_ino, after.st_mtime_ns)
    assert len(store.ids()) == 1


def test_put_bytes_refuses_invalid_or_non_canonical_bytes_and_writes_nothing(archive):
    store = Store(archive)
    doc = _ev().to_dict()
    with pytest.raises(StoreError, match="not in canonical form"):
        store.put_bytes(json.dumps(doc, indent=2).encode())
    with pytest.raises(EvidenceError, match="missing field 'status'"):
        store.put_bytes(canonical_bytes({k: v for k, v in doc.items() if k != "status"}))
    with pytest.raises(EvidenceError, match="malformed JSON"):
        store.put_bytes(b"{not json")
    assert _snapshot(archive) == {}


def test_a_tampered_file_is_never_overwritten_or_silently_accepted(archive):
    store = Store(archive)
    ident = store.put(_ev())
    path = store.path_for(ident[7:])
    os.chmod(path, 0o644)
    tampered = path.read_bytes().replace(b"0.25", b"0.35")
    path.write_bytes(tampered)
    with pytest.raises(StoreError) as info:
        store.put(_ev())
    assert f"expected {ident}" in str(info.value)
    assert f"actual {digest(tampered)}" in str(info.value)
    assert path.read_bytes() == tampered  # evidence of the tampering is kept, not repaired in place


def test_write_failure_is_one_clear_store_error(archive):
    (archive / "evidence").mkdir()
    (archive / "evidence" / "sha256").write_text("a file where the store's folder should be")
    with pytest.raises(StoreError, match="cannot write evidence into"):
        Store(archive).put(_ev())


@pytest.mark.parametrize(
    "text, expected",
    [
        ("sha256:" + "ab" * 32, "ab" * 32),
        ("SHA256:" + "AB" * 6, "ab" * 6),
        ("  " + "0123456789abcdef" + " ", "0123456789abcdef"),
    ],
)
def test_normalize_id_accepts_ids_and_prefixes(text, expected):
    assert normalize_id(text) == expected


@pytest.mark.parametrize(
    "text, fragment",
    [
        (
            "archive/evidence/sha256/ab/" + "c" * 62 + ".json",
            "is a path, not an evidence id (an archived file with that name has id sha256:ab" + "c" * 62 + ")",
        ),
        ("run.json", "is a path, not an evidence id;"),
        ("sha256:xyz123456789abc", "is not an evidence id"),
        ("", "is not an evidence id"),
        ("sha256:", "is not an evidence id"),
        ("0123456789a", "too short: give at least 12 hex digits"),
        ("a" * 65, "longer than a SHA-256 digest"),
    ],
)
def test_normalize_id_refuses_paths_non_hex_and_bad_lengths(text, fragment):
    with pytest.raises(StoreError) as info:
        normalize_id(text)
    assert fragment in str(info.value)


def test_resolve_by_unique_prefix_and_refuse_ambiguous_or_unknown(archive):
    store = Store(archive)
    ident = store.put(_ev())
    assert store.resolve(ident) == ident
    assert store.resolve(ident[7:19]) == ident
    # two names sharing 13 hex digits cannot be produced by hashing on demand: plant them
    _plant(store, "0123456789abc" + "0" * 51, b"x")
    _plant(store, "0123456789abc" + "1" * 51, b"y")
    with pytest.raises(StoreError, match="ambiguous: it matches 2 ids; give more digits"):
        store.resolve("0123456789abc")
    assert store.resolve("0123456789abc1") == "sha256:0123456789abc" + "1" * 51
    with pytest.raises(StoreError, match="no evidence 'fedcba987654'"):
        store.resolve("fedcba987654")


def test_readers_ignore_temp_files_and_stray_names(archive):
    store = Store(archive)
    ident = store.put(_ev())
    folder = store.path_for(ident[7:]).parent
    (folder / f"{TEMP_PREFIX}123-abcdef").write_bytes(b'{"half": ')
    (folder / "notes.txt").write_text("stray")
    (store.base / "zz").mkdir()
    (store.base / "zz" / ("0" * 62 + ".json")).write_text("not in a hex shard")
    assert store.ids() == [ident]
    assert [p.name for p in store.temp_files()] == [f"{TEMP_PREFIX}123-abcdef"]
    assert store.verify() == [] and store.invalid() == []
    assert [p.name for p in store.clean()] == [f"{TEMP_PREFIX}123-abcdef"]
    assert store.temp_files() == []
    assert (folder / "notes.txt").exists()  # clean only touches temp files


def test_verify_names_each_mismatch_with_expected_and_actual(archive):
    store = Store(archive)
    ids = [store.put(_ev(i)) for i in range(5)]
    victim = store.path_for(ids[2][7:])
    os.chmod(victim, 0o644)
    raw = bytearray(victim.read_bytes())
    raw[10] ^= 0x01
    victim.write_bytes(bytes(raw))
    bad = store.verify()
    assert [(m.path, m.expected, m.actual) for m in bad] == [
        (victim, ids[2], "sha256:" + hashlib.sha256(bytes(raw)).hexdigest())
    ]


def test_a_folder_under_a_final_name_is_a_stray_not_evidence(archive):
    store = Store(archive)
    folder = store.path_for("ab" + "0" * 62)
    folder.mkdir(parents=True)  # a folder under a final name is neither hashed nor read
    assert store.verify() == [] and store.ids() == []
    assert [(s.path, s.why) for s in store.strays()] == [(folder, "a folder, not a regular file")]


def test_invalid_lists_the_planted_files_of_the_fixture_archive(tmp_path):
    root = tmp_path / "archive"
    shutil.copytree(FIXTURE_ARCHIVE, root)
    store = Store(root)
    assert store.verify() == []
    invalid = store.invalid()
    assert len(invalid) == 2
    messages = sorted(i.message for i in invalid)
    assert any("schema 0 is older than 1; run `probebook archive migrate" in m for m in messages)
    assert any("malformed JSON" in m for m in messages)
    for item in invalid:
        assert item.message.startswith(str(item.path))
    assert store.invalid(skip={i.path for i in invalid}) == []


def test_a_writer_survives_clean_removing_its_temp_files(archive):
    """`verify --clean` racing a writer: the writer rewrites a vanished temp file; nothing is lost."""
    store = Store(archive)
    stop = threading.Event()

    def cleaner():
        while not stop.is_set():
            store.clean()

    thread = threading.Thread(target=cleaner)
    thread.start()
    try:
        ids = [store.put(_ev(i)) for i in range(150)]
    finally:
        stop.set()
        thread.join()
    assert sorted(ids) == store.ids()
    assert store.verify() == [] and store.invalid() == []


def test_archive_benchmark_runs_on_a_small_archive(tmp_path):
    keep = tmp_path / "bench-archive"
    out = subprocess.run(
        [
            sys.executable,
            str(Path(__file__).resolve().parent.parent / "bench" / "archive.py"),
            "--n",
            "40",
            "--repeat",
            "1",
            "--keep",
            str(keep),
        ],
        capture_output=True,
        text=True,
        timeout=HANG_S,
    )
    assert out.returncode == 0, out.stderr
    table = out.stdout.splitlines()
    assert [line.split("  ")[0] for line in table[2:8]] == [
        "import (Store.put, fsync per file)",
        "verify, baseline loop (before)",
        "Store.verify() (shipped)",
        "sha256sum (coreutils, batched)",
        "verify() + invalid() (before)",
        "archive_check.check() (one pass)",
    ]
    assert table[8].startswith("verify time / sha256sum time: baseline ")
    assert table[-1].startswith("probebook archive verify / sha256sum: ")
    assert len(Store(keep).ids()) == 40 and Store(keep).verify() == []


def test_the_names_that_claim_an_id():
    """The archive's file-name rules live in the store: layout names, loose names with or without a prefix."""
    hexdigest = "ab" + "c" * 62
    assert claimed_id(Path("x/ab") / ("c" * 62 + ".json")) == f"sha256:{hexdigest}"
    assert claimed_id(Path(f"{hexdigest}.json")) == f"sha256:{hexdigest}"
    assert claimed_id(Path(f"sha256_{hexdigest}.JSON")) == f"sha256:{hexdigest}"
    assert claimed_id(Path("x/abc") / ("c" * 62 + ".json")) is None  # a shard folder is two hex digits
    assert claimed_id(Path("x/zz") / ("c" * 62 + ".json")) is None
    assert claimed_id(Path("notes.json")) is None
    assert stored_id("ab", "c" * 62 + ".json") == f"sha256:{hexdigest}"
