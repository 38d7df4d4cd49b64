"""render.tables.columns: unit conversions, each table kind's Markdown/CSV/JSON, escaping, raw samples, input errors."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import markdown
import pytest
from conftest import synthetic_doc as doc

from measure.errors import ProbebookError
from measure.evidence.envelope import parse
from measure.evidence.store import Store
from render.derive.reading import significant
from render.tables import columns, kinds

FIXTURE_ARCHIVE = Path(__file__).resolve().parent / "fixtures" / "archive"


def to_html(md: str) -> str:
    """The Markdown through Python-Markdown with the tables extension, as mkdocs renders it."""
    return markdown.markdown(md, extensions=["tables"])


# --- pure helpers ----------------------------------------------------------------------


def test_unit_conversions():
    assert columns.bytes_to_gib(3 * 2**30) == 3.0
    assert columns.seconds_to_ms(0.25) == 250.0


def test_one_unit_per_field_for_tables_and_charts():
    assert columns.unit_of("peak_bytes") == columns.Unit("GiB", 2**-30)
    assert columns.unit_of("peak_bytes").of(3 * 2**30) == 3.0
    assert columns.unit_of("step_s") == columns.Unit("ms", 1000.0)
    assert columns.unit_of("device_time_s").of(0.25) == 250.0
    assert columns.unit_of("tok_s") == columns.Unit("tokens/s", 1.0) == columns.unit_of("fastest_tok_s")
    assert columns.COLUMNS["peak_bytes"].header == "peak (GiB)"
    with pytest.raises(ProbebookError, match="no display unit for field 'calls'"):
        columns.unit_of("calls")


def test_presets_sort_by_the_size_their_name_says():
    assert columns.preset_order(["500m", "20m", "250m", "90m", "250m"]) == ["20m", "90m", "250m", "500m"]
    assert columns.preset_order(["1.3b", "tiny", "350M", "7b", "125k"]) == ["125k", "350M", "1.3b", "7b", "tiny"]
    assert columns.preset_key("90m") == (0, 90e6, "90m") and columns.preset_key("tiny") == (1, 0.0, "tiny")


def test_kernel_names_get_their_shortest_distinct_abbreviation():
    names = [
        "cudnn_sdpa_flash_fprop_knob_3_kernel0",
        "cudnn_sdpa_flash_bprop_knob_3_kernel0",
        "flash_fwd_kernel",
        "flash_fwd_kernel",  # a repeat is one name
        "short",
    ]
    assert columns.distinct_abbreviations(names, width=12) == {
        "cudnn_sdpa_flash_fprop_knob_3_kernel0": "…fprop_knob…",  # fprop alone tells it apart, widened to 12
        "cudnn_sdpa_flash_bprop_knob_3_kernel0": "…bprop_knob…",
        "flash_fwd_kernel": "…fwd_kernel",
        "short": "short",  # within the width: whole
    }
    # a name every run of which another holds stays whole; a lone long token is cut to the width
    assert columns.distinct_abbreviations(["a_b", "a_b_c"], width=2) == {"a_b": "a_b", "a_b_c": "…c"}
    assert columns.distinct_abbreviations(["k" * 50], width=10) == {"k" * 50: "k" * 9 + "…"}
    # one name: its shortest run is its first token, widened to the width
    assert columns.distinct_abbreviations(["cudnn_generated_fort_native_sdpa"], width=20) == {
        "cudnn_generated_fort_native_sdpa": "cudnn_generated…"
    }


def test_constant_columns_are_found_and_said_once():
    cols = columns.columns("mode batch tokens unstable")
    rows = [
        {"mode": "eager", "batch": 4, "tokens": 512, "unstable": False},
        {"mode": "eager", "batch": 8, "tokens": 512, "unstable": False},
    ]
    constant = columns.constant_columns(cols, rows)
    assert [(c.key, text) for c, text in constant] == [("mode", "eager"), ("tokens", "512"), ("unstable", "none")]
    assert columns.constants_note(constant) == "In every row — mode: eager; tokens: 512; CV over 5%: none.\n\n"
    assert columns.constant_columns(cols, rows[:1]) == []  # one row: nothing to compare
    assert columns.constants_note([]) == ""
    missing = [{"batch": None}, {"batch": None}]
    assert [(c.key, text) for c, text in columns.constant_columns(columns.columns("batch"), missing)] == [
        ("batch", "none")
    ]


def test_a_table_whose_rows_are_alike_keeps_its_columns():
    rows = [{"kernel": "k", "category": "gemm", "calls": 1, "device_time_s": 0.5}] * 2
    out = kinds.render("kernels", [doc("kernels", rows)])
    assert out.markdown.startswith("| kernel | category | share |")


@pytest.mark.parametrize(
    "value,digits,text",
    [
        (0.000123456, 4, "0.0001235"),
        (12.3456, 4, "12.35"),
        (999.95, 4, "1,000"),
        (123456.7, 4, "123,500"),
        (90_000_000, 3, "90,000,000"),
        (0, 4, "0"),
        (-0.5, 2, "\u22120.50"),  # a true minus sign
        (float("nan"), 4, "nan"),  # a table cell of a non-finite value says so
        (float("inf"), 4, "inf"),
    ],
)
def test_significant_figures_without_exponents(value, digits, text):
    assert significant(value, digits) == text


# --- kinds ------------------------------------------------------------------------------

STEP = doc(
    "step-scaling",
    [
        {"tokens": 512, "step_s": 0.02, "batch": 4, "mode": "fixed_batch", "window": 0},
        {"tokens": 512, "step_s": 0.03, "batch": 4, "mode": "fixed_batch", "window": 1},
        {"tokens": 512, "step_s": 0.025, "batch": 4, "mode": "fixed_batch", "window": 2},
        {"tokens": 1024, "step_s": 0.05, "batch": 4, "mode": "fixed_batch", "window": 0},
        {"tokens": 128, "step_s": None, "batch": 4, "mode": "fixed_batch", "window": 0},
    ],
)


def test_step_scaling_table_groups_windows_per_length():
    # the probe flagged the 1024-token point unstable (its windows' CV over 5%): the table marks it
    points = [
        {"tokens": 512, "batch": 4, "mode": "fixed_batch", "unstable": False},
        {"tokens": 1024, "batch": 4, "mode": "fixed_batch", "unstable": True},
    ]
    out = kinds.render("step-scaling", [doc("step-scaling", STEP["data"]["samples"], points=points)])
    assert out.markdown == (
        # mode, batch and tokens/s read the same in every row: said once above the table, not repeated
        "In every row — mode: fixed\\_batch; batch: 4; tokens/s: 81,900.\n\n"
        "| tokens | median step (ms) | fastest (ms) | slowest (ms) | tokens/step | windows | CV over 5% |\n"
        "|---:|---:|---:|---:|---:|---:|:---|\n"
        "| 512 | 25.00 | 20.00 | 30.00 | 2,048 | 3 |  |\n"
        "| 1,024 | 50.00 | 50.00 | 50.00 | 4,096 | 1 | unstable |\n"
    )
    records = json.loads(out.json)
    assert records[0] == {
        "mode": "fixed_batch",
        "batch": 4,
        "tokens": 512,
        "windows": 3,
        "median_step_s": 0.025,
        "min_step_s": 0.02,
        "max_step_s": 0.03,
        "tokens_per_step": 2048,
        "tok_s": 81920.0,
        "unstable": False,
    }
    assert list(csv.DictReader(io.StringIO(out.csv)))[1]["median_step_s"] == "0.05"


SWEEP_ROWS = [
    {
        "model": "90m",
        "params": 90000000,
        "context": 2048,
        "batch": 8,
        "tok_s": 151000.0,
        "peak_bytes": 30064771072,
        "status": "ok",
    },
    {
        "model": "90m",
        "params": 90000000,
        "context": 2048,
        "batch": 16,
        "tok_s": 162000.0,
        "peak_bytes": 58000000000,
        "status": "ok",
    },
    {
        "model": "90m",
        "params": 90000000,
        "context": 2048,
        "batch": 32,
        "tok_s": None,
        "peak_bytes": None,
        "status": "oom",
    },
]


def test_batch_sweep_summary_uses_the_derive_summary():
    out = kinds.render("batch-sweep", [doc("batch-sweep", SWEEP_ROWS)])
    assert json.loads(out.json) == [
        {
            "model": "90m",
            "params": 90000000,
            "context": 2048,
            "batches_tried": 3,
            "fastest_stable_batch": 16,
            "fastest_tok_s": 162000.0,
            "peak_bytes_at_fastest": 58000000000,
            "largest_fitting_batch": 16,
            "first_oom_batch": 32,
            "unstable_batches": None,
            "spilled_batches": None,
        }
    ]
    assert out.markdown.splitlines()[2] == "| 90m | 2,048 | 162,000 | 16 | 54.02 | 16 | 32 | 3 | 90 million | — | — |"
    assert out.csv == (
        "model,context,fastest_tok_s,fastest_stable_batch,peak_bytes_at_fastest,"
        "largest_fitting_batch,first_oom_batch,batches_tried,params,unstable_batches,spilled_batches\n"
        "90m,2048,162000.0,16,58000000000,16,32,3,90000000,,\n"
    )


def test_batch_sweep_rows_view_shows_oom_as_a_dash():
    out = kinds.render("batch-sweep", [doc("batch-sweep", SWEEP_ROWS)], view="rows")
    assert out.markdown.splitlines()[0] == "In every row — model: 90m; context: 2,048; CV over 5%: none."
    assert out.markdown.splitlines()[-1] == "| 32 | oom | — | — |"
    assert list(csv.reader(io.StringIO(out.csv)))[-1] == ["90m", "2048", "32", "oom", "", "", "false"]
    with pytest.raises(ProbebookError, match="view must be summary or rows, got 'all'"):
        kinds.render("batch-sweep", [doc("batch-sweep", SWEEP_ROWS)], view="all")


def test_loss_memory_rows_keep_arm_order_and_sort_by_microbatch():
    rows = [
        # tokens_per_step is the probe's per-sequence increment (the context); the column shows it × microbatch
        {"arm": "fused", "microbatch": 8, "tokens_per_step": 1024, "peak_bytes": 2**31, "tok_s": 1000.0},
        {"arm": "fused", "microbatch": 4, "tokens_per_step": 1024, "peak_bytes": 2**30, "tok_s": None},
        {"arm": "eager", "microbatch": 4, "tokens_per_step": 1024, "peak_bytes": 3 * 2**30, "tok_s": 900.0},
    ]
    out = kinds.render("loss-memory", [doc("loss-memory", rows)])
    assert out.markdown.splitlines()[4:] == [
        "| fused | 4 | 1.00 | — | 4,096 |",
        "| fused | 8 | 2.00 | 1,000 | 8,192 |",
        "| eager | 4 | 3.00 | 900 | 4,096 |",
    ]


def test_gemm_recomputes_tflop_s_from_the_shape_and_time():
    rows = [
        {"shape": "square", "m": 1024, "n": 1024, "k": 1024, "window": w, "time_s": t, "tflop_s": 0.1}
        for w, t in enumerate([2.0**-10, 2.0**-11, 2.0**-9])
    ]
    rec = json.loads(kinds.render("gemm", [doc("gemm", rows)]).json)[0]
    assert rec == {
        "shape": "square",
        "m": 1024,
        "n": 1024,
        "k": 1024,
        "windows": 3,
        "median_time_s": 2.0**-10,
        "median_tflop_s": 2.0**41 / 1e12,
        "best_tflop_s": 2.0**42 / 1e12,
    }


def test_kernels_top_n_with_share_and_per_call_time():
    rows = [
        {"kernel": f"k{i}", "category": "gemm", "calls": 2, "device_time_s": t}
        for i, t in enumerate([0.25, 0.5, 0.125, 0.125])
    ]
    out = kinds.render("kernels", [doc("kernels", rows)], top=2)
    assert json.loads(out.json) == [
        {"kernel": "k1", "category": "gemm", "calls": 2, "device_time_s": 0.5, "per_call_s": 0.25, "share": 0.5},
        {"kernel": "k0", "category": "gemm", "calls": 2, "device_time_s": 0.25, "per_call_s": 0.125, "share": 0.25},
    ]
    assert out.markdown.splitlines()[0] == "In every row — category: gemm; calls: 2."
    assert out.markdown.splitlines()[4] == "| k1 | 50.0% | 500.0 | 250,000 |"
    with pytest.raises(ProbebookError, match="top must be a whole number >= 1, got 0"):
        kinds.render("kernels", [doc("kernels", rows)], top=0)


def test_kernel_shares_table_orders_by_time():
    rows = [
        {"kernel": "a", "category": "attention", "calls": 1, "device_time_s": 0.25},
        {"kernel": "b", "category": "gemm", "calls": 1, "device_time_s": 0.75},
    ]
    out = kinds.render("kernel-shares", [doc("kernels", rows)])
    assert out.markdown.splitlines()[2:] == ["| gemm | 750.0 | 75.0% |", "| attention | 250.0 | 25.0% |"]
    # one profiled run's kernel times and their shares are readings of it: no windows to resample
    assert out.layout is not None
    assert {(c.column, c.basis, c.uncertainty) for c in out.layout.cells} == {
        ("device_time_s", "observed", None),
        ("share", "observed", None),
    }


def test_every_shared_numeric_column_says_why_it_has_no_interval_when_its_record_gives_none():
    numeric = {k: c.basis for k, c in columns.COLUMNS.items() if c.numeric or c.counts}
    assert numeric == {
        **dict.fromkeys(("batch", "tokens", "context", "microbatch", "m", "n", "k", "calls", "rows"), "exact"),
        **dict.fromkeys(("windows", "documents", "tokens_per_step"), "exact"),
        "tok_s": "as recorded",  # a rate whose windows the evidence keeps gets their interval (``_ci``)
        "peak_bytes": "observed",
        "device_time_s": "observed",
        "share": "observed",
        "cv": "as recorded",
    }


# --- escaping ---------------------------------------------------------------------------


def test_cell_text_is_html_and_markdown_escaped():
    name = "<script>alert(1)</script>|void at::native::vectorized_elementwise_kernel<4, *x*>"
    rows = [{"kernel": name, "category": "other", "calls": 1, "device_time_s": 0.5}]
    out = kinds.render("kernels", [doc("kernels", rows)])
    html = to_html(out.markdown)
    assert "<script" not in html
    # the name is abbreviated in the cell and whole, escaped, in its title; the | in it split nothing
    whole = "&lt;script&gt;alert(1)&lt;/script&gt;&#124;void at::native::vectorized_elementwise_kernel&lt;4, *x*&gt;"
    assert f'<abbr title="{whole}">' in html
    assert html.count("<td ") == 6 and html.count("<th ") == 6
    assert json.loads(out.json)[0]["kernel"] == name  # the downloads keep the raw text
    assert next(iter(csv.DictReader(io.StringIO(out.csv))))["kernel"] == name


def test_long_names_are_shortened_in_markdown_only():
    name = "k" * 200
    out = kinds.render(
        "kernels", [doc("kernels", [{"kernel": name, "category": "gemm", "calls": 1, "device_time_s": 0.5}])]
    )
    cell = out.markdown.splitlines()[2].split(" | ")[0][2:]
    assert cell == f'<abbr title="{name}">' + "k" * 39 + "…</abbr>"  # cut to the abbreviation width, 40
    assert json.loads(out.json)[0]["kernel"] == name


# --- raw samples for evidence pages ------------------------------------------------------


def test_samples_frame_puts_known_columns_first_then_the_rest_sorted():
    d = doc(
        "step-scaling",
        [
            {"zeta": 1, "step_s": 0.5, "tokens": 128, "alpha": True},
            {"tokens": 256, "step_s": 0.75, "note": {"k": [1, 2]}},
        ],
    )
    assert list(columns.samples_frame(d).columns) == ["tokens", "step_s", "alpha", "note", "zeta"]
    assert columns.samples_csv(d) == 'tokens,step_s,alpha,note,zeta\n128,0.5,true,,1\n256,0.75,,"{""k"":[1,2]}",\n'


def test_samples_of_an_empty_or_failed_run():
    assert columns.samples_csv(doc("batch-sweep", [])) == ""
    assert columns.samples_frame(doc("batch-sweep", [])).empty


def test_samples_csv_of_the_fixture_archive_round_trips_every_value():
    store = Store(FIXTURE_ARCHIVE)
    checked = 0
    for path in store.iter_paths():
        try:
            d = parse(path.read_bytes(), str(path))
        except ProbebookError:
            continue  # the fixture archive holds deliberately unreadable files too
        rows = list(csv.DictReader(io.StringIO(columns.samples_csv(d))))
        assert len(rows) == len(d["data"]["samples"])
        for got, want in zip(rows, d["data"]["samples"], strict=True):
            assert {k: v for k, v in got.items() if v != ""} == {k: str(v) for k, v in want.items() if v is not None}
        checked += 1
    assert checked >= 4


# --- input errors ---------------------------------------------------------------------


def test_unknown_kind_and_option():
    with pytest.raises(
        ProbebookError,
        match="unknown table kind 'pie'; the kinds are batch-sweep, gemm, "
        "kernel-shares, kernels, loss-memory, mask, padding, padding-lengths, step-scaling",
    ):
        kinds.render("pie", [STEP])
    with pytest.raises(ProbebookError, match="table 'step-scaling' has no option 'top'; it takes none"):
        kinds.render("step-scaling", [STEP], top=3)


def test_bad_rows_name_the_evidence_row_and_field():
    bad = doc("gemm", [{"shape": "s", "m": 1, "n": 1, "k": "1", "time_s": 0.1}])
    with pytest.raises(
        ProbebookError,
        match=r"table 'gemm': sha256:[0-9a-f]{12} data.samples\[0\].k must be int, "
        r"got '1'",
    ):
        kinds.render("gemm", [bad])
    with pytest.raises(ProbebookError, match="table 'gemm' needs gemm evidence"):
        kinds.render("gemm", [STEP])
    with pytest.raises(ProbebookError, match=re.escape("has no data.samples rows")):
        kinds.render("gemm", [doc("gemm", [])])


def test_batch_sweep_row_with_a_bad_status_is_named():
    rows = [dict(SWEEP_ROWS[0]), {**SWEEP_ROWS[1], "status": "crashed"}]
    with pytest.raises(
        ProbebookError,
        match=r"data.samples\[1\]: status must be ok or oom, got 'crashed'",
    ):
        kinds.render("batch-sweep", [doc("batch-sweep", rows)])


def test_samples_csv_is_the_text_pandas_would_write():
    d = doc(
        "loss-memory",
        [
            {"arm": 'quote " and, comma', "microbatch": 1, "peak_bytes": 2**33, "tok_s": 0.1 + 0.2},
            {"arm": "line\nbreak", "microbatch": 2, "peak_bytes": 1e20, "tok_s": None, "flag": False},
        ],
    )
    assert columns.samples_csv(d) == columns.samples_frame(d).to_csv(index=False, lineterminator="\n")


def test_unstable_points_are_marked_and_listed_and_never_the_fastest():
    rows = [dict(r) for r in SWEEP_ROWS]
    rows[-2]["unstable"] = True  # batch 16, the fastest, had a CV over 5%
    summary = json.loads(kinds.render("batch-sweep", [doc("batch-sweep", rows)]).json)[0]
    assert (summary["fastest_stable_batch"], summary["unstable_batches"]) == (8, "16")
    marked = kinds.render("batch-sweep", [doc("batch-sweep", rows)], view="rows").markdown.splitlines()
    assert marked[-2] == "| 16 | ok | 162,000 | 54.02 | unstable |"  # model and context said once above
