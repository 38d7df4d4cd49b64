"""The shipped JSON Schema (measure/evidence/schema/evidence-1.schema.json) agrees with ``validate`` on the fixtures."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

import measure
from measure.errors import EvidenceError
from measure.evidence.envelope import loads, parse, validate

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SCHEMA_FILE = Path(measure.__file__).resolve().parent / "evidence" / "schema" / "evidence-1.schema.json"
CORPUS = sorted((FIXTURES / "malformed" / "evidence").glob("*.json")) + sorted(
    (FIXTURES / "archive" / "evidence" / "sha256").glob("*/*.json")
)


@pytest.fixture(scope="module")
def schema_validator():
    schema = json.loads(SCHEMA_FILE.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _parse_ok(raw: bytes, where: str) -> bool:
    try:
        parse(raw, where)
    except EvidenceError:
        return False
    return True


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name[:24])
def test_schema_and_validate_agree(schema_validator, path):
    raw = path.read_bytes()
    try:
        doc = loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        # not a JSON instance at all (empty, truncated, NaN, not UTF-8): no schema applies, and the
        # loader must refuse it
        assert not _parse_ok(raw, str(path))
        return
    errors = [e.message for e in schema_validator.iter_errors(doc)]
    assert (not errors) == _parse_ok(raw, str(path)), errors


def test_the_corpus_exercises_both_verdicts(schema_validator):
    verdicts = []
    for path in CORPUS:
        try:
            verdicts.append(schema_validator.is_valid(loads(path.read_text())))
        except (UnicodeDecodeError, ValueError):
            continue
    assert verdicts.count(True) == 5  # the valid documents of the fixture archive
    assert verdicts.count(False) >= 25


def test_known_divergence_integral_float_version(schema_validator):
    """JSON Schema counts 1.0 as an integer; the loader, which must keep bytes canonical, does not."""
    doc = json.loads(
        (
            FIXTURES
            / "archive"
            / "evidence"
            / "sha256"
            / "c4"
            / "8c8e21513e964366da3b98f51d8ebb8dec1c3001d96214cf11d4b87597b709.json"
        ).read_text()
    )
    doc["probe_version"] = 1.0
    assert schema_validator.is_valid(doc)
    with pytest.raises(EvidenceError, match="field 'probe_version' must be an integer, got a number"):
        validate(doc, "doc")
