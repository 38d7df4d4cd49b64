"""Evidence pages: titles, the first line, labelled clocks, readable raw values, row anchors, the id in the search
index, its "Cited by" list added to a page prepared before the records rendered, and the whole archive as a
reproducible tarball (literal inputs, then the real fixture build)."""

from __future__ import annotations

import gzip
import io
import json
import re
import tarfile
from pathlib import Path
from typing import Any

from render.assemble import kept, sealed
from render.assemble.stages import BuildPaths
from render.evidence import pages as ep
from render.numbers import links

ID = "sha256:" + "ab" * 32

DOC: dict[str, Any] = {
    "probe": "step-scaling",
    "probe_version": 2,
    "created_at": "2026-11-29T10:00:00Z",
    "status": "complete",
    "origin": {"kind": "measured"},
    "machine": {"gpu": "NVIDIA H200", "gpu_count": 1, "sm_clock_mhz": 345, "sm_clock_max_mhz": 1980},
    "params": {"preset": "250m", "batch": 4, "seq_lens": [512, 1024, 8192]},
    "data": {
        "samples": [
            {"tokens": 2048, "step_s": 0.07376980586416063, "sm_clock_mhz_median": 1980},
            {"tokens": 4096, "step_s": 2.835223151023669e-05, "sm_clock_mhz_median": 1965},
        ],
        "clocks": {"sm_mhz_before": 1980, "sm_mhz_after": 1755},
        "windows": {"times_s": [1e-05, 0.5], "flags": [{"unstable": True}]},
    },
}


def test_title_names_probe_preset_shape_and_date() -> None:
    assert ep.title_text(DOC) == "step-scaling · 250m · batch 4 × 512–8192 tokens · 2026-11-29"
    assert ep.shape_text({"gpus": 2, "batch": 4, "seq_len": 2048}) == "2 GPUs × batch 4 × 2048 tokens"
    assert ep.shape_text({"contexts": [1024, 2048]}) == "contexts 1024–2048"
    assert ep.shape_text({}) == ""
    assert ep.title_text({"probe": "padding", "params": {}}) == "padding"


def test_summary_says_what_was_measured() -> None:
    assert ep.summary_text(DOC, 2, ["tokens", "step_s"]) == (
        "Measured on 1 × NVIDIA H200 on 2026-11-29 by the step-scaling probe version 2: "
        "2 samples of tokens, step_s. Status: complete."
    )
    imported = {**DOC, "origin": {"kind": "imported", "source": "x"}, "machine": {}}
    assert ep.summary_text(imported, 0, []).startswith("Imported on 2026-11-29 by the step-scaling probe")


def test_machine_table_labels_the_idle_and_the_measured_clocks() -> None:
    rows = dict(ep.machine_fields(DOC))
    assert rows["SM clock at fingerprint, idle"] == 345
    assert rows["SM clock, maximum"] == 1980
    assert rows["SM clock in the run, before the timed windows"] == 1980
    assert rows["SM clock in the run, after the timed windows"] == 1755
    assert rows["SM clock in the timed windows, median of the windows' NVML medians"] == 1972.5


def test_raw_values_read_without_exponents() -> None:
    assert ep.readable(0.07376980586416063) == "0.0737698"
    assert ep.readable(2.835223151023669e-05) == "0.0000283522"
    assert ep.readable(-3) == "\u22123"
    assert ep.readable(True) == "true" and ep.readable(None) == "—"
    assert ep.readable("a_b <i>") == "a_b &lt;i&gt;"
    assert links.flatten({"b": {"c": [1, 2]}, "a": [{"x": 1.5}], "e": {}}) == [
        ("a.0.x", 1.5),
        ("b.c", [1, 2]),
        ("e", {}),
    ]


def test_page_has_title_id_anchors_and_downloads() -> None:
    page = ep.page_markdown(ID, DOC, [])
    lines = page.splitlines()
    assert lines[0] == "# step-scaling · 250m · batch 4 × 512–8192 tokens · 2026-11-29"
    assert lines[2] == f"`{ID}` (short: `sha256:abababababab`)"
    assert lines[4].startswith("Measured on 1 × NVIDIA H200 on 2026-11-29")
    assert '| <span id="row-0"></span>0 | 2048 | 0.0737698 | 1980 |' in page
    assert '| <span id="row-1"></span>1 | 4096 | 0.0000283522 | 1965 |' in page
    assert '| <span id="data-windows.times_s"></span>windows › times | [10 µs, 500 ms] |' in page
    assert '| <span id="params-preset"></span>preset | 250m |' in page
    assert "[the whole archive (tar.gz)](probebook-archive.tar.gz)" in page
    assert "[the ledger of published numbers](../ledger.json)" in page
    unlinked = re.sub(r"history/cfg-[0-9a-f]{16}\.md", "", page)  # a configuration key's id, like the evidence id
    assert not re.search(r"\d[eE][+-]?\d", unlinked.replace(ID, "").replace("ab" * 32, ""))


def test_the_cited_by_list_sits_between_the_envelope_and_the_code() -> None:
    cited = [("records/a/v1.md", "A *record*"), ("playbook/index.md", "Playbook")]
    page = ep.page_markdown(ID, DOC, cited)
    listed = "- [A \\*record\\*](../records/a/v1.md), version 1\n- [Playbook](../playbook/index.md)"
    assert f"## Cited by\n\n{listed}\n\n## Code" in page
    assert "## Cited by\n\n*No page cites this evidence yet.*\n\n## Code" in ep.page_markdown(ID, DOC, [])
    prepared = ep.prepare(ID, DOC)  # made before the records rendered, then given its list
    for listed in (cited, []):
        assert ep.page_files(ID, DOC, b"{}", listed, prepared) == ep.page_files(ID, DOC, b"{}", listed)
    assert ep.page_files(ID, DOC, b"{}", cited)["evidence/" + "ab" * 32 + ".md"].decode() == page


def test_field_anchors_point_at_rows_that_exist() -> None:
    assert links.field_anchor(DOC, "data.samples.1.step_s") == "row-1"
    assert links.field_anchor(DOC, "data.samples.900.step_s") == "samples"  # past the rows a page shows
    assert links.field_anchor(DOC, "params.batch") == "params-batch"
    assert links.field_anchor(DOC, "machine.sm_clock_mhz") == "machine-sm_clock_mhz"
    # a run's own clock: the machine table's row
    assert links.field_anchor(DOC, "data.clocks.sm_mhz_after") == "machine-clocks.sm_mhz_after"
    assert links.field_anchor(DOC, "data.windows.times_s.1") == "data-windows.times_s"  # one row holds the list
    assert links.field_anchor(DOC, "params.missing") == ""
    flops = {"params": {"model_flops_per_token": {"1024": 1.98e9}}}
    assert links.field_anchor(flops, "params.model_flops_per_token.1024") == "params-model_flops_per_token"  # one row
    weird = {"params": {'a"b': 1}}
    assert links.field_anchor(weird, 'params.a"b') == ""  # no id from a key that is not id-safe
    assert 'id="params-a' not in ep.page_markdown(ID, weird, [])


CAMPAIGN: dict[str, Any] = {
    "probe": "campaign",
    "data": {
        "points": [
            {"point": "20m-s512-b1", "state": "ok", "attempts": [{"result": {"tok_s": 14515.2, "pid": 7}}]},
            {
                "point": "20m-s512-b2",
                "state": "ok",
                "attempts": [
                    {"result": {"tok_s": 1.0}},
                    {"result": {"tok_s": 31917.6, "optimizer_share": 0.0272, "job_ended_unix": 1796175382.5}},
                ],
            },
        ]
    },
}


def test_a_campaign_page_tables_its_points_with_an_anchor_around_each_result() -> None:
    page = ep.page_markdown(ID, CAMPAIGN, [])
    assert "## Points (2)" in page and '<span id="points"></span>2 points' in page
    table = page.split("## Points (2)")[1].split("## Other data")[0]
    rows = [line for line in table.splitlines() if line.startswith("| ")]
    assert rows[0] == "| # | point | state | attempts | tokens | optimizer share |"  # no pid, no times of day
    # the last attempt's result; the value inside its anchor, so a wide table scrolls to the value itself
    assert (
        rows[1]
        == '| 0 | <span id="point-0">20m-s512-b1</span> | ok | 1 | <span id="point-0-tok_s">14.5152 ktok/s</span> | — |'
    )
    assert rows[2] == (
        '| 1 | <span id="point-1">20m-s512-b2</span> | ok | 2 | <span id="point-1-tok_s">31.9176 ktok/s</span> | '
        '<span id="point-1-optimizer_share">0.0272</span> |'
    )
    assert "## Points" not in ep.page_markdown(ID, DOC, [])  # a probe's own document has none


def test_the_tarball_is_kept_under_its_inputs_and_only_the_newest(tmp_path: Path) -> None:
    raw = {ID: b'{"a":1}'}
    made = kept.cached_tarball(tmp_path, raw, b"[]", 1700000000)
    assert made == ep.archive_tarball(raw, b"[]", 1700000000)
    (kept_path,) = tmp_path.glob("archive-*.tar.gz")
    kept_path.write_bytes(sealed.seal(b"kept"))  # a later build with the same inputs reads what is kept (sealed) ...
    assert kept.cached_tarball(tmp_path, raw, b"[]", 1700000000) == b"kept"
    assert kept.cached_tarball(tmp_path, raw, b"[]", 1700000000, read=False) == made  # ... a full build does not
    for other in (
        (raw, b"[1]", 1700000000),
        (raw, None, 1700000000),
        (raw, b"[]", 0),
        ({**raw, "sha256:" + "cd" * 32: b"{}"}, b"[]", 1700000000),
    ):
        assert kept.cached_tarball(tmp_path, *other) == ep.archive_tarball(*other)  # other inputs, another key
        assert len(list(tmp_path.glob("archive-*.tar.gz"))) == 1


def test_archive_tarball_is_reproducible() -> None:
    raw = {ID: b'{"a":1}', "sha256:" + "cd" * 32: b'{"b":2}'}
    one = ep.archive_tarball(raw, b"[]", 1700000000)
    assert one == ep.archive_tarball(dict(reversed(list(raw.items()))), b"[]", 1700000000)
    assert one != ep.archive_tarball(raw, b"[]", 0)
    assert int.from_bytes(one[4:8], "little") == 1700000000  # RFC 1952 §2.3: the gzip header's MTIME
    assert one[3] & 0x08 == 0  # FNAME flag clear: no file name in the header
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(one))) as tar:
        members = tar.getmembers()
        assert [m.name for m in members] == [
            "evidence",
            "evidence/sha256",
            "evidence/sha256/ab",
            f"evidence/sha256/ab/{'ab' * 31}.json",
            "evidence/sha256/cd",
            f"evidence/sha256/cd/{'cd' * 31}.json",
            "published",
            "published/ledger.json",
        ]
        assert {(m.mtime, m.uid, m.gid, m.uname, m.gname) for m in members} == {(1700000000, 0, 0, "", "")}
        extracted = tar.extractfile(f"evidence/sha256/ab/{'ab' * 31}.json")
        assert extracted is not None and extracted.read() == b'{"a":1}'


def test_built_evidence_page(fixture_site: BuildPaths) -> None:
    gemm = "0b64533f8163490ec04db0d6cbbf16414f7ed77275b02703e5f935e983692c78"
    html = (fixture_site.site / "evidence" / f"{gemm}.html").read_text(encoding="utf-8")
    assert re.search(r"<h1[^>]*>gemm · ", html)
    assert 'id="row-0"' in html
    assert "SM clock at fingerprint, idle" in html and "1,980 MHz" in html
    index = json.loads((fixture_site.site / "search" / "search_index.json").read_text(encoding="utf-8"))
    text = " ".join(d["text"] for d in index["docs"] if d["location"].startswith(f"evidence/{gemm}.html"))
    assert gemm in text and f"sha256:{gemm[:12]}" in text
    tarball = fixture_site.site / "evidence" / "probebook-archive.tar.gz"
    with tarfile.open(tarball) as tar:
        names = tar.getnames()
    stored = sorted(
        f"evidence/sha256/{p.parent.name}/{p.name}" for p in (fixture_site.archive / "evidence").rglob("*.json")
    )
    assert [n for n in names if n.endswith(".json")] == stored
    assert Path(fixture_site.site / "ledger.json").is_file()


def test_no_number_on_the_built_site_is_in_scientific_notation(fixture_site: BuildPaths) -> None:
    exponent = re.compile(r"(?<![\w.])\d+(?:\.\d+)?[eE][+-]?\d+\b")
    found = []
    for page in sorted(fixture_site.site.rglob("*.html")):
        html = page.read_text(encoding="utf-8")
        article = html[html.find("<article") : html.rfind("</article>")]
        text = re.sub(r"<[^>]+>", " ", article) + " ".join(re.findall(r'title="([^"]*)"', article))
        found += [(page.name, m.group(0)) for m in exponent.finditer(text)]
    assert found == []
