"""render.charts.draw: every chart kind's SVG (content, determinism, offline, escaping, ids, legends, unstable marks,
themes, phone-width text) and its input errors; render.site.assets: the chart Markdown and site assets."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import synthetic_doc as doc

from measure.errors import ProbebookError
from measure.evidence.store import Store
from render.assemble import kept, sealed
from render.charts import draw as charts
from render.charts import svg as chart_svg
from render.charts import sweeps
from render.charts import theme as chart_theme
from render.derive import fit as fitmod
from render.derive import fit_inputs
from render.site import assets as site_assets

REPO = Path(__file__).resolve().parent.parent
FIXTURE_ARCHIVE = REPO / "tests" / "fixtures" / "archive"
SVG_NS = "{http://www.w3.org/2000/svg}"


def quadratic_doc() -> dict:
    """Step times exactly 0.01 + 2e-6·S + 1e-10·S² s at five lengths, three windows each, with +-1e-5 s noise."""
    return doc(
        "step-scaling",
        [
            {
                "tokens": s,
                "step_s": 0.01 + 2e-6 * s + 1e-10 * s * s + (w - 1) * 1e-5,
                "batch": 8,
                "mode": "fixed_batch",
                "window": w,
            }
            for s in (256, 512, 1024, 2048, 4096)
            for w in range(3)
        ],
    )


def sweep_doc(model: str = "90m") -> dict:
    """Three contexts; 1024 OOMs from batch 32, 2048 from batch 16, 512 never."""
    rows = []
    for ctx in (512, 1024, 2048):
        for b in (1, 2, 4, 8, 16, 32):
            oom = b * ctx > 16384
            rows.append(
                {
                    "model": model,
                    "params": 90_000_000,
                    "context": ctx,
                    "batch": b,
                    "tok_s": None if oom else 1000.0 * b,
                    "peak_bytes": None if oom else b * ctx * 100_000,
                    "status": "oom" if oom else "ok",
                }
            )
    return doc("batch-sweep", rows)


def presets_doc(models=("90m", "20m", "500m", "250m")) -> dict:
    """One sweep document over several presets (as a campaign collects them), in no size order."""
    return doc("batch-sweep", [r for m in models for r in sweep_doc(m)["data"]["samples"]])


def memory_doc(arms=("eager", "fused")) -> dict:
    return doc(
        "loss-memory",
        [
            {"arm": arm, "microbatch": m, "tokens_per_step": m * 1024, "peak_bytes": m * (i + 3) * 2**30}
            for i, arm in enumerate(arms)
            for m in (1, 2, 4, 8)
        ],
    )


def kernels_doc() -> dict:
    cats = ["attention", "gemm", "gemm", "norm-elementwise", "loss", "optimizer", "other"]
    return doc(
        "kernels",
        [{"kernel": f"k{i}", "category": c, "calls": 3, "device_time_s": 0.001 * (i + 1)} for i, c in enumerate(cats)],
    )


def datasets(out: charts.ChartOutput) -> list[list[dict]]:
    return list(json.loads(out.spec_json)["datasets"].values())


def texts(svg: str) -> list[str]:
    return [el.text or "" for el in ET.fromstring(svg).iter(f"{SVG_NS}text")]


# --- pure helpers ----------------------------------------------------------------------


def test_curve_tokens_is_evenly_spaced_and_inclusive():
    assert charts.curve_tokens(0, 10, 6) == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    assert charts.curve_tokens(512, 512) == [512.0]


def test_axis_format_keeps_three_figures_and_no_exponent():
    assert charts.axis_format(0.0512) == ".4~f"
    assert charts.axis_format(3.2) == ".2~f"
    assert charts.axis_format(1250.0) == ".0~f"
    assert charts.axis_format(2e-15) == ".6~f"
    assert charts.axis_format(0.0) == ".0~f"


def test_namespace_ids_renames_definitions_and_uses_in_order():
    svg = (
        '<svg><defs><clipPath id="clip7"><rect/></clipPath><linearGradient id="gradient_3"/></defs>'
        '<g clip-path="url(#clip7)" fill="url(#gradient_3)"/><use xlink:href="#clip7"/></svg>'
    )
    assert charts.namespace_ids(svg, "pbX") == (
        '<svg><defs><clipPath id="pbX-1"><rect/></clipPath><linearGradient id="pbX-2"/></defs>'
        '<g clip-path="url(#pbX-1)" fill="url(#pbX-2)"/><use xlink:href="#pbX-1"/></svg>'
    )


# --- each kind --------------------------------------------------------------------------


def test_step_scaling_draws_the_derive_fit_and_its_residuals():
    d = quadratic_doc()
    out = charts.render("step-scaling", [d], terms="c+a+b")
    fitted = fitmod.fit_evidence(d, terms="c+a+b", bootstrap=0)
    curve = next(rows for rows in datasets(out) if rows and "fit_ms" in rows[0])
    assert curve[0]["tokens"] == 256 and curve[-1]["tokens"] == 4096 and len(curve) == charts.CURVE_POINTS
    assert curve[-1]["fit_ms"] == fitted.predict(4096.0) * 1e3
    resid = next(rows for rows in datasets(out) if rows and "residual_ms" in rows[0])
    assert [r["tokens"] for r in resid] == [256, 512, 1024, 2048, 4096]
    assert [r["residual_ms"] for r in resid] == [r * 1e3 for r in fitted.residuals_s]
    points = next(rows for rows in datasets(out) if rows and "step_ms" in rows[0])
    assert len(points) == 15
    root = ET.fromstring(out.svg)
    assert root.tag == f"{SVG_NS}svg"
    assert "residual (ms)" in texts(out.svg) and "step time (ms)" in texts(out.svg)
    assert "c+a+b" in out.alt and "residual" in out.alt


def test_step_scaling_token_range_limits_the_curve_and_the_residual_panel():
    out = charts.render("step-scaling", [quadratic_doc()], tokens="512:2048", terms="a+b")
    resid = next(rows for rows in datasets(out) if rows and "residual_ms" in rows[0])
    assert [r["tokens"] for r in resid] == [512, 1024, 2048]
    curve = next(rows for rows in datasets(out) if rows and "fit_ms" in rows[0])
    assert (curve[0]["tokens"], curve[-1]["tokens"]) == (512, 2048)


def test_step_scaling_without_fit_draws_points_only():
    out = charts.render("step-scaling", [quadratic_doc()], fit=False)
    assert not any(rows and "fit_ms" in rows[0] for rows in datasets(out))
    assert "no fit drawn" in out.alt


def oom_data(out: charts.ChartOutput) -> list[dict]:
    """The rows of the chart's out-of-memory crosses (the layer whose rows carry ``row_px``), every panel's."""
    return [r for rows in datasets(out) if rows and "row_px" in rows[0] for r in rows]


def test_batch_sweep_marks_the_first_oom_batch_of_each_context():
    out = charts.render("batch-sweep", [sweep_doc()])
    assert {(r["context"], r["batch"], r["timing"]) for r in oom_data(out)} == {
        (1024, 32, charts.OOM),
        (2048, 16, charts.OOM),
    }
    ok = next(rows for rows in datasets(out) if rows and "tok_s" in rows[0])
    assert len(ok) == 18 - 3 and all(r["status"] == "ok" for r in ok)
    assert "OOM" not in texts(out.svg)  # a cross at its batch, no text label piled on the plot
    assert "512, 1024, 2048" in out.alt and "out-of-memory" in out.alt and "a cross at that batch" in out.alt


def test_batch_sweep_without_oom_says_so_and_filters_by_model():
    rows = [r for r in sweep_doc()["data"]["samples"] if r["status"] == "ok"]
    out = charts.render("batch-sweep", [doc("batch-sweep", rows), sweep_doc("250m")], model="90m")
    assert "no batch ran out of memory" in out.alt and "250m" not in out.alt


def test_loss_memory_plots_gib_per_arm():
    out = charts.render("loss-memory", [memory_doc()])
    rows = datasets(out)[0]
    assert [(r["arm"], r["microbatch"], r["peak_gib"]) for r in rows[:2]] == [("eager", 1, 3.0), ("eager", 2, 6.0)]
    assert {"eager", "fused"} <= set(texts(out.svg))
    assert "2 arms: eager, fused" in out.alt


def test_kernel_shares_from_rows_and_from_data_shares():
    out = charts.render("kernel-shares", [kernels_doc()])
    shares = {r["category"]: r["share"] for r in datasets(out)[0]}
    assert shares["gemm"] == pytest.approx(5 / 28) and shares["attention"] == pytest.approx(1 / 28)
    only = doc("kernels", [], shares={"gemm": 0.75, "attention": 0.25})
    two = charts.render("kernel-shares", [kernels_doc(), only], labels=["rows", "shares"])
    assert {(r["run"], r["category"], r["share"]) for r in datasets(two)[0] if r["run"] == "shares"} == {
        ("shares", "gemm", 0.75),
        ("shares", "attention", 0.25),
    }


# --- properties every SVG must have ------------------------------------------------------

HISTORY_ROWS = [  # a history page's rows (render.evidence.historypage.chart_rows): two points, three sessions
    {"session": n, "point": p, "ratio": r, "low": r - 0.01, "high": r + 0.01}
    for p, ratios in (("shape a", (1.0, 0.9, 0.91)), ("shape b", (1.02, 1.0, 0.99)))
    for n, r in enumerate(ratios, start=1)
]
ALL = [
    ("step-scaling", quadratic_doc, {"terms": "c+a+b"}),
    ("batch-sweep", sweep_doc, {}),
    ("batch-sweep", presets_doc, {}),
    ("batch-sweep", presets_doc, {"y": "peak_bytes"}),
    ("loss-memory", memory_doc, {}),
    ("kernel-shares", kernels_doc, {}),
    ("history", kernels_doc, {"rows": HISTORY_ROWS, "changes": [2]}),
]


@pytest.mark.parametrize("kind,make,options", ALL, ids=[a[0] for a in ALL])
def test_svg_is_well_formed_offline_and_ids_resolve(kind, make, options):
    out = charts.render(kind, [make()], **options)
    root = ET.fromstring(out.svg)  # well-formed XML
    assert root.get("width") and root.get("viewBox")
    refs = set(re.findall(r'url\(#([^)]+)\)|href="#([^"]+)"', out.svg))
    ids = set(re.findall(r'\bid="([^"]+)"', out.svg))
    assert {a or b for a, b in refs} <= ids
    assert all(re.fullmatch(r"pb[0-9a-f]{12}-\d+", i) for i in ids)
    # offline: the only URLs are the XML namespace names, and nothing is fetched (no href to outside, no @import)
    assert set(re.findall(r"https?://[^\s\"'<>)]+", out.svg)) <= {
        "http://www.w3.org/2000/svg",
        "http://www.w3.org/1999/xlink",
    }
    assert "@import" not in out.svg and not re.search(r'href="(?!#)', out.svg)
    assert out.alt and "\n" not in out.alt


@pytest.fixture(scope="module")
def fresh_process_svgs() -> list[str]:
    """Every kind in ALL drawn by one new interpreter, last kind first: one process start (about 2 s of CPU for
    render's imports and vl-convert's start) rather than one per kind, and no kind drawn where this process drew it."""
    code = (
        f"import sys, json; sys.path.insert(0, {str(REPO / 'tests')!r}); import test_charts as t; "
        "from render.charts import draw as charts; "
        "svgs = [charts.render(k, [m()], **o).svg for k, m, o in reversed(t.ALL)]; "
        "sys.stdout.write(json.dumps(svgs[::-1]))"
    )
    fresh = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    return json.loads(fresh.stdout)


@pytest.mark.parametrize("kind,make,options", ALL, ids=[a[0] for a in ALL])
def test_svg_is_byte_identical_across_calls_and_processes(kind, make, options, fresh_process_svgs):
    first = charts.render(kind, [make()], **options).svg
    chart_svg.raw_svg.cache_clear()  # draw again, not from the cache: vl-convert's id counter has moved on
    again = charts.render(kind, [make()], **options).svg
    assert again == first
    assert fresh_process_svgs[ALL.index((kind, make, options))] == first


def clipped_spec(top: float) -> str:
    """A Vega-Lite line clipped to its x domain: vl-convert gives it a clip path with a counter-numbered id."""
    return json.dumps(
        {
            "data": {"values": [{"x": 1, "y": 1}, {"x": 2, "y": top}, {"x": 3, "y": 9}]},
            "mark": {"type": "line", "clip": True},
            "encoding": {
                "x": {"field": "x", "type": "quantitative", "scale": {"domain": [0, 2]}},
                "y": {"field": "y", "type": "quantitative"},
            },
        },
        sort_keys=True,
    )


def test_clip_ids_are_stable_across_calls_and_distinct_between_charts():
    chart_svg.raw_svg.cache_clear()
    first = charts.svg_from_spec(clipped_spec(4))
    other = charts.svg_from_spec(clipped_spec(5))
    chart_svg.raw_svg.cache_clear()
    again = charts.svg_from_spec(clipped_spec(4))
    ids = lambda svg: set(re.findall(r'\bid="([^"]+)"', svg))  # noqa: E731
    assert ids(first) and ids(other)
    assert again == first  # vl-convert numbered this one clip2 or later; the renaming hides that
    assert not ids(first) & ids(other)  # two charts inlined in one page cannot capture each other's clip
    assert f'clip-path="url(#{sorted(ids(first))[0]})"' in first


def test_text_from_evidence_is_escaped_in_the_svg_and_the_spec():
    evil = '<script>alert("x")</script>'
    out = charts.render("loss-memory", [memory_doc(arms=("eager", evil))])
    assert "<script" not in out.svg.lower()
    assert "&lt;script&gt;" in out.svg
    assert evil in texts(out.svg)  # shown as text, literally
    assert "<" not in out.spec_json and ">" not in out.spec_json
    assert evil in {r["arm"] for r in datasets(out)[0]}


# --- input errors ---------------------------------------------------------------------


def missing_peak() -> dict:
    broken = memory_doc()
    del broken["data"]["samples"][2]["peak_bytes"]
    return broken


def untimed_steps() -> dict:
    d = quadratic_doc()
    for row in d["data"]["samples"]:
        row["step_s"] = None
    return d


REFUSALS = [
    # (what, kind, documents, options, the message's pattern)
    (
        "unknown kind",
        "pie",
        lambda: [sweep_doc()],
        {},
        "unknown chart kind 'pie'; the kinds are batch-sweep, history, kernel-shares, loss-memory, step-scaling",
    ),
    (
        "unknown option",
        "loss-memory",
        lambda: [memory_doc()],
        {"colour": "red"},
        "chart 'loss-memory' has no option 'colour'; it accepts title",
    ),
    (
        "wrong probe",
        "batch-sweep",
        lambda: [memory_doc()],
        {},
        "chart 'batch-sweep' needs batch-sweep evidence; sha256:[0-9a-f]{12} is 'loss-memory' evidence",
    ),
    (
        "missing field",
        "loss-memory",
        lambda: [missing_peak()],
        {},
        r"data.samples\[2\].peak_bytes must be int or float, got None",
    ),
    ("empty input", "loss-memory", list, {}, "needs a non-empty list"),
    ("one document", "step-scaling", lambda: [quadratic_doc(), quadratic_doc()], {}, "draws one evidence document"),
    (
        "too few points",
        "step-scaling",
        lambda: [doc("step-scaling", [{"tokens": 512, "step_s": 0.02}, {"tokens": 1024, "step_s": 0.03}])],
        {"terms": "c+a+b"},
        "needs at least 4 distinct token counts",
    ),
    ("no timed sample", "step-scaling", lambda: [untimed_steps()], {}, "has no timed samples"),
    ("no such model", "batch-sweep", lambda: [sweep_doc()], {"model": "1b"}, "no rows for model '1b'"),
    ("bad y", "batch-sweep", lambda: [sweep_doc()], {"y": "loss"}, "y must be one of tok_s, peak_bytes, got 'loss'"),
    (
        "share over 1",
        "kernel-shares",
        lambda: [doc("kernels", [], shares={"gemm": 1.5})],
        {},
        r"data.shares.gemm must be a fraction",
    ),
    ("labels", "kernel-shares", lambda: [kernels_doc()], {"labels": ["a", "b"]}, "2 labels for 1 evidence documents"),
]


@pytest.mark.parametrize("kind,make,options,message", [r[1:] for r in REFUSALS], ids=[r[0] for r in REFUSALS])
def test_render_and_describe_refuse_bad_input_with_one_line_and_the_same_message(kind, make, options, message):
    with pytest.raises(ProbebookError, match=message) as drawing:
        charts.render(kind, make(), **options)
    with pytest.raises(ProbebookError, match=message) as describing:
        charts.describe(kind, make(), **options)
    assert str(describing.value) == str(drawing.value) and "\n" not in str(drawing.value)


# --- alt text without drawing ----------------------------------------------------------------


def unstable_steps() -> dict:
    d = quadratic_doc()
    d["data"]["points"] = [{"mode": "fixed_batch", "tokens": 1024, "batch": 8, "unstable": True}]
    return d


def unstable_memory() -> dict:
    d = memory_doc()
    d["data"]["samples"][2]["cv"] = 0.09
    return d


def no_oom_sweep() -> dict:
    return doc("batch-sweep", [r for r in sweep_doc()["data"]["samples"] if r["status"] == "ok"])


DESCRIBED = [
    ("step-scaling", lambda: [quadratic_doc()], {"terms": "c+a+b"}),
    ("step-scaling", lambda: [quadratic_doc()], {"tokens": "512:2048", "terms": "a+b"}),
    ("step-scaling", lambda: [quadratic_doc()], {"tokens": "1024:", "terms": "a+b"}),
    ("step-scaling", lambda: [quadratic_doc()], {"fit": False}),
    ("step-scaling", lambda: [unstable_steps()], {"terms": "c+a+b", "title": "Mine"}),
    ("batch-sweep", lambda: [sweep_doc()], {}),
    ("batch-sweep", lambda: [sweep_doc()], {"y": "peak_bytes"}),
    ("batch-sweep", lambda: [no_oom_sweep(), sweep_doc("250m")], {"model": "90m"}),
    ("batch-sweep", lambda: [sweep_doc("90m"), sweep_doc("250m")], {}),
    ("loss-memory", lambda: [memory_doc()], {}),
    ("loss-memory", lambda: [unstable_memory()], {"title": "Mine"}),
    ("kernel-shares", lambda: [kernels_doc()], {}),
    ("kernel-shares", lambda: [kernels_doc(), doc("kernels", [], shares={"gemm": 0.75})], {"labels": ["a", "b"]}),
]


@pytest.mark.parametrize("kind,make,options", DESCRIBED, ids=[f"{d[0]}-{i}" for i, d in enumerate(DESCRIBED)])
def test_describe_gives_the_alt_text_render_gives(kind, make, options):
    assert charts.describe(kind, make(), **options) == charts.render(kind, make(), **options).alt


def test_describe_imports_neither_altair_nor_vl_convert():
    # a fresh process: describing every kind loads pandas and the fit, never the drawing libraries
    cases = [(kind, make(), options) for kind, make, options in DESCRIBED]
    code = (
        "import json, sys; from render.charts import draw as charts; "
        "texts = [charts.describe(k, d, **o) for k, d, o in json.load(sys.stdin)]; "
        "json.dump({'texts': texts, 'loaded': sorted({'altair', 'vl_convert'} & set(sys.modules))}, sys.stdout)"
    )
    fresh = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, input=json.dumps(cases), capture_output=True, text=True, check=True
    )
    got = json.loads(fresh.stdout)
    assert got["loaded"] == []
    assert got["texts"] == [charts.render(kind, docs, **options).alt for kind, docs, options in cases]


def test_charts_from_the_fixture_archive():
    store = Store(FIXTURE_ARCHIVE)
    from measure.evidence.envelope import parse

    docs = {}
    for path in store.iter_paths():
        try:
            d = parse(path.read_bytes(), str(path))
        except ProbebookError:
            continue  # the fixture archive holds deliberately unreadable files too
        if d["status"] == "complete":
            docs.setdefault(d["probe"], d)
    assert charts.render("batch-sweep", [docs["batch-sweep"]]).svg.startswith("<svg")
    assert charts.render("loss-memory", [docs["loss-memory"]]).svg.startswith("<svg")
    assert charts.render("step-scaling", [docs["step-scaling"]]).svg.startswith("<svg")


def test_step_scaling_greys_out_samples_outside_the_fitted_range():
    out = charts.render("step-scaling", [quadratic_doc()], tokens="1024:", terms="a+b")
    points = next(rows for rows in datasets(out) if rows and "step_ms" in rows[0])
    assert {(r["tokens"], r["series"]) for r in points} == {
        (256, "outside the fitted range"),
        (512, "outside the fitted range"),
        (1024, "measured sample"),
        (2048, "measured sample"),
        (4096, "measured sample"),
    }
    assert "outside the fitted range" in texts(out.svg)
    assert "6 samples outside it drawn in grey" in out.alt


@pytest.mark.parametrize("kind,make,options", ALL, ids=[a[0] for a in ALL])
def test_every_kind_builds_a_schema_valid_vega_lite_spec(kind, make, options):
    # render() skips altair's validation for speed; here it runs, so a malformed spec fails a test instead
    builder, _ = charts.KINDS[kind]
    _text, draw = builder([make()], **options)
    chart = draw()
    assert chart.to_dict(validate=True) == chart.to_dict(validate=False)


def test_svg_drawing_never_fetches_a_url():
    spec = json.dumps(
        {
            "data": {"url": "https://example.com/data.csv"},
            "mark": "point",
            "encoding": {"x": {"field": "a", "type": "quantitative"}},
        }
    )
    with pytest.raises(ValueError, match="External data url not allowed"):
        charts.svg_from_spec(spec)


def test_tooltips_stay_in_the_interactive_spec_but_not_in_the_static_svg():
    out = charts.render("loss-memory", [memory_doc()])
    assert any(layer["encoding"].get("tooltip") for layer in json.loads(out.spec_json)["layer"])
    assert charts.without_tooltips({"a": [{"tooltip": 1, "b": 2}], "tooltip": 3}) == {"a": [{"b": 2}]}


def test_batch_sweep_of_several_models_is_small_multiples_in_preset_size_order():
    out = charts.render("batch-sweep", [sweep_doc("90m"), sweep_doc("500m"), sweep_doc("20m"), sweep_doc("250m")])
    spec = json.loads(out.spec_json)
    panels = spec["vconcat"]
    assert [p["title"]["text"] for p in panels] == ["20m", "90m", "250m", "500m"]  # by size, not 20m, 250m, 500m, 90m
    assert spec["resolve"]["scale"]["y"] == "independent"  # each preset its own throughput scale
    assert texts(out.svg).index("20m") < texts(out.svg).index("90m") < texts(out.svg).index("250m")
    # one cross per context out of memory, in its own model's panel, at its batch
    for panel in panels:
        crosses = [layer for layer in panel["layer"] if layer["encoding"].get("shape") and "row_px" in str(layer)]
        rows = spec["datasets"][crosses[0]["data"]["name"]]
        assert {(r["model"], r["context"], r["batch"]) for r in rows} == {
            (panel["title"]["text"], 1024, 32),
            (panel["title"]["text"], 2048, 16),
        }
    assert "one panel per model (20m, 90m, 250m, 500m) each with its own throughput scale" in out.alt
    memory = json.loads(charts.render("batch-sweep", [sweep_doc("90m"), sweep_doc("20m")], y="peak_bytes").spec_json)
    assert memory["resolve"]["scale"]["y"] == "shared"  # one card: one memory scale
    assert {p["layer"][0]["encoding"]["y"]["title"] for p in memory["vconcat"]} == {"peak memory (GiB)"}


def test_batch_sweep_memory_is_in_gib_as_the_tables_show_it():
    out = charts.render("batch-sweep", [sweep_doc()], y="peak_bytes")
    ok = next(rows for rows in datasets(out) if rows and "peak_gib" in rows[0] and rows[0]["status"] == "ok")
    assert (ok[0]["batch"], ok[0]["context"], ok[0]["peak_gib"]) == (1, 512, 512 * 100_000 / 2**30)
    assert "peak memory (GiB)" in texts(out.svg) and "in GiB" in out.alt
    assert "bytes" not in " ".join(texts(out.svg))


def test_batch_sweep_contexts_have_line_styles_unlike_each_other():
    out = charts.render("batch-sweep", [sweep_doc()])
    dash = next(s for s in scales(spec_of(out), "strokeDash"))
    assert dash == {"domain": [512, 1024, 2048], "range": [[1, 0], [7, 3], [2, 2]]}  # solid, dashed, dotted
    assert len({tuple(d) for d in sweeps.CONTEXT_DASHES}) == len(sweeps.CONTEXT_DASHES)


def test_oom_crosses_of_one_batch_are_stacked_apart():
    assert sweeps.oom_rows([("90m", 512, 32), ("90m", 1024, 32), ("90m", 2048, 16), ("20m", 512, 32)]) == [
        {"model": "90m", "context": 512, "batch": 32, "timing": charts.OOM, "row_px": 10},
        {"model": "90m", "context": 1024, "batch": 32, "timing": charts.OOM, "row_px": 22},
        {"model": "90m", "context": 2048, "batch": 16, "timing": charts.OOM, "row_px": 10},
        {"model": "20m", "context": 512, "batch": 32, "timing": charts.OOM, "row_px": 10},
    ]


# --- unstable points, legends, themes, phone width (issue 7 and 14) ------------------------


def spec_of(out: charts.ChartOutput, dark: bool = False) -> dict:
    return json.loads(out.dark_spec_json if dark else out.spec_json)


def scales(spec: dict, channel: str) -> list[dict]:
    """Every explicit scale of ``channel`` in a (layered, concatenated) spec."""
    found = []

    def walk(node):
        if isinstance(node, dict):
            enc = node.get("encoding") or {}
            if isinstance(enc.get(channel), dict) and "scale" in enc[channel]:
                found.append(enc[channel]["scale"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(spec)
    return found


def test_unstable_tokens_reads_the_probe_points_and_imported_rows():
    d = quadratic_doc()
    d["data"]["points"] = [
        {"mode": "fixed_batch", "tokens": 1024, "batch": 8, "unstable": True},
        {"mode": "fixed_batch", "tokens": 2048, "batch": 8, "unstable": False},
        {"mode": "fixed_batch", "tokens": 4096, "batch": 4, "unstable": True},  # another batch: not these rows
        {"mode": "fixed_tokens", "tokens": 512, "batch": 8, "unstable": True},  # another mode
    ]
    d["data"]["samples"][0]["cv"] = 0.06  # an imported row's own CV over 5%
    assert fit_inputs.unstable_tokens(d) == {256.0, 1024.0}
    assert fit_inputs.unstable_tokens(quadratic_doc()) == set()


def test_step_scaling_marks_unstable_sequence_lengths_as_hollow_triangles():
    d = quadratic_doc()
    d["data"]["points"] = [{"mode": "fixed_batch", "tokens": 1024, "batch": 8, "unstable": True}]
    out = charts.render("step-scaling", [d], terms="c+a+b")
    points = next(rows for rows in datasets(out) if rows and "step_ms" in rows[0])
    assert sorted({(r["tokens"], r["series"]) for r in points}) == [
        (256, "measured sample"),
        (512, "measured sample"),
        (1024, charts.UNSTABLE),
        (2048, "measured sample"),
        (4096, "measured sample"),
    ]
    shape = next(s for s in scales(spec_of(out), "shape"))
    fill = next(s for s in scales(spec_of(out), "fill"))
    assert dict(zip(shape["domain"], shape["range"], strict=True)) == {
        "measured sample": "circle",
        charts.UNSTABLE: "triangle-up",
        "fit (c+a+b)": "stroke",
    }
    assert dict(zip(fill["domain"], fill["range"], strict=True))[charts.UNSTABLE] == "transparent"
    shown = texts(out.svg)
    assert {"measured sample", charts.UNSTABLE, "fit (c+a+b)"} <= set(shown)  # one legend for samples and fit
    assert "1 sequence lengths flagged unstable (CV over 5%) are hollow triangles" in out.alt


def test_loss_memory_marks_unstable_points_with_a_legend_entry():
    d = memory_doc()
    d["data"]["samples"][2]["cv"] = 0.09  # eager, microbatch 4
    d["data"]["samples"][5]["unstable"] = True  # fused, microbatch 2
    out = charts.render("loss-memory", [d])
    rows = datasets(out)[0]
    assert [(r["arm"], r["microbatch"]) for r in rows if r["timing"] == charts.UNSTABLE] == [("eager", 4), ("fused", 2)]
    shape = next(s for s in scales(spec_of(out), "shape"))
    marks = dict(zip(shape["domain"], shape["range"], strict=True))
    assert marks == {charts.STABLE: "circle", charts.UNSTABLE: "triangle-up"}
    assert charts.UNSTABLE in texts(out.svg)
    assert "2 unstable points (CV over 5%) are hollow triangles" in out.alt
    calm = charts.render("loss-memory", [memory_doc()])
    assert "unstable" not in calm.alt and charts.UNSTABLE not in texts(calm.svg)  # the legend names what is drawn


def test_batch_sweep_legend_names_measured_unstable_and_oom():
    d = sweep_doc()
    d["data"]["samples"][1]["unstable"] = True
    out = charts.render("batch-sweep", [d])
    shape = next(s for s in scales(spec_of(out), "shape"))
    assert dict(zip(shape["domain"], shape["range"], strict=True)) == {
        charts.STABLE: "circle",
        charts.UNSTABLE: "triangle-up",
        charts.OOM: "cross",
    }
    assert {charts.STABLE, charts.UNSTABLE, charts.OOM, "context (tokens)"} <= set(texts(out.svg))


def test_kernel_shares_title_names_every_run_it_draws():
    eager, compiled = kernels_doc(), kernels_doc()
    eager["params"] = {"preset": "250m", "compile": False}
    compiled["params"] = {"preset": "250m", "compile": True}
    one = charts.render("kernel-shares", [compiled])
    assert spec_of(one)["title"] == {"text": "Share of kernel time by category", "subtitle": "250m, compiled"}
    two = charts.render("kernel-shares", [eager, compiled])
    assert "250m, eager against 250m, compiled" in two.alt
    assert {"250m, eager", "250m, compiled"} <= set(texts(two.svg))


def svg_fonts(svg: str) -> list[float]:
    return [float(el.get("font-size", "").removesuffix("px")) for el in ET.fromstring(svg).iter(f"{SVG_NS}text")]


@pytest.mark.parametrize("kind,make,options", ALL, ids=[a[0] for a in ALL])
def test_every_theme_fits_a_phone_column_with_text_of_12_px(kind, make, options):
    out = charts.render(kind, [make()], **options)
    for svg in (out.svg, out.dark_svg):
        width = float(ET.fromstring(svg).get("width"))
        assert width <= chart_theme.MAX_WIDTH_PX
        fonts = svg_fonts(svg)
        assert fonts and min(fonts) >= chart_theme.TEXT_PX
        # shrunk to a 390-px phone's column, the smallest text is still 12 px
        assert min(fonts) * min(1.0, chart_theme.PHONE_COLUMN_PX / width) >= 12


@pytest.mark.parametrize("kind,make,options", ALL, ids=[a[0] for a in ALL])
def test_dark_variant_is_transparent_with_light_text(kind, make, options):
    out = charts.render(kind, [make()], **options)
    light, dark = spec_of(out), spec_of(out, dark=True)
    assert light["config"]["background"] == "#ffffff" and dark["config"]["background"] == "transparent"
    assert {e.get("fill") for e in ET.fromstring(out.dark_svg).iter(f"{SVG_NS}text")} <= {
        chart_theme.DARK.text,
        *chart_theme.DARK.series,
    }
    assert "#ffffff" not in out.dark_svg.lower() and 'fill="white"' not in out.dark_svg


@pytest.mark.parametrize("kind,make,options", ALL, ids=[a[0] for a in ALL])
def test_every_theme_recoloured_is_the_chart_drawn_in_that_theme(kind, make, options):
    # render() draws once and recolours; drawing each theme's spec directly must give the same bytes
    builder, _ = charts.KINDS[kind]
    out = charts.render(kind, [make()], **options)
    for theme, svg, spec_json in (
        (chart_theme.LIGHT, out.svg, out.spec_json),
        (chart_theme.DARK, out.dark_svg, out.dark_spec_json),
    ):
        _text, draw = builder([make()], theme=theme, **options)
        spec = draw().to_dict(validate=False)
        spec.pop("$schema", None)
        spec["config"] = {**spec.get("config", {}), **chart_theme.config(theme)}
        assert json.loads(spec_json) == spec
        static = json.dumps(chart_svg.without_tooltips(spec), sort_keys=True, separators=(",", ":"), allow_nan=False)
        assert chart_svg.svg_from_spec(static) == svg


def test_a_colour_with_two_roles_cannot_be_recoloured():
    clash = dataclasses.replace(chart_theme.LIGHT, fit=chart_theme.LIGHT.series[0])
    with pytest.raises(ValueError, match="two roles"):
        chart_theme.colour_map(clash, chart_theme.DARK)
    assert (
        chart_theme.colour_map(chart_theme.LIGHT, chart_theme.LIGHT)[chart_theme.LIGHT.text] == chart_theme.LIGHT.text
    )


def test_recolour_svg_drops_only_the_background_rect_and_swaps_paints():
    svg = '<svg width="2"><rect width="2" height="1" fill="#ffffff"/><path fill="#FFFFFF" stroke="#0072b2"/></svg>'
    colours = {"#ffffff": "transparent", "#0072B2": "#56B4E9"}
    assert chart_svg.recolour_svg(svg, colours) == '<svg width="2"><path fill="transparent" stroke="#56B4E9"/></svg>'
    with pytest.raises(ValueError, match="only #rrggbb"):
        chart_svg.recolour_svg(svg, {"#ffffff": "white"})


def test_palettes_are_okabe_ito():
    for theme in chart_theme.THEMES:
        assert set(theme.series) <= set(chart_theme.OKABE_ITO.values())
        assert len(set(theme.series)) == len(theme.series) and theme.fit not in theme.series


def test_long_titles_wrap_to_the_chart_width():
    assert chart_theme.wrap_title("Step time") == "Step time"
    assert chart_theme.wrap_title("Throughput against batch for the 250m model on one H200", 30) == [
        "Throughput against batch for",
        "the 250m model on one H200",
    ]


def test_chart_markdown_shows_each_theme_only_in_its_scheme():
    assert chart_theme.markdown("v2-step-scaling-1", "Step time") == (
        "![Step time](v2-step-scaling-1.svg#only-light)\n"
        "![Step time](v2-step-scaling-1.dark.svg#only-dark)\n\n"
        "[Chart spec (Vega-Lite JSON)](v2-step-scaling-1.vl.json)\n"
    )


def test_chart_assets_are_offline_and_added_once_to_the_config():
    files = site_assets.site_files()
    names = site_assets.STYLESHEETS + site_assets.SCRIPTS + site_assets.LAZY + site_assets.POLYFILLS
    assert set(files) == {f"assets/probebook/{n}" for n in names}
    # the charts' own: the script on every page, the bundle it loads only where a chart nears the screen (issue 42)
    assert site_assets.SCRIPTS[0] == "charts.js" and site_assets.LAZY == ("vega-embed.js",)
    assert {"charts.css", "tables.css"} <= set(site_assets.STYLESHEETS)
    assert b"window.vegaEmbed=" in files["assets/probebook/vega-embed.js"]
    assert files == site_assets.site_files()
    config = {"extra_css": ["mine.css"]}
    site_assets.add_to_config(config)
    site_assets.add_to_config(config)
    assert config["extra_css"] == ["mine.css"] + [f"assets/probebook/{n}" for n in site_assets.STYLESHEETS]
    assert config["extra_javascript"] == [f"assets/probebook/{n}" for n in site_assets.SCRIPTS]


def test_the_bundle_is_kept_in_the_build_cache_and_read_back(tmp_path):
    cache = tmp_path / "cache" / "assets"
    made = kept.asset_files(cache)
    kept_path = cache / site_assets.bundle_name()
    assert (
        sealed.unseal(kept_path.read_bytes())
        == made["assets/probebook/vega-embed.js"]
        == site_assets.vega_embed_bundle()
    )
    # a later build reads the kept file, sealed by this user's builds (render.assemble.sealed): what is there it ships
    kept_path.write_bytes(sealed.seal(b"/* kept */"))
    assert kept.asset_files(cache)["assets/probebook/vega-embed.js"] == b"/* kept */"
    kept_path.write_bytes(b"/* planted */")  # not sealed: made again, never shipped
    assert kept.asset_files(cache) == made
    # a full build reads nothing kept: it makes the bundle afresh, and keeps that for the next build
    kept_path.write_bytes(sealed.seal(b"/* kept */"))
    assert kept.asset_files(cache, read=False) == made
    assert sealed.unseal(kept_path.read_bytes()) == made["assets/probebook/vega-embed.js"]
    assert site_assets.bundle_name().startswith("vega-embed-") and site_assets.bundle_name().endswith(".js")
