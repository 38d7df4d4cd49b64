"""How an evidence page shows a field: prose labels, values in their units, unix times as UTC dates, no host paths."""

from __future__ import annotations

from render.evidence import fields
from render.evidence import pages as ep
from render.numbers import links


def test_labels_are_prose() -> None:
    assert fields.label("gpu_memory_bytes") == "GPU memory"
    assert fields.label("probe_version") == "probe version"
    assert fields.label("created_at") == "created at"
    assert fields.label("median_s") == "median"
    assert fields.label("clocks.sm_mhz_before") == "clocks › SM MHz before"
    assert fields.label("started_unix") == "started"
    assert fields.label("s") == "s"
    assert fields.label("square_8192_tflop_s") == "square 8192"
    assert fields.label("square_n") == "square n" and fields.label("n_params_total") == "number of params total"


def test_values_take_the_unit_their_key_names() -> None:
    v = fields.value_text
    assert v("gpu_memory_bytes", 150109880320) == "139.8 GiB (150,109,880,320 B)"
    assert v("peak_bytes", 512) == "512 B"
    assert v("median_s", 0.000045) == "45 µs"
    assert v("step_s", 0.0123) == "12.3 ms"
    assert v("wall_s", 4.5) == "4.5 s"
    assert v("sm_clock_mhz", 1980) == "1,980 MHz"
    assert v("power_limit_w", 700.0) == "700 W"
    assert v("temperature_c", 39) == "39 °C"
    assert v("dirty", True) == "yes" and v("dirty", False) == "no"
    assert v("x", None) == "—"
    assert v("count", 3) == "3" and v("ratio", 0.5) == "0.5"
    assert v("square_8192_tflop_s", 640.706) == "640.706 TFLOP/s"  # a rate, not a time
    assert v("fastest_tok_s", 143000.0) == "143 ktok/s"
    assert v("sm_mhz_after", 1425) == "1,425 MHz"


def test_unix_times_are_utc_iso_dates() -> None:
    assert fields.value_text("created_unix", 1796080000) == "2026-11-30T23:06:40Z"
    assert fields.value_text("submitted_at", 1796080000.5) == "2026-11-30T23:06:40Z"
    assert fields.value_text("batch_at", 12) == "12"  # too small to be a date
    assert fields.utc_iso(0) == "1970-01-01T00:00:00Z"


def test_a_flops_dict_reads_as_flops() -> None:
    assert fields.value_text("flops", {"forward": 1.5e9, "backward": 3e9}) == "forward: 1.5 GFLOP; backward: 3 GFLOP"
    assert fields.value_text("model_flops_per_token", 1512000000) == "1.512 GFLOP"


def test_text_values_lose_host_paths_and_markup() -> None:
    assert fields.value_text("corpus", "/root/.pyenv/lib/python3.11") == "&lt;dir&gt;"
    assert fields.value_text("note", "a <b>") == "a &lt;b&gt;"


def test_cited_by_names_each_version_once() -> None:
    cited = [
        ("records/a/v2.md", "Record A"),
        ("records/a/v1.md", "Record A"),
        ("records/a/v1.md", "Record A"),
        ("playbook/x.md", "Lesson"),
    ]
    assert ep.cited_lines("evidence/x.md", cited) == [
        "- Record A: [version 1](../records/a/v1.md), [version 2](../records/a/v2.md)",
        "- [Lesson](../playbook/x.md)",
    ]


def test_a_campaign_audit_says_what_it_is() -> None:
    doc = {
        "probe": "campaign-audit",
        "probe_version": 1,
        "status": "complete",
        "created_at": "2026-12-01T00:00:00Z",
        "machine": {"gpu": "NVIDIA H200", "gpu_count": 1},
    }
    text = ep.summary_text(doc, 0, [])
    assert text.startswith("A campaign audit: the verdict of re-deriving a finished campaign's points")
    assert "Measured on" not in text and "no samples" not in text


def test_machine_values_link_to_the_machine_table() -> None:
    doc = {"machine": {"power_limit_w": 700.0}, "data": {"clocks": {"sm_mhz_before": 1980}}}
    assert links.field_anchor(doc, "machine.power_limit_w") == "machine-power_limit_w"
    assert links.field_anchor(doc, "data.clocks.sm_mhz_before") == "machine-clocks.sm_mhz_before"
    page = ep.page_markdown("sha256:" + "c" * 64, {**doc, "probe": "p"}, [])
    assert (
        '<span id="machine-clocks.sm_mhz_before"></span>SM clock in the run, before the timed windows | 1,980 MHz'
        in page
    )
    assert '<span id="machine-power_limit_w"></span>power limit | 700 W' in page
