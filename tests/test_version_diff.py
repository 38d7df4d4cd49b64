"""A record's new version compared number by number with the version it follows (``v1 → v2``), on ``probebook
diff`` and the Changes page, with chart alt text left out of every diff (issue 40). Literal ledgers, a real CLI."""

from __future__ import annotations

from render.numbers import ledger
from render.pages.changes import page_markdown

V1, V2 = "records/step-time/v1.md", "records/step-time/v2.md"


def row(page: str, key: str, value: float, text: str) -> dict:
    return {
        "page": page, "key": key, "value": value, "text": text, "unit": "s/token", "derivation": "fit a",
        "evidence": ["sha256:" + "a" * 64], "uncertainty": None, "basis": "",
    }  # fmt: skip


def alt(page: str, n: int, value: float) -> dict:
    return {**row(page, f"chart('step-scaling', sweep).alt[{n}]", value, f"{value:g}"), "basis": "in words"}


OLD = [row(V1, "fit(sweep).a", 498e-6, "498 µs/token"), alt(V1, 0, 512)]
NEW = [
    *OLD,
    row(V2, "fit(sweep).a", 350e-6, "350 µs/token"),
    row(V2, "fit(sweep).c", 1e-3, "1.00 ms"),  # no v1 number of that key: only added
    alt(V2, 0, 1024),
]


def test_a_new_version_is_compared_with_the_one_it_follows():
    d = ledger.diff(OLD, NEW)
    assert [(r["page"], r["key"]) for r in d.added] == [(V2, "fit(sweep).a"), (V2, "fit(sweep).c")]
    assert [(c.old["text"], c.new["text"]) for c in d.versions] == [("498 µs/token", "350 µs/token")]
    assert round(d.versions[0].relative, 4) == -0.2972
    assert "version  records/step-time/v2.md fit(sweep).a: v1 -> v2: 498 µs/token -> 350 µs/token (-29.7%)" in (
        ledger.format_diff(d)
    )
    assert d.to_dict()["versions"][0]["old_page"] == V1


def test_alt_text_is_left_out_of_the_diff():
    d = ledger.diff(OLD, NEW)
    assert not [r for r in d.added if ledger.is_alt_text(r)] and d.unchanged == 1  # v1's fit(sweep).a
    assert ledger.previous_version(V2) == V1 and ledger.previous_version(V1) is None
    assert ledger.previous_version("evidence/x.md") is None


def test_the_changes_page_shows_the_versions_side_by_side():
    d = ledger.diff(OLD, NEW)
    text = page_markdown(d, True, {V1, V2}, {V2: "Step time v2"}, current=NEW)
    section = text.split("### New record versions", 1)[1].split("###", 1)[0]
    assert "| 498 µs/token |" in section and "350 µs/token" in section and "-29.7%" in section
    assert "alt[" not in text


def test_probebook_diff_prints_the_version_lines(cli, tmp_path):
    ledger.write(tmp_path / "old.json", OLD)
    ledger.write(tmp_path / "new.json", NEW)
    out = cli("diff", str(tmp_path / "old.json"), str(tmp_path / "new.json"))
    assert out.returncode == 0, out.stderr
    assert "v1 -> v2: 498 µs/token -> 350 µs/token" in out.stdout and "alt[" not in out.stdout
