"""An erratum naming several versions shows on each, saying where it is written; bad `versions` are refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from render.pages import layout, sources


def _docs(tmp: Path, errata_v3: str) -> Path:
    docs = tmp / "docs"
    (docs / "records" / "r").mkdir(parents=True)
    (docs / "index.md").write_text("# Home\n")
    for v in (1, 2):
        sup = f"supersedes: {v - 1}\nchanges: Version {v}.\n" if v > 1 else ""
        (docs / "records" / "r" / f"v{v}.md").write_text(
            f"---\ntitle: R\nversion: {v}\ndate: 2026-11-0{v}\n{sup}---\nBody.\n"
        )
    (docs / "records" / "r" / "v3.md").write_text(
        "---\ntitle: R\nversion: 3\ndate: 2026-11-03\nsupersedes: 2\nchanges: Version 3.\n"
        f"errata:\n{errata_v3}---\nBody.\n"
    )
    return docs


def test_an_erratum_naming_versions_shows_on_each_with_where_it_is_written(tmp_path: Path) -> None:
    errata = (
        "  - date: 2026-11-04\n    versions: [2, 3]\n    text: Versions 2 and 3 said the wrong thing.\n"
        "  - date: 2026-11-05\n    text: Only version 3 had this.\n"
    )
    src = sources.load(_docs(tmp_path, errata))
    (record,) = src.records
    assert [(e.date, on) for e, on in record.errata_for(1)] == []
    assert [(e.date, on) for e, on in record.errata_for(2)] == [("2026-11-04", 3)]
    assert [(e.date, on) for e, on in record.errata_for(3)] == [("2026-11-04", 3), ("2026-11-05", 3)]
    v1, v2, v3 = record.versions
    assert "Errata" not in layout.header(v1, src)
    assert "    - **2026-11-04** (written on [version 3](v3.md)): Versions 2 and 3 said the wrong thing." in (
        layout.header(v2, src)
    )
    head3 = layout.header(v3, src)
    assert "    - **2026-11-04**: Versions 2 and 3 said the wrong thing." in head3
    assert "    - **2026-11-05**: Only version 3 had this." in head3


@pytest.mark.parametrize("versions", ["[4]", "[0]", "[]", "two", "[true]"])
def test_versions_outside_the_record_up_to_its_own_are_refused(tmp_path: Path, versions: str) -> None:
    errata = f"  - date: 2026-11-04\n    versions: {versions}\n    text: A note.\n"
    with pytest.raises(sources.SourceError) as err:
        sources.load(_docs(tmp_path, errata))
    message = str(err.value)
    assert "(errata[0]): field 'versions' must be a non-empty list of version numbers 1..3, got " in message
    assert "\n" not in message


def test_the_repository_shows_the_gemm_clock_erratum_on_versions_2_to_6() -> None:
    src = sources.load(Path(__file__).resolve().parents[1] / "docs")
    (record,) = [r for r in src.records if r.slug == "step-anatomy-250m"]
    shown = [
        p.version
        for p in record.versions
        if any("GEMM ceiling same-session" in e.text for e, _ in record.errata_for(p.version))
    ]
    assert shown == [2, 3, 4, 5, 6]
