"""The evidence envelope: canonical bytes, ids, validation of every malformed fixture, migrations, fingerprints;
and that tests/fixtures regenerates byte for byte from make_fixtures.py."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import HANG_S

from measure.errors import EvidenceError
from measure.evidence.envelope import (
    SCHEMA,
    Evidence,
    canonical_bytes,
    digest,
    is_time_field,
    loads,
    migrate,
    parse,
    schema_version,
    validate,
)
from measure.machine import code_fingerprint, fingerprint

FIXTURES = Path(__file__).resolve().parent / "fixtures"
MALFORMED = FIXTURES / "malformed" / "evidence"

# Every file in the malformed-evidence corpus, and a fragment its one-line error must contain.
EXPECTED = {
    "empty.json": "file is empty",
    "whitespace.json": "file is empty",
    "truncated.json": "malformed JSON at line 1 column",
    "not-json.json": "malformed JSON at line 1 column 1",
    "not-utf8.json": "not UTF-8 text",
    "not-object.json": "must be a JSON object",
    "nan-time.json": "NaN is not valid JSON",
    "infinity-time.json": "Infinity is not valid JSON",
    "overflow-time.json": "number 1e400 is out of range",
    "negative-time.json": "data.samples[1].step_s must be a positive time, got -0.006",
    "zero-time.json": "data.samples[1].step_s must be a positive time, got 0",
    "text-time.json": "data.samples[1].step_s is not a number: '0.006'",
    "bool-time.json": "data.samples[1].step_s is not a number: True",
    "nested-sample.json": "data.samples[1].per_layer_ms must be a number, text, true/false or null",
    "positional-samples.json": "data.samples[0] must be an object (positional arrays are not accepted)",
    "samples-not-list.json": "field 'data.samples' must be a list of objects",
    "schema-0.json": "run `probebook archive migrate",
    "schema-99.json": "evidence schema 99 is newer than this probebook reads (1); upgrade probebook",
    "schema-leading-zero.json": "must end in an integer version",
    "schema-missing.json": "field 'schema' must be 'probebook.evidence/1', got None",
    "schema-other.json": "field 'schema' must be 'probebook.evidence/1', got 'someone.else/1'",
    "missing-status.json": "missing field 'status'",
    "extra-field.json": "unknown field 'result'",
    "params-not-object.json": "field 'params' must be an object, got an array",
    "probe-version-zero.json": "field 'probe_version' must be >= 1",
    "probe-version-text.json": "field 'probe_version' must be an integer, got text",
    "bad-probe-name.json": "field 'probe' must be a lower-case name",
    "probe-trailing-newline.json": "field 'probe' must be a lower-case name",
    "created-not-utc.json": "field 'created_at' must be UTC ISO-8601",
    "created-trailing-newline.json": "field 'created_at' must be UTC ISO-8601",
    "bad-status.json": "field 'status' must be one of complete, unstable, partial, failed, got 'done'",
    "failed-without-error.json": "a failed run needs a text field 'error'",
    "imported-without-source.json": "imported evidence needs 'origin.source'",
    "imported-blank-source.json": "field 'origin.source' must be non-blank text",
    "bad-origin.json": "field 'origin.kind' must be one of measured, imported",
}


def _evidence(**overrides) -> Evidence:
    fields = {
        "probe": "step-scaling",
        "probe_version": 1,
        "params": {"preset": "tiny"},
        "data": {"samples": [{"tokens": 128, "step_s": 0.5}, {"tokens": 256, "step_s": None}]},
        "created_at": "2026-11-29T08:00:00Z",
    }
    fields.update(overrides)
    return Evidence(**fields)


def test_canonical_bytes_are_sorted_compact_utf8():
    doc = {"b": 1, "a": {"d": [1, 2.5, None], "c": "µs"}}
    assert canonical_bytes(doc) == b'{"a":{"c":"\xc2\xb5s","d":[1,2.5,null]},"b":1}'


def test_canonical_bytes_refuse_non_finite_numbers():
    for bad in (float("nan"), float("inf"), float("-inf")):
        with pytest.raises(EvidenceError, match="write a missing value as null"):
            canonical_bytes({"x": bad})


def test_canonical_bytes_refuse_lone_surrogates():
    doc = json.loads('{"notes": "\\ud800"}')
    with pytest.raises(EvidenceError, match="not valid Unicode"):
        canonical_bytes(doc)


def test_digest_is_sha256_of_the_bytes():
    # the SHA-256 of no bytes, from FIPS 180-4's worked examples (also `sha256sum < /dev/null`)
    assert digest(b"") == "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert digest(b"abc") == "sha256:" + hashlib.sha256(b"abc").hexdigest()


def test_evidence_round_trips_through_bytes_and_its_id_names_them():
    ev = _evidence(notes="n", origin={"kind": "imported", "source": "lab notebook"})
    raw = ev.to_bytes()
    assert raw == canonical_bytes(ev.to_dict())
    assert ev.id == digest(raw)
    again = Evidence.from_dict(parse(raw, "x.json"))
    assert again == ev
    assert again.to_bytes() == raw


def test_envelope_holds_schema_and_omits_absent_optional_fields():
    doc = _evidence().to_dict()
    assert doc["schema"] == SCHEMA == "probebook.evidence/1"
    assert "error" not in doc and "notes" not in doc
    assert doc["origin"] == {"kind": "measured"}
    assert doc["status"] == "complete"


def test_to_bytes_validates_before_writing_anything():
    with pytest.raises(EvidenceError, match="failed run needs a text field 'error'"):
        _evidence(status="failed").to_bytes()
    with pytest.raises(EvidenceError, match=r"data.samples\[0\].step_s must be a positive time, got -1"):
        _evidence(data={"samples": [{"step_s": -1}]}).to_bytes()


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_parse_refuses_each_malformed_file_with_one_line_naming_it(name):
    path = MALFORMED / name
    with pytest.raises(EvidenceError) as info:
        parse(path.read_bytes(), str(path))
    message = str(info.value)
    assert message.startswith(f"{path}: "), message
    assert EXPECTED[name] in message
    assert "\n" not in message  # one line: reprs escape any newline in the offending value


def test_corpus_and_expectations_cover_each_other():
    assert {p.name for p in MALFORMED.iterdir()} == set(EXPECTED)


def test_fixture_archive_documents_parse_except_the_two_planted_ones():
    paths = sorted((FIXTURES / "archive" / "evidence" / "sha256").glob("*/*.json"))
    good, bad = [], []
    for path in paths:
        try:
            good.append(parse(path.read_bytes(), str(path)))
        except EvidenceError as exc:
            bad.append(str(exc))
    assert len(good) == 5 and len(bad) == 2
    assert sorted(d["probe"] for d in good) == [
        "batch-sweep",
        "batch-sweep",
        "loss-memory",
        "step-scaling",
        "step-scaling",
    ]
    assert any("schema 0 is older than 1" in m for m in bad)
    assert any("malformed JSON" in m for m in bad)


def test_times_may_be_null_or_positive_and_other_fields_are_free():
    validate(
        _evidence(
            data={"samples": [{"step_s": None, "wall_ms": 3, "t_us": 0.5, "tokens": -1, "label": "x", "ok": True}]}
        ).to_dict(),
        "doc",
    )


def test_is_time_field():
    assert [
        is_time_field(n) for n in ("step_s", "wall_ms", "t_us", "s", "ms", "tokens", "tok_s", "bytes", "steps")
    ] == [True, True, True, True, True, False, True, False, False]


def test_strict_loads_refuse_non_finite_and_deep_nesting():
    assert loads('{"a": 1.5, "b": [1, null]}') == {"a": 1.5, "b": [1, None]}
    for text in ('{"a": NaN}', '{"a": -Infinity}', '{"a": 1e400}', "[" * 100_000 + "]" * 100_000):
        with pytest.raises(ValueError):
            loads(text)


def test_schema_version_reads_integer_versions_only():
    assert schema_version({"schema": "probebook.evidence/1"}, "d") == 1
    assert schema_version({"schema": "probebook.evidence/0"}, "d") == 0
    assert schema_version({"schema": "probebook.evidence/12"}, "d") == 12
    for bad in ("probebook.evidence/", "probebook.evidence/1.0", "probebook.evidence/٣", "probebook.evidence/-1"):
        with pytest.raises(EvidenceError, match="d: field 'schema'"):
            schema_version({"schema": bad}, "d")


def test_migrate_upgrades_schema_0_into_a_valid_current_document():
    path = MALFORMED / "schema-0.json"
    old = json.loads(path.read_bytes())
    doc = migrate(path.read_bytes(), str(path))
    assert doc["schema"] == SCHEMA
    assert doc["data"]["samples"] == old["samples"]
    assert "samples" not in doc
    assert doc["origin"] == {"kind": "measured"} and doc["status"] == "complete" and doc["probe_version"] == 1
    assert doc["code"] == {} and doc["params"] == old["params"] and doc["machine"] == old["machine"]
    validate(doc, "migrated")


def test_migrate_passes_current_documents_through_and_refuses_the_rest():
    raw = _evidence().to_bytes()
    assert migrate(raw, "cur.json") == json.loads(raw)
    with pytest.raises(EvidenceError, match="schema 99 is newer"):
        migrate((MALFORMED / "schema-99.json").read_bytes(), "n.json")
    with pytest.raises(EvidenceError, match="^" + re.escape("t.json: cannot migrate: malformed JSON at line 1")):
        migrate((MALFORMED / "truncated.json").read_bytes(), "t.json")
    with pytest.raises(EvidenceError, match="^" + re.escape("e.json: cannot migrate: file is empty")):
        migrate(b"", "e.json")
    with pytest.raises(EvidenceError, match="^" + re.escape("d.json: schema 0 field 'data' must be an object")):
        migrate(b'{"schema": "probebook.evidence/0", "probe": "x", "data": [1]}', "d.json")
    with pytest.raises(EvidenceError, match="^" + re.escape("v.json: field 'schema' must end in an integer version")):
        migrate(b'{"schema": "probebook.evidence/-1"}', "v.json")


@pytest.mark.skipif(
    importlib.util.find_spec("torch") is not None and __import__("torch").cuda.is_available(),
    reason="this machine has a GPU",
)
def test_machine_fingerprint_says_cpu_only_instead_of_failing():
    fp = fingerprint()
    assert fp["gpu"] is None and fp["gpu_count"] == 0
    assert fp["note"] in ("torch not installed", "CPU only: no CUDA device visible")
    assert isinstance(fp["cpu_cores"], int) and fp["cpu_cores"] >= 1
    canonical_bytes(fp)  # it can go into an envelope as it is


def test_code_fingerprint_hashes_the_probe_source(tmp_path):
    src = tmp_path / "probe.py"
    src.write_bytes(b"print('probe')\n")
    code = code_fingerprint(str(src))
    assert code["probe_source_sha256"] == hashlib.sha256(b"print('probe')\n").hexdigest()
    assert set(code) == {"probebook", "git_commit", "dirty", "measure_source_sha256", "probe_source_sha256"}


def test_fixtures_regenerate_byte_for_byte(tmp_path):
    out = subprocess.run(
        [sys.executable, str(FIXTURES / "make_fixtures.py"), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=HANG_S,
    )
    assert out.returncode == 0, out.stderr

    def tree(root: Path) -> dict[str, bytes]:
        return {
            str(p.relative_to(root)): p.read_bytes()
            for sub in ("archive", "import", "malformed")
            for p in sorted((root / sub).rglob("*"))
            if p.is_file()
        }

    made, committed = tree(tmp_path), tree(FIXTURES)
    assert len(made) > 70
    assert made == committed


# -- reading older probe versions: observations out of params, the bytes untouched --------------------------


def test_older_kernels_evidence_reads_with_its_observations_in_data():
    from measure.evidence.reading import for_reading

    old = {
        "probe": "kernels",
        "probe_version": 2,
        "params": {"batch": 4, "sdpa_backend": "flash", "compile_engaged": True, "observed_dtype": "bfloat16"},
        "data": {"samples": [{"kernel": "k", "device_time_s": 1.0}]},
    }
    before = json.dumps(old, sort_keys=True)
    read = for_reading(old)
    assert read["params"] == {"batch": 4}
    assert read["data"]["observed"] == {"sdpa_backend": "flash", "compile_engaged": True, "dtype": "bfloat16"}
    assert read["data"]["samples"] == old["data"]["samples"]
    assert json.dumps(old, sort_keys=True) == before  # the loaded document itself is not changed


def test_ddp_evidence_before_version_3_reads_with_named_comm_buckets():
    from measure.evidence.reading import for_reading

    path = FIXTURES / "ddp" / "archive" / "evidence" / "sha256" / "70"
    raw = (path / "258d760133552942bdf9c14bbc2e463a9beb7b9b3651767684de2530561c1a.json").read_bytes()
    old = json.loads(raw)
    assert old["probe_version"] == 1
    read = for_reading(old)
    assert read["data"]["comm_buckets"][0] == [
        {"ready_s": 0.03573611600040749, "done_s": 0.05626565500006109, "bytes": 1444352}
    ]  # the fixture's first step: [ready, done, bytes] as stored
    assert len(read["data"]["comm_buckets"]) == 3
    assert {**read["data"], "comm_buckets": None} == {**old["data"], "comm_buckets": None}  # nothing else moves
    assert json.loads(raw) == old  # the loaded document itself is not changed
    current = {"probe": "ddp", "probe_version": 3, "data": {"comm_buckets": [[{"ready_s": 0.0}]]}}
    assert for_reading(current) is current


def test_current_versions_and_other_probes_read_unchanged():
    from measure.evidence.reading import for_reading

    current = {"probe": "kernels", "probe_version": 3, "params": {"sdpa_backend": "x"}, "data": {}}
    other = {"probe": "gemm", "probe_version": 1, "params": {"sdpa_backend": "x"}, "data": {}}
    plain = {"probe": "ablate", "probe_version": 1, "params": {"batch": 2}, "data": {}}
    assert for_reading(current) is current and for_reading(other) is other and for_reading(plain) is plain


def test_kernels_v4_expert_share_on_a_gpu_is_withdrawn_when_read_and_v5_or_cpu_is_kept():
    from measure.evidence.reading import for_reading

    expert = {"calls": 1920, "category": "expert-gemm", "experts_impl": "looped", "share": 1.64, "time_s": 0.222}
    doc = {"probe": "kernels", "probe_version": 4, "params": {"device": "cuda"}, "data": {"expert_gemm": expert}}
    read = for_reading(doc)["data"]["expert_gemm"]
    assert (read["share"], read["time_s"], read["calls"]) == (None, None, 1920)
    assert read["withdrawn"].startswith("kernels v4 read the annotation's GPU span")
    assert doc["data"]["expert_gemm"]["share"] == 1.64  # the archived document itself is untouched
    for kept in ({**doc, "probe_version": 5}, {**doc, "params": {"device": "cpu"}}):
        assert for_reading(kept)["data"]["expert_gemm"] == expert
