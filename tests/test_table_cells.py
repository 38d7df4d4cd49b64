"""render.tables.cells: each number a table shows is a ledger row linked to its evidence."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import synthetic_doc as doc

from render.tables import cells, kinds
from render.tables.columns import Column

A = "sha256:" + "a" * 64
B = "sha256:" + "b" * 64
PAGE = "records/memory/v1.md"


def test_loss_memory_cells_are_ledger_rows_as_the_cells_show_them():
    rows = [
        {"arm": "fused", "microbatch": 1, "tokens_per_step": 2048, "peak_bytes": 3 * 2**30, "tok_s": 1000.0},
        {"arm": "fused", "microbatch": 2, "tokens_per_step": 2048, "peak_bytes": 5 * 2**30, "tok_s": 1500.0},
    ]
    out = kinds.render("loss-memory", [doc("loss-memory", rows)])
    assert out.layout is not None
    key = "table('loss-memory', run)"
    ledger = cells.ledger_rows(out.layout, PAGE, key, (A,))
    by_key = {r["key"]: r for r in ledger}
    # arm is a name, not a number; "unstable" reads the same in every row: no rows for them
    assert sorted(by_key) == [
        f"{key}[arm=fused, microbatch=1].microbatch",
        f"{key}[arm=fused, microbatch=1].peak_bytes",
        f"{key}[arm=fused, microbatch=1].tok_s",
        f"{key}[arm=fused, microbatch=1].tokens_per_step",
        f"{key}[arm=fused, microbatch=2].microbatch",
        f"{key}[arm=fused, microbatch=2].peak_bytes",
        f"{key}[arm=fused, microbatch=2].tok_s",
        f"{key}[arm=fused, microbatch=2].tokens_per_step",
    ]
    assert by_key[f"{key}[arm=fused, microbatch=2].peak_bytes"] == {
        "page": PAGE,
        "key": f"{key}[arm=fused, microbatch=2].peak_bytes",
        "label": "peak (GiB)",
        "value": 5.0,
        "unit": "GiB",
        "text": "5.00",
        "uncertainty": None,
        "evidence": [A],
        "derivation": f"{key}: peak (GiB), arm=fused, microbatch=2",
        "basis": "observed",  # a peak is one run's high-water mark: no windows to resample
        "anchors": ["row-1~peak_bytes"],  # where its entry on the evidence page says it was read from
    }
    assert by_key[f"{key}[arm=fused, microbatch=2].tokens_per_step"]["value"] == 4096
    assert by_key[f"{key}[arm=fused, microbatch=2].tokens_per_step"]["text"] == "4,096"
    # each cell links to the samples row it was read from, naming the column that holds it
    md = cells.page_markdown(out.layout, PAGE, key, (A,), lambda t: t)
    link = f"../../evidence/{'a' * 64}.md?rows=1&col=peak_bytes#row-1"
    title = (
        "table(’loss-memory’, run): peak (GiB), arm=fused, microbatch=2; no interval: a reading as recorded, not an "
        "estimate from repeated windows: a clock, a power limit, a machine field, the fastest or slowest window, a "
        "peak, one run’s numerical error; evidence sha256:aaaaaaaaaaaa"
    )
    assert f'[5.00]({link} "{title}")' in md
    assert md.startswith("In every row — arm: fused; CV over 5%: none.\n\n")  # a name stays text


def test_a_row_from_two_documents_links_to_both_and_a_constant_is_one_row():
    one = doc("step-scaling", [{"tokens": 512, "step_s": 0.02, "batch": 4, "mode": "eager"}])
    two = doc("step-scaling", [{"tokens": 512, "step_s": 0.04, "batch": 4, "mode": "eager"}])
    out = kinds.render("step-scaling", [one, two])
    assert out.layout is not None
    key = "table('step-scaling', a, b)"
    ledger = {r["key"]: r for r in cells.ledger_rows(out.layout, PAGE, key, (A, B))}
    median = ledger[f"{key}[mode=eager, batch=4, tokens=512].median_step_s"]
    assert (median["value"], median["unit"], median["text"], median["evidence"]) == (30.0, "ms", "30.00", [A, B])
    assert median["label"] == "median step (ms)"
    md = cells.page_markdown(out.layout, PAGE, key, (A, B), lambda t: t)
    # the number links to the first document's row, a numbered link to the second's, each naming the step times
    assert f"[30.00](../../evidence/{'a' * 64}.md?rows=0&col=step_s#row-0 " in md
    assert (
        f'[\\[2\\]](../../evidence/{"b" * 64}.md?rows=0&col=step_s#row-0 "evidence 2 of 2: sha256:bbbbbbbbbbbb")' in md
    )
    # a count of windows is read from no one column: the rows alone
    assert f"[2](../../evidence/{'a' * 64}.md#row-0 " in md


def test_a_single_row_table_says_its_numbers_once_above_it_as_rows():
    out = kinds.render("step-scaling", [doc("step-scaling", [{"tokens": 512, "step_s": 0.02, "batch": 4}])])
    assert out.layout is not None
    key = "table('step-scaling', run)"
    ledger = {r["key"]: (r["value"], r["text"]) for r in cells.ledger_rows(out.layout, PAGE, key, (A,))}
    # one row: nothing is constant, every number is a cell of the row
    assert ledger == {
        f"{key}[batch=4, tokens=512].batch": (4, "4"),
        f"{key}[batch=4, tokens=512].tokens": (512, "512"),
        f"{key}[batch=4, tokens=512].tok_s": (102400.0, "102,000"),
        f"{key}[batch=4, tokens=512].median_step_s": (20.0, "20.00"),
        f"{key}[batch=4, tokens=512].min_step_s": (20.0, "20.00"),
        f"{key}[batch=4, tokens=512].max_step_s": (20.0, "20.00"),
        f"{key}[batch=4, tokens=512].tokens_per_step": (2048, "2,048"),
        f"{key}[batch=4, tokens=512].windows": (1, "1"),
    }


def test_constant_numbers_above_a_table_are_rows_of_every_row():
    rows = [
        {"tokens": 512, "step_s": 0.02, "batch": 4, "mode": "eager"},
        {"tokens": 1024, "step_s": 0.04, "batch": 4, "mode": "eager"},
    ]
    out = kinds.render("step-scaling", [doc("step-scaling", rows)])
    assert out.layout is not None
    key = "table('step-scaling', run)"
    ledger = {r["key"]: (r["value"], r["text"]) for r in cells.ledger_rows(out.layout, PAGE, key, (A,))}
    assert ledger[f"{key}[every row].batch"] == (4, "4")
    assert ledger[f"{key}[every row].tok_s"] == (102400.0, "102,000")
    assert f"{key}[every row].mode" not in ledger  # a name
    md = cells.page_markdown(out.layout, PAGE, key, (A,), lambda t: t)
    # a number of every row lands on every row, its column named
    assert md.startswith(
        f"In every row — mode: eager; batch: [4](../../evidence/{'a' * 64}.md?rows=0-1&col=batch#row-0 "
    )


def test_a_cell_that_lists_numbers_is_a_row_by_its_text():
    rows = [
        {"model": "m", "params": 1e6, "context": 8, "batch": b, "status": "ok", "tok_s": t, "peak_bytes": 2**30}
        for b, t in ((1, 100.0), (2, 190.0), (4, 400.0))
    ]
    rows[1]["unstable"] = True
    out = kinds.render("batch-sweep", [doc("batch-sweep", rows)])
    assert out.layout is not None
    ledger = {r["key"]: r for r in cells.ledger_rows(out.layout, PAGE, "t", (A,))}
    unstable = ledger["t[model=m, context=8].unstable_batches"]
    assert (unstable["value"], unstable["text"], unstable["label"]) == (None, "2", "unstable batches (CV over 5%)")
    assert ledger["t[model=m, context=8].fastest_tok_s"]["evidence"] == [A]


def test_the_json_download_holds_no_provenance_fields():
    out = kinds.render("step-scaling", [doc("step-scaling", [{"tokens": 512, "step_s": 0.02, "batch": 4}])])
    assert "_from" not in out.json and "_rows" not in out.json


def test_a_cell_lands_on_its_rows_with_its_column_or_where_its_column_names():
    record = {"_from": (0, 1), "_rows": {0: [95, 96, 97, 98, 99]}, "_at": {"documents": "data-length_histogram.counts"}}
    tflops = Column("median_tflop_s", "TFLOP/s", str, source="time_s")
    windows = Column("windows", "windows", str)
    documents = Column("documents", "documents", str)
    # document 1 is read whole (no rows): its link lands on its samples table
    assert cells.provenance(record, 2, tflops) == ((0, 1), ("samples-r95-99~time_s", ""))
    assert cells.provenance(record, 2, windows) == ((0, 1), ("samples-r95-99", ""))
    assert cells.provenance(record, 2, documents) == ((0, 1), ("data-length_histogram.counts",) * 2)
    assert cells.provenance({}, 2, tflops) == ((0, 1), ("", ""))


def test_a_number_of_every_row_lands_on_the_rows_of_every_record():
    records: list[dict[str, Any]] = [
        {"_from": (0,), "_rows": {0: [3, 4]}, "_at": {"share": "data-x"}},
        {"_from": (0, 1), "_rows": {0: [0], 1: [7]}, "_at": {"share": "data-x", "documents": "data-y"}},
        {"_from": (1,), "_rows": {}},
    ]
    # document 1 is read whole by the third record: whole here too; only the _at all three name alike stays
    assert cells.merged(records) == {"_from": (0, 1), "_rows": {0: [0, 3, 4]}}
    assert cells.merged(records[:2]) == {"_from": (0, 1), "_rows": {0: [0, 3, 4], 1: [7]}, "_at": {"share": "data-x"}}
    assert cells.merged([{"_from": (0,)}, {}]) == {}  # a record of every document: so is the merge


def test_length_histogram_cells_land_on_the_histogram_rows_of_their_evidence_page():
    hist = {"edges": [0, 1, 2, 4], "counts": [2, 0, 6]}
    out = kinds.render("padding-lengths", [doc("padding", [], length_histogram=hist)])
    assert out.layout is not None
    md = cells.page_markdown(out.layout, PAGE, "t", (A,), lambda t: t)
    page = f"../../evidence/{'a' * 64}.md"
    assert f'[6]({page}#data-length_histogram.counts "t: documents, from_tokens=2; evidence sha256:aaaaaaaaaaaa")' in md
    assert (
        f'[4]({page}#data-length_histogram.edges "t: below (tokens), from_tokens=2; evidence sha256:aaaaaaaaaaaa")'
        in md
    )
    assert "#samples" not in md


def test_gemm_throughput_cells_land_on_the_shape_rows_with_their_times():
    rows = [{"shape": "s", "m": 8, "n": 8, "k": 8, "time_s": t} for t in (1e-6, 2e-6, 3e-6)]
    other = [{"shape": "o", "m": 4, "n": 4, "k": 4, "time_s": 1e-6}]
    out = kinds.render("gemm", [doc("gemm", other + rows)])
    assert out.layout is not None
    md = cells.page_markdown(out.layout, PAGE, "t", (A,), lambda t: t)
    # shape s is rows 1-3: 2·8³ FLOP over the median 2 µs is 0.000512 TFLOP/s, linked to those rows' times
    assert f"[0.000512](../../evidence/{'a' * 64}.md?rows=1-3&col=time_s#row-1 " in md


# --- each cell's interval or the reason it has none (issue 23) --------------------------------------------------

MS = [14, 10, 17, 12, 11, 16, 13, 18, 15]
"""Nine windows in ms, out of order: median 14, its 95% interval 11 to 17 (tests/test_derive_windows.py)."""


def said(out: Any) -> dict[str, tuple[str, Any]]:
    """Each shown number's (basis, interval as shown), keyed ``row key.column``."""
    assert out.layout is not None
    return {f"{c.row_key}.{c.column}": (c.basis, c.uncertainty) for c in out.layout.cells}


def test_a_step_time_and_its_rate_carry_their_windows_interval_and_every_other_column_its_basis():
    samples = [{"tokens": 512, "batch": 4, "mode": "eager", "window": i, "step_s": t / 1000} for i, t in enumerate(MS)]
    samples += [
        {"tokens": 1024, "batch": 4, "mode": "eager", "window": i, "step_s": t} for i, t in enumerate((0.03, 0.05))
    ]
    out = kinds.render("step-scaling", [doc("step-scaling", samples)])
    nine, two = "mode=eager, batch=4, tokens=512", "mode=eager, batch=4, tokens=1024"
    assert said(out) == {
        "every row.batch": ("exact", None),
        f"{nine}.tokens": ("exact", None),
        # 2,048 tokens a step over the median's interval, and the median's interval shown in ms
        f"{nine}.tok_s": ("interval", (2048 / 0.017, 2048 / 0.011)),
        f"{nine}.median_step_s": ("interval", (0.011 * 1e3, 0.017 * 1e3)),
        f"{nine}.min_step_s": ("observed", None),
        f"{nine}.max_step_s": ("observed", None),
        f"{nine}.tokens_per_step": ("exact", None),
        f"{nine}.windows": ("exact", None),
        f"{two}.tokens": ("exact", None),
        f"{two}.tok_s": ("few windows", None),
        f"{two}.median_step_s": ("few windows", None),
        f"{two}.min_step_s": ("observed", None),
        f"{two}.max_step_s": ("observed", None),
        f"{two}.tokens_per_step": ("exact", None),
        f"{two}.windows": ("exact", None),
    }
    ledger = {r["key"]: r for r in cells.ledger_rows(out.layout, PAGE, "t", (A,))}
    median = ledger[f"t[{nine}].median_step_s"]
    assert (median["value"], median["uncertainty"], median["basis"]) == (14.0, [11.0, 17.0], "interval")
    assert ledger[f"t[{two}].median_step_s"]["basis"] == "few windows"
    md = cells.page_markdown(out.layout, PAGE, "t", (A,), lambda t: t)
    title = "t: median step (ms), mode=eager, batch=4, tokens=512; 95% interval of the windows of this run 11.0–17.0 ms"
    assert f'"{title}; evidence' in md
    assert "tokens=1024; no interval: fewer than 3 timed windows" in md
    assert "_ci" not in out.json and "_basis" not in out.csv  # the downloads hold the values only


def test_a_gemm_shapes_median_and_its_tflops_carry_their_windows_interval_the_best_window_none():
    rows = [{"shape": "s", "m": 8, "n": 8, "k": 8, "time_s": t * 2.0**-20} for t in MS]
    out = kinds.render("gemm", [doc("gemm", rows)])
    assert said(out) == {
        # 2·8³ FLOPs over the slower and the faster end of the median time, in TFLOP/s
        "shape=s.median_tflop_s": ("interval", (2.0**30 / 17 / 1e12, 2.0**30 / 11 / 1e12)),
        "shape=s.best_tflop_s": ("observed", None),
        "shape=s.median_time_s": ("interval", (11 * 2.0**-20 * 1e3, 17 * 2.0**-20 * 1e3)),
        "shape=s.m": ("exact", None),
        "shape=s.n": ("exact", None),
        "shape=s.k": ("exact", None),
        "shape=s.windows": ("exact", None),
    }


def test_a_loss_memory_rate_carries_its_kept_windows_interval_else_says_why_it_has_none():
    rows = [
        {"arm": "fused", "microbatch": 2, "tokens_per_step": 1024, "peak_bytes": 2**31, "tok_s": 2048 / 0.014},
        {"arm": "fused", "microbatch": 4, "tokens_per_step": 1024, "peak_bytes": 2**32, "tok_s": 4096 / 0.02},
        {"arm": "eager", "microbatch": 2, "tokens_per_step": 1024, "peak_bytes": 2**32, "tok_s": 1000.0},
    ]
    rows[0] |= {"step_s": 0.014, "windows": 9}
    rows[1] |= {"step_s": 0.02, "windows": 2}
    kept = [{"arm": "fused", "microbatch": 2, "window": i, "step_s": t / 1000} for i, t in enumerate(MS)]
    kept += [{"arm": "fused", "microbatch": 4, "window": i, "step_s": t} for i, t in enumerate((0.01, 0.03))]
    got = said(kinds.render("loss-memory", [doc("loss-memory", rows, windows=kept)]))
    assert got["arm=fused, microbatch=2.tok_s"] == ("interval", (2048 / 0.017, 2048 / 0.011))
    assert got["arm=fused, microbatch=4.tok_s"] == ("few windows", None)
    assert got["arm=eager, microbatch=2.tok_s"] == ("as recorded", None)  # an imported row: no windows kept
    assert {k.rsplit(".", 1)[1]: v for k, v in got.items() if not k.endswith("tok_s")} == {
        "microbatch": ("exact", None),
        "peak_bytes": ("observed", None),
        "tokens_per_step": ("exact", None),
    }


def test_the_fastest_batchs_rate_carries_its_rows_windows_interval_and_the_verdicts_are_exact():
    row = {"model": "90m", "params": 90_000_000, "context": 512, "status": "ok", "peak_bytes": 2**33}
    rows = [
        {**row, "batch": 4, "tok_s": 2048 / 0.014, "step_s": 0.014, "windows": 9},
        {**row, "batch": 8, "tok_s": None, "peak_bytes": None, "status": "oom"},
    ]
    kept = [{"context": 512, "batch": 4, "window": i, "step_s": t / 1000} for i, t in enumerate(MS)]
    out = kinds.render("batch-sweep", [doc("batch-sweep", rows, windows=kept)])
    assert said(out) == {
        "model=90m, context=512.context": ("exact", None),  # one group: its numbers are said above the table
        "model=90m, context=512.fastest_tok_s": ("interval", (2048 / 0.017, 2048 / 0.011)),
        "model=90m, context=512.fastest_stable_batch": ("exact", None),
        "model=90m, context=512.peak_bytes_at_fastest": ("observed", None),
        "model=90m, context=512.largest_fitting_batch": ("exact", None),
        "model=90m, context=512.first_oom_batch": ("exact", None),
        "model=90m, context=512.batches_tried": ("exact", None),
        "model=90m, context=512.params": ("exact", None),
    }
    # the rows view: each ok row's rate, its windows' interval; a document that keeps none shows it as recorded
    rows_view = said(kinds.render("batch-sweep", [doc("batch-sweep", rows, windows=kept)], view="rows"))
    assert rows_view["model=90m, context=512, batch=4.tok_s"] == ("interval", (2048 / 0.017, 2048 / 0.011))
    assert said(kinds.render("batch-sweep", [doc("batch-sweep", rows)]))["model=90m, context=512.fastest_tok_s"] == (
        "as recorded",
        None,
    )


def test_a_mask_kinds_step_and_slowdown_carry_their_rounds_interval_is_causal_against_itself_is_exact():
    padded = [28, 21, 33, 25, 22, 31, 26, 35, 30]
    samples = []
    for i, (c, p) in enumerate(zip(MS, padded, strict=True)):
        samples += [
            {"kind": "causal", "round": i, "step_s": c / 1000},
            {"kind": "padded", "round": i, "step_s": p / 1000},
        ]
    samples += [{"kind": "sliding", "round": i, "step_s": s} for i, s in enumerate((0.02, 0.021))]
    seen = {"sdpa_backends": ["math"], "attention_kernels": []}
    observed = {"kinds": dict.fromkeys(("causal", "padded", "sliding"), seen)}
    points = [{"kind": k, "cv": 0.04} for k in ("causal", "padded", "sliding")]
    out = kinds.render("mask", [doc("mask", samples, observed=observed, points=points)])
    got = said(out)
    assert got == {
        "kind=causal.median_step_s": ("interval", (0.011 * 1e3, 0.017 * 1e3)),
        "kind=causal.vs_causal": ("exact", None),  # is_causal / is_causal − 1 is 0 by definition
        "kind=padded.median_step_s": ("interval", (0.022 * 1e3, 0.033 * 1e3)),
        "kind=padded.vs_causal": ("interval", got["kind=padded.vs_causal"][1]),
        "kind=sliding.median_step_s": ("few windows", None),
        "kind=sliding.vs_causal": ("few windows", None),
        "every row.rounds_cv": ("as recorded", None),  # the probe's CV of the rounds, the same in every row
    }
    # the padded kind's slowdown: the ratio of its rounds' median to is_causal's, resampled apart, less one
    assert got["kind=padded.vs_causal"][1] == pytest.approx((0.025 / 0.016 - 1, 0.031 / 0.012 - 1), rel=1e-12)
    # a fraction shown as a percent states its interval in percent: 0.5625 and 1.58 are 56.2% and 158%
    md = cells.page_markdown(out.layout, PAGE, "t", (A,), lambda t: t)
    assert '"t: vs is_causal, kind=padded; 95% interval 56.2%–158%; evidence sha256:aaaaaaaaaaaa"' in md


def test_the_padding_tables_numbers_are_counts_or_arithmetic_on_counts_exact():
    sample = {"batching": "naive", "bucket_size": 8, "rows": 4, "tokens": 24, "slots_width": 32}
    sample |= {"slots_longest": 28, "distinct_roots": 6, "full_windows": 2}
    got = said(kinds.render("padding", [doc("padding", [sample, {**sample, "bucket_size": 16}])]))
    assert set(got.values()) == {("exact", None)} and len(got) == 6
    hist = {"edges": [0, 1, 2, 4], "counts": [2, 0, 6]}
    lengths = said(kinds.render("padding-lengths", [doc("padding", [], length_histogram=hist)]))
    assert set(lengths.values()) == {("exact", None)} and len(lengths) == 12
