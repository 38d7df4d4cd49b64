"""`probebook archive` as a real subprocess: import, add, ls, show, verify, migrate, and every bad input's one line
(the first malformed file of each corpus in a real process, the rest through the same entry point in this one)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import run_cli_here

from measure.evidence.envelope import canonical_bytes, digest
from measure.evidence.store import Store

FIXTURES = Path(__file__).resolve().parent / "fixtures"
GOOD = FIXTURES / "import"
BAD_IMPORT = FIXTURES / "malformed" / "import"
BAD_EVIDENCE = FIXTURES / "malformed" / "evidence"
VALID_IDS = 5  # valid documents in tests/fixtures/archive (plus 2 planted ones readers refuse)


def _snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under root with its bytes and mode: 'nothing touched' means this is unchanged."""
    return {
        str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mode) for p in sorted(root.rglob("*")) if p.is_file()
    }


def _fixture_archive(tmp_path: Path) -> Path:
    root = tmp_path / "archive"
    shutil.copytree(FIXTURES / "archive", root)
    return root


def _assert_one_line_error(result, *fragments: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("probebook: error: "), result.stderr
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def _many(cli, calls: list[tuple[str, ...]]):
    """Run independent CLI calls: the first as its own process (the real exit status and stderr), the rest in this
    process (``conftest.run_cli_here``: the same parser, dispatch and one-line errors), since a process per
    malformed file cost about 0.2 s of CPU each, 5 s for the two corpora, to test the same lines again."""
    return [cli(*calls[0]), *(run_cli_here(*args) for args in calls[1:])]


def test_import_prints_the_id_and_ls_show_verify_see_it(archive, cli):
    out = cli(
        "--archive",
        str(archive),
        "archive",
        "import",
        "--probe",
        "step-scaling",
        str(GOOD / "step-scaling.csv"),
        "--source",
        "lab notebook p. 12",
        "--gpu",
        "H200",
    )
    assert out.returncode == 0, out.stderr
    ident = out.stdout.strip()
    assert ident.startswith("sha256:") and len(ident) == 71
    stored = Store(archive).path_for(ident[7:])
    assert digest(stored.read_bytes()) == ident

    ls = cli("--archive", str(archive), "archive", "ls")
    header, row = ls.stdout.splitlines()
    assert header.split() == ["ID", "PROBE", "CREATED", "GPU", "STATUS", "ORIGIN"]
    assert row.split()[0] == ident[:19] and row.split()[1:2] == ["step-scaling"]
    assert row.split()[3:] == ["H200", "complete", "imported"]

    show = cli("--archive", str(archive), "archive", "show", ident[:19])
    assert show.returncode == 0
    doc = json.loads(show.stdout)
    assert canonical_bytes(doc) == stored.read_bytes()
    assert doc["origin"] == {"kind": "imported", "source": "lab notebook p. 12"}
    assert doc["data"]["samples"][0] == {
        "tokens": 128,
        "step_s": 0.0121,
        "batch": 1,
        "mode": "fixed_batch",
        "wall_ms": 12.3,
    }

    verify = cli("--archive", str(archive), "archive", "verify")
    assert verify.returncode == 0 and verify.stdout.strip() == "ok: 1 evidence file(s) match their names"


@pytest.mark.parametrize(
    "probe, name",
    [
        ("step-scaling", "step-scaling.json"),
        ("step-scaling", "step-scaling-samples.json"),
        ("loss-memory", "loss-memory.csv"),
        ("batch-sweep", "batch-sweep.csv"),
    ],
)
def test_import_each_contract_from_csv_and_json(archive, cli, probe, name):
    out = cli("--archive", str(archive), "archive", "import", "--probe", probe, str(GOOD / name), "--source", "s")
    assert out.returncode == 0, out.stderr
    doc = Store(archive).get(out.stdout.strip())
    assert doc["probe"] == probe and doc["params"]["imported_from"] == name


def test_every_malformed_import_is_one_line_and_touches_nothing(tmp_path, cli):
    root = _fixture_archive(tmp_path)
    before = _snapshot(root)
    files = sorted(BAD_IMPORT.iterdir())
    results = _many(
        cli,
        [
            ("--archive", str(root), "archive", "import", "--probe", f.name.split("--")[0], str(f), "--source", "s")
            for f in files
        ],
    )
    for path, result in zip(files, results, strict=True):
        _assert_one_line_error(result, str(path))
    assert _snapshot(root) == before


def test_every_malformed_evidence_file_is_refused_by_add_and_touches_nothing(tmp_path, cli):
    root = _fixture_archive(tmp_path)
    before = _snapshot(root)
    files = sorted(BAD_EVIDENCE.iterdir())
    results = _many(cli, [("--archive", str(root), "archive", "add", str(f)) for f in files])
    for path, result in zip(files, results, strict=True):
        _assert_one_line_error(result, str(path))
    assert _snapshot(root) == before


@pytest.mark.parametrize(
    "ident, fragments",
    [
        (
            "tests/fixtures/archive/evidence/sha256/c4/8c8e21513e964366da3b98f51d8ebb8dec1c3001d96214cf11d4b87597b709.json",
            ("is a path, not an evidence id", "has id sha256:c48c8e21513e9643"),
        ),
        ("run.json", ("'run.json' is a path, not an evidence id",)),
        ("sha256:not-hex-at-all", ("is not an evidence id",)),
        ("c48c8e2151", ("too short: give at least 12 hex digits",)),
        ("sha256:ffffffffffffffff", ("no evidence 'sha256:ffffffffffffffff'", "`probebook archive ls`")),
    ],
)
def test_show_refuses_paths_non_hex_short_and_unknown_ids(tmp_path, cli, ident, fragments):
    root = _fixture_archive(tmp_path)
    _assert_one_line_error(cli("--archive", str(root), "archive", "show", ident), *fragments)


def test_show_resolves_a_unique_prefix_and_refuses_an_ambiguous_one(tmp_path, cli):
    root = _fixture_archive(tmp_path)
    full = cli("--archive", str(root), "archive", "show", "sha256:c48c8e21513e")
    assert full.returncode == 0 and json.loads(full.stdout)["probe"] == "step-scaling"
    store = Store(root)
    for tail in ("0", "1"):  # two names sharing a 12-hex prefix must be planted: hashing won't make them
        path = store.path_for("c48c8e21513e" + tail * 52)
        path.write_bytes(b"{}")
    _assert_one_line_error(
        cli("--archive", str(root), "archive", "show", "c48c8e21513e"), "ambiguous: it matches 3 ids"
    )


def test_show_of_a_planted_bad_file_is_one_clear_line(tmp_path, cli):
    root = _fixture_archive(tmp_path)
    _assert_one_line_error(
        cli("--archive", str(root), "archive", "show", "sha256:c987425c5d90"),
        "evidence schema 0 is older than 1",
        "probebook archive migrate",
    )
    _assert_one_line_error(cli("--archive", str(root), "archive", "show", "sha256:a0aeb6a40337"), "malformed JSON")


def test_ls_warns_and_skips_unreadable_documents_and_filters_by_probe(tmp_path, cli):
    root = _fixture_archive(tmp_path)
    ls = cli("--archive", str(root), "archive", "ls")
    assert ls.returncode == 0
    assert len(ls.stdout.splitlines()) == 1 + VALID_IDS
    warnings = ls.stderr.splitlines()
    assert len(warnings) == 2 and all(w.startswith("probebook: warning: skipped ") for w in warnings)
    assert "Traceback" not in ls.stderr
    rows = json.loads(cli("--archive", str(root), "archive", "ls", "--json", "--probe", "batch-sweep").stdout)
    assert [(r["probe"], r["status"], r["origin"]) for r in rows] == [
        ("batch-sweep", "complete", "imported"),
        ("batch-sweep", "failed", "measured"),
    ]
    assert set(rows[0]) == {"id", "probe", "created", "gpu", "status", "origin"}
    assert rows[1]["gpu"] == "Fixture GPU 80GB"


def test_read_commands_refuse_a_missing_archive_folder(tmp_path, cli):
    for action in (("ls",), ("verify",), ("show", "c48c8e21513e")):
        _assert_one_line_error(
            cli("--archive", str(tmp_path / "nowhere"), "archive", *action), "no archive folder at", "--archive"
        )


def test_verify_reports_invalid_files_and_fails_only_when_strict(tmp_path, cli):
    root = _fixture_archive(tmp_path)
    plain = cli("--archive", str(root), "archive", "verify")
    assert plain.returncode == 0
    assert sum(line.startswith("INVALID ") for line in plain.stdout.splitlines()) == 2
    strict = cli("--archive", str(root), "archive", "verify", "--strict")
    assert strict.returncode == 1
    assert strict.stderr.strip() == "probebook: 2 of 7 evidence file(s) are not valid current-schema evidence"


def test_verify_names_mismatches_with_expected_and_actual(tmp_path, cli):
    root = _fixture_archive(tmp_path)
    store = Store(root)
    victim = store.path_for("c48c8e21513e964366da3b98f51d8ebb8dec1c3001d96214cf11d4b87597b709")
    raw = bytearray(victim.read_bytes())
    raw[-2] ^= 0x20
    os.chmod(victim, 0o644)
    victim.write_bytes(bytes(raw))
    out = cli("--archive", str(root), "archive", "verify")
    assert out.returncode == 1
    mismatches = [line for line in out.stdout.splitlines() if line.startswith("MISMATCH ")]
    assert mismatches == [
        f"MISMATCH {victim}: expected sha256:c48c8e21513e964366da3b98f51d8ebb8dec1c3001d96214cf11d4b"
        f"87597b709, actual {digest(bytes(raw))}"
    ]
    assert out.stderr.splitlines()[0] == "probebook: 1 of 7 evidence file(s) do not match their names"


def test_migrate_archives_an_upgraded_copy_of_an_old_schema_file(tmp_path, cli):
    root = _fixture_archive(tmp_path)
    old = Store(root).path_for("c987425c5d90b7fda922afcc2a6bc2054134a072cf820cd99715403c5b27dba7")
    before = old.read_bytes()
    out = cli("--archive", str(root), "archive", "migrate", str(old))
    assert out.returncode == 0, out.stderr
    new = out.stdout.strip()
    doc = json.loads(cli("--archive", str(root), "archive", "show", new).stdout)
    assert doc["schema"] == "probebook.evidence/1"
    assert doc["data"]["samples"] == json.loads(before)["samples"]
    assert old.read_bytes() == before  # the old file stays as it was: the archive is write-once
    _assert_one_line_error(
        cli("--archive", str(root), "archive", "migrate", str(BAD_EVIDENCE / "schema-99.json")),
        "schema 99 is newer",
        "upgrade probebook",
    )
    _assert_one_line_error(
        cli("--archive", str(root), "archive", "migrate", str(tmp_path / "absent.json")), "absent.json: cannot read"
    )


def test_add_copies_another_archive_and_loose_files_idempotently(tmp_path, cli):
    src = _fixture_archive(tmp_path)
    (src / "evidence" / "sha256" / "c4" / ".tmp-99-aa").write_bytes(b"half a wri")  # ignored, like every reader
    bad = [p for p in Store(src).iter_paths() if p.parent.name in ("a0", "c9")]
    for path in bad:  # the planted files would (rightly) stop the whole add; take them out of the source
        path.unlink()
    dest = tmp_path / "dest"
    out = cli("--archive", str(dest), "archive", "add", str(src))
    assert out.returncode == 0, out.stderr
    assert sorted(out.stdout.split()) == Store(src).ids() == Store(dest).ids()
    assert out.stderr.strip() == f"probebook: {VALID_IDS} added, 0 already present"
    # a loose copy under any name, and the same archive again: nothing new
    loose = tmp_path / "from-gpu-box" / "run.json"
    loose.parent.mkdir()
    loose.write_bytes(next(Store(src).iter_paths()).read_bytes())
    again = cli("--archive", str(dest), "archive", "add", str(loose.parent), str(src))
    assert again.returncode == 0 and again.stderr.strip() == f"probebook: 0 added, {VALID_IDS + 1} already present"
    assert Store(dest).verify() == [] and Store(dest).temp_files() == []


def test_add_canonicalises_a_loose_pretty_printed_file(tmp_path, cli):
    doc = json.loads(
        Store(FIXTURES / "archive")
        .path_for("c48c8e21513e964366da3b98f51d8ebb8dec1c3001d96214cf11d4b87597b709")
        .read_bytes()
    )
    loose = tmp_path / "pretty.json"
    loose.write_text(json.dumps(doc, indent=2))
    out = cli("--archive", str(tmp_path / "a"), "archive", "add", str(loose))
    assert out.returncode == 0
    assert out.stdout.strip() == digest(canonical_bytes(doc))


def test_add_refuses_a_tampered_named_file_and_adds_nothing_else(tmp_path, cli):
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "archive", src)
    store = Store(src)
    good = store.path_for("c48c8e21513e964366da3b98f51d8ebb8dec1c3001d96214cf11d4b87597b709")
    victim = store.path_for("b57b52c3a2e1006df11a440c62412d7fed60e391a312379a999f107f27411074")
    os.chmod(victim, 0o644)
    tampered = victim.read_bytes().replace(b'"windows":5', b'"windows":4')
    assert tampered != victim.read_bytes()
    victim.write_bytes(tampered)
    dest = tmp_path / "dest"
    dest.mkdir()
    out = cli("--archive", str(dest), "archive", "add", str(good), str(victim))
    _assert_one_line_error(
        out,
        str(victim),
        "bytes do not match the file's name",
        "expected sha256:b57b52c3a2e1006df11a440c62412d7fed60e391a312379a999f107f27411074",
        f"actual {digest(tampered)}",
    )
    assert _snapshot(dest) == {}  # the good file given first was not half-added


def test_add_refuses_a_missing_path_and_an_empty_folder(tmp_path, cli):
    _assert_one_line_error(
        cli("--archive", str(tmp_path / "a"), "archive", "add", str(tmp_path / "nope")), "no such file or folder"
    )
    (tmp_path / "empty").mkdir()
    _assert_one_line_error(
        cli("--archive", str(tmp_path / "a"), "archive", "add", str(tmp_path / "empty")), "no evidence files"
    )


def test_add_refuses_text_that_cannot_be_stored_as_utf8(tmp_path, cli):
    doc = json.loads(
        Store(FIXTURES / "archive")
        .path_for("c48c8e21513e964366da3b98f51d8ebb8dec1c3001d96214cf11d4b87597b709")
        .read_bytes()
    )
    loose = tmp_path / "surrogate.json"
    loose.write_text(json.dumps({**doc, "notes": "SURROGATE"}).replace('"SURROGATE"', '"\\ud800"'))
    _assert_one_line_error(
        cli("--archive", str(tmp_path / "a"), "archive", "add", str(loose)),
        "holds a lone surrogate escape, which has no UTF-8 form",
    )
    assert not (tmp_path / "a").exists()


def test_verify_refuses_archived_text_that_has_no_utf8_form(tmp_path, cli):
    """A lone surrogate escape in a file named by its own hash: verify names it invalid (the build used to
    read it and then fail writing the page with a traceback)."""
    doc = json.loads(
        Store(FIXTURES / "archive")
        .path_for("c48c8e21513e964366da3b98f51d8ebb8dec1c3001d96214cf11d4b87597b709")
        .read_bytes()
    )
    raw = json.dumps({**doc, "notes": "SURROGATE"}, sort_keys=True).replace('"SURROGATE"', '"\\ud800"').encode()
    root = tmp_path / "a"
    hexdigest = hashlib.sha256(raw).hexdigest()
    shard = root / "evidence" / "sha256" / hexdigest[:2]
    shard.mkdir(parents=True)
    (shard / f"{hexdigest[2:]}.json").write_bytes(raw)
    out = cli("--archive", str(root), "archive", "verify", "--strict")
    assert out.returncode == 1
    assert "lone surrogate escape" in out.stdout and "Traceback" not in out.stderr
