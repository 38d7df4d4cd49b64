"""Charts: evidence documents -> an altair (Vega-Lite) spec -> static SVG through vl-convert.

The SVG is made at build time so pages work offline (vl-convert embeds Vega and draws
without a browser or network). It is deterministic: vl-convert numbers clip paths and
gradients with a process-wide counter (``clip1``, ``clip2`` ... on successive calls), so
every ``id`` is renamed to a prefix taken from the spec's hash, which also keeps ids apart
when several charts are inlined in one page. Text from evidence (arm names, models) is
escaped by vl-convert's SVG writer; ``render`` refuses an SVG that still holds a script.

``render(kind, docs, **options)`` is the one entry point; ``KINDS`` lists the kinds.

Speed (measured in ``bench/render.py``): every encoding is an explicit channel object
(``alt.X("a:Q")``, ``alt.Tooltip(...)``), because altair resolves a bare shorthand string
(``"a:Q"``) through its JSON schema at about 30 ms a chart, more than drawing it; altair's own
validation is skipped at build time (the tests validate every kind); the static SVG is drawn
without tooltips, which it cannot show and which double vl-convert's time.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any, Callable

import altair as alt
import pandas as pd
import vl_convert as vlc

from measure import contracts
from measure.errors import ProbebookError
from render.derive import batchsweep, lossmem
from render.derive import fit as fitmod
from render.derive.kernels import category_shares
from render.tables import bytes_to_gib, doc_label, evidence_rows, seconds_to_ms

SWEEP_HEIGHT = 280
"""Plot height of the batch sweep (px); OOM markers sit at its foot, where rising throughput lines are not."""
UNSTABLE = "unstable (CV over 5%)"
"""Legend label of a point whose windows' CV was over 5% (``render.derive.lossmem.unstable``)."""
CURVE_POINTS = 96
"""Points on the fitted curve: enough that the quadratic looks smooth at chart width."""


@dataclass(frozen=True)
class ChartOutput:
    """One rendered chart."""

    svg: str
    """Static SVG, offline and deterministic, ids prefixed by the spec's hash."""
    spec_json: str
    """The Vega-Lite spec as JSON, with ``<``, ``>``, ``&`` written as ``\\u003c`` etc. so it can sit in a <script>."""
    alt: str
    """A plain-text description of what the chart shows, for the image's alt text."""


# --- pure helpers (units in the names) --------------------------------------------------


def curve_tokens(lo: float, hi: float, n: int = CURVE_POINTS) -> list[float]:
    """``n`` evenly spaced sequence lengths from ``lo`` to ``hi`` inclusive, for drawing a fit."""
    if n < 2 or hi <= lo:
        return [float(lo)]
    step = (hi - lo) / (n - 1)
    return [lo + i * step for i in range(n - 1)] + [float(hi)]


_NUM = (int, float)


def _samples(
    kind: str, doc: Any, need: dict[str, tuple[type, ...]], probe: str | None, nullable: tuple[str, ...] = ()
) -> list[dict[str, Any]]:
    """``data.samples`` of ``doc``, each row checked for the fields ``need`` (name -> types)."""
    return evidence_rows(f"chart {kind!r}", doc, need, probe, nullable)


# --- the kinds -------------------------------------------------------------------------


def _step_scaling(
    docs: list[dict[str, Any]],
    *,
    tokens: str | None = None,
    terms: str = "auto",
    mode: str | None = None,
    fit: bool = True,
    title: str | None = None,
) -> tuple[alt.TopLevelMixin, str]:
    """Step time against sequence length: the samples, the fitted curve over its range, residuals below.

    The fit is ``render.derive.fit`` (the one every published coefficient comes from), so the
    curve drawn is the curve quoted; ``tokens``, ``terms`` and ``mode`` mean what they mean there.
    """
    if len(docs) != 1:
        raise ProbebookError(f"chart 'step-scaling' draws one evidence document with its fit, got {len(docs)}")
    doc = docs[0]
    _samples("step-scaling", doc, {"tokens": _NUM, "step_s": _NUM}, "step-scaling", nullable=("step_s",))
    points = fitmod.step_samples(doc, mode)
    if not points:
        raise ProbebookError(f"chart 'step-scaling': {doc_label(doc)} has no timed samples (every step_s is null)")
    frame = pd.DataFrame({"tokens": [p[0] for p in points], "step_ms": [seconds_to_ms(p[1]) for p in points]})
    scale_x = alt.X("tokens:Q", title="sequence length (tokens)", scale=alt.Scale(zero=False))
    dot_enc: dict[str, Any] = {
        "x": scale_x,
        "y": alt.Y("step_ms:Q", title="step time (ms)"),
        "tooltip": [alt.Tooltip("tokens:Q"), alt.Tooltip("step_ms:Q", format=".4g", title="step (ms)")],
    }
    dots = alt.Chart(frame).mark_point(filled=True, size=36).encode(**dot_enc)
    heading = title or "Step time against sequence length"
    seen = f"{len(frame)} measured step times from {_n(frame.tokens.min())} to {_n(frame.tokens.max())} tokens"
    if not fit:
        return dots.properties(width=480, height=280, title=heading), f"{heading}: {seen}; no fit drawn."
    # bootstrap=0: the chart needs the coefficients and residuals, not their intervals
    result = fitmod.fit_evidence(
        doc, terms=terms, tokens=tokens, mode=mode, bootstrap=0, source=f"evidence {doc_label(doc)}"
    )
    lo, hi = min(result.tokens), max(result.tokens)
    outside = sum(1 for t in frame.tokens if not lo <= t <= hi)
    if outside:  # grey out the points the fit was told to leave out
        frame = frame.assign(sample=["fitted" if lo <= t <= hi else "outside the fitted range" for t in frame.tokens])
        dots = (
            alt.Chart(frame)
            .mark_point(filled=True, size=36)
            .encode(
                color=alt.Color(
                    "sample:N",
                    title=None,
                    legend=alt.Legend(orient="top-left"),
                    scale=alt.Scale(domain=["fitted", "outside the fitted range"], range=["#4c78a8", "#b0b0b0"]),
                ),
                **dot_enc,
            )
        )
    curve = pd.DataFrame({"tokens": curve_tokens(lo, hi)})
    curve["fit_ms"] = [seconds_to_ms(result.predict(s)) for s in curve.tokens]
    resid = pd.DataFrame({"tokens": list(result.tokens), "residual_ms": [seconds_to_ms(r) for r in result.residuals_s]})
    line = alt.Chart(curve).mark_line(color="#e45756").encode(x=scale_x, y=alt.Y("fit_ms:Q"))
    # one shared x scale, labelled once under the residual panel (each text label costs vl-convert ~1 ms)
    top = (
        alt.layer(dots, line)
        .properties(width=480, height=260, title=heading)
        .encode(x=alt.X("tokens:Q", scale=alt.Scale(zero=False), axis=alt.Axis(labels=False, title=None)))
    )
    zero = alt.Chart(pd.DataFrame({"zero": [0.0]})).mark_rule(color="#888", strokeDash=[4, 3]).encode(y=alt.Y("zero:Q"))
    bottom = alt.layer(
        zero,
        alt.Chart(resid)
        .mark_point(filled=True, size=30, color="#e45756")
        .encode(
            x=scale_x,
            y=alt.Y("residual_ms:Q", title="residual (ms)", axis=alt.Axis(format=".2~g")),
            tooltip=[alt.Tooltip("tokens:Q"), alt.Tooltip("residual_ms:Q", format=".3g", title="residual (ms)")],
        ),
    ).properties(width=480, height=110)
    text = (
        f"{heading}: {seen}, the fitted curve ({'+'.join(result.terms)}) over {_n(lo)} to {_n(hi)} tokens"
        + (f" ({outside} samples outside it drawn in grey)" if outside else "")
        + ", and below it each sequence length's mean residual (measured minus fitted)."
    )
    return alt.vconcat(top, bottom, spacing=8).resolve_scale(x="shared"), text


BATCH_SWEEP_Y = {"tok_s": ("throughput (tokens/s)", "tokens/s"), "peak_bytes": ("peak memory (bytes)", "peak bytes")}


def _batch_sweep(
    docs: list[dict[str, Any]], *, model: str | None = None, title: str | None = None, y: str = "tok_s"
) -> tuple[alt.TopLevelMixin, str]:
    """Tokens/s (or, with ``y="peak_bytes"``, peak memory) against batch, one line per context, first OOM marked."""
    if y not in BATCH_SWEEP_Y:
        raise ProbebookError(f"chart 'batch-sweep': y must be one of {', '.join(BATCH_SWEEP_Y)}, got {y!r}")
    y_field = y
    rows: list[dict[str, Any]] = []
    for doc in docs:
        for r in _samples(
            "batch-sweep",
            doc,
            {"model": (str,), "params": _NUM, "context": _NUM, "batch": _NUM, "status": (str,), "tok_s": _NUM},
            "batch-sweep",
            nullable=("tok_s",),
        ):
            why = contracts.status_problem(r)
            if why is not None:
                raise ProbebookError(f"chart 'batch-sweep': {doc_label(doc)} {why}")
            rows.append(r)
    if model is not None:
        rows = [r for r in rows if r["model"] == model]
        if not rows:
            raise ProbebookError(f"chart 'batch-sweep': no rows for model {model!r}")
    frame = pd.DataFrame(
        {
            "model": [r["model"] for r in rows],
            "context": [int(r["context"]) for r in rows],
            "batch": [int(r["batch"]) for r in rows],
            "status": [r["status"] for r in rows],
            "tok_s": [r["tok_s"] if r["status"] == "ok" else None for r in rows],
            "point": [UNSTABLE if lossmem.unstable(r) else "stable" for r in rows],
            "peak_bytes": [r.get("peak_bytes") if r["status"] == "ok" else None for r in rows],
        }
    )
    # the OOM boundary is derive's (the same first_oom_batch the tables and prose quote)
    models = sorted(frame.model.unique())
    bounds = [
        {
            "model": g.model,
            "context": g.context,
            "batch": g.first_oom_batch,
            "label": f"{g.model} OOM" if len(models) > 1 else "OOM",
        }
        for g in batchsweep.summarize(rows)
        if g.first_oom_batch is not None
    ]
    oom = pd.DataFrame(bounds, columns=["model", "context", "batch", "label"])
    ok = frame[frame.status == "ok"]
    x = alt.X("batch:Q", title="batch (sequences)", scale=alt.Scale(type="log", base=2))
    color = alt.Color("context:O", title="context (tokens)")
    # several models: one dash pattern each; the points are a layer of their own so the legend
    # draws each model as a dashed stroke (a line mark with points would show a dot)
    enc: dict[str, Any] = {"strokeDash": alt.StrokeDash("model:N", title="model")} if len(models) > 1 else {}
    y_title, y_tip = BATCH_SWEEP_Y[y_field]
    y_axis = alt.Y(f"{y_field}:Q", title=y_title, axis=alt.Axis(format="~s"))
    lines = alt.Chart(ok).mark_line().encode(x=x, y=y_axis, color=color, detail=alt.Detail("model:N"), **enc)
    # an unstable point (CV over 5%) is drawn as a hollow triangle: it never is the fastest stable batch
    points = (
        alt.Chart(ok)
        .mark_point(size=30, opacity=1)
        .encode(
            x=x,
            y=y_axis,
            color=color,
            shape=alt.Shape(
                "point:N", title=None, scale=alt.Scale(domain=["stable", UNSTABLE], range=["circle", "triangle-up"])
            ),
            fill=alt.condition(alt.datum.point == "stable", color, alt.value("transparent")),
            tooltip=[
                alt.Tooltip("model:N"),
                alt.Tooltip("context:O"),
                alt.Tooltip("batch:Q"),
                alt.Tooltip(f"{y_field}:Q", format=",.0f", title=y_tip),
                alt.Tooltip("point:N", title="timing"),
            ],
        )
    )
    layers = [lines, points]
    if len(oom):
        layers.append(
            alt.Chart(oom)
            .mark_rule(strokeDash=[5, 3], strokeWidth=1.5)
            .encode(
                x=x,
                color=color,
                tooltip=[
                    alt.Tooltip("model:N"),
                    alt.Tooltip("context:O"),
                    alt.Tooltip("batch:Q", title="first OOM batch"),
                ],
            )
        )
        layers.append(
            alt.Chart(oom)
            .mark_point(shape="cross", size=90, filled=True)
            .encode(x=x, y=alt.value(SWEEP_HEIGHT - 8), color=color)
        )
        layers.append(
            alt.Chart(oom)
            .mark_text(dy=-8, fontSize=10)
            .encode(x=x, y=alt.value(SWEEP_HEIGHT - 8), text=alt.Text("label:N"), color=color)
        )
    heading = title or ("Throughput against batch" if y_field == "tok_s" else "Peak memory against batch")
    chart = alt.layer(*layers).properties(width=480, height=SWEEP_HEIGHT, title=heading)
    contexts = ", ".join(_n(c) for c in sorted(frame.context.unique()))
    oom_text = (
        "; the first out-of-memory batch of each context is marked with a dashed line and a cross"
        if len(oom)
        else "; no batch ran out of memory"
    )
    shaky = int((ok.point == UNSTABLE).sum())
    unstable_text = f"; {shaky} unstable points (CV over 5%) are hollow triangles" if shaky else ""
    return chart, (
        f"{heading} for {', '.join(models)}: {'tokens per second' if y_field == 'tok_s' else 'peak device memory'} "
        "against batch size (log scale), "
        f"one line per context length ({contexts} tokens){oom_text}{unstable_text}."
    )


def _loss_memory(docs: list[dict[str, Any]], *, title: str | None = None) -> tuple[alt.TopLevelMixin, str]:
    """Peak memory (GiB) against microbatch, one line per arm."""
    rows = []
    for doc in docs:
        rows += _samples("loss-memory", doc, {"arm": (str,), "microbatch": _NUM, "peak_bytes": _NUM}, "loss-memory")
    frame = pd.DataFrame(
        {
            "arm": [r["arm"] for r in rows],
            "microbatch": [r["microbatch"] for r in rows],
            "peak_gib": [bytes_to_gib(r["peak_bytes"]) for r in rows],
        }
    )
    arms = list(dict.fromkeys(frame.arm))
    heading = title or "Peak memory against microbatch"
    chart = (
        alt.Chart(frame)
        .mark_line(point=True)
        .encode(
            x=alt.X("microbatch:Q", title="microbatch (sequences)", axis=alt.Axis(tickMinStep=1, format="d")),
            y=alt.Y("peak_gib:Q", title="peak memory (GiB)"),
            color=alt.Color("arm:N", title="arm", sort=arms),
            tooltip=[
                alt.Tooltip("arm:N"),
                alt.Tooltip("microbatch:Q"),
                alt.Tooltip("peak_gib:Q", format=".3g", title="peak (GiB)"),
            ],
        )
        .properties(width=480, height=280, title=heading)
    )
    return chart, (
        f"{heading}: peak device memory in GiB against microbatch size, one line per arm "
        f"({len(arms)} arms: {', '.join(arms)})."
    )


def _kernel_shares(
    docs: list[dict[str, Any]], *, labels: list[str] | None = None, title: str | None = None
) -> tuple[alt.TopLevelMixin, str]:
    """Share of device kernel time per category, one bar group per evidence document."""
    if labels is not None and len(labels) != len(docs):
        raise ProbebookError(f"chart 'kernel-shares': {len(labels)} labels for {len(docs)} evidence documents")
    names = labels or [f"run {i + 1}" for i in range(len(docs))]
    records: list[dict[str, Any]] = []
    for name, doc in zip(names, docs, strict=True):
        data = doc.get("data") if isinstance(doc, dict) else None
        if isinstance(data, dict) and data.get("samples"):
            shares = category_shares(
                _samples("kernel-shares", doc, {"kernel": (str,), "category": (str,), "device_time_s": _NUM}, None)
            )
        elif isinstance(data, dict) and isinstance(data.get("shares"), dict) and data["shares"]:
            shares = data["shares"]
            bad = [k for k, v in shares.items() if isinstance(v, bool) or not isinstance(v, _NUM) or not 0 <= v <= 1]
            if bad:
                raise ProbebookError(
                    f"chart 'kernel-shares': {doc_label(doc)} data.shares.{bad[0]} must be a fraction 0..1"
                )
        else:
            raise ProbebookError(
                f"chart 'kernel-shares': {doc_label(doc) if isinstance(doc, dict) else 'input'} has "
                "neither data.samples kernel rows nor data.shares"
            )
        records += [{"run": name, "category": cat, "share": share} for cat, share in shares.items()]
    frame = pd.DataFrame(records, columns=["run", "category", "share"])
    # largest share first (summed over the runs): the order follows the evidence, so no list of
    # categories is kept here beside the probe's own
    summed: dict[str, float] = {}
    for rec in records:
        summed[rec["category"]] = summed.get(rec["category"], 0.0) + rec["share"]
    order = sorted(summed, key=lambda c: (-summed[c], c))
    heading = title or "Kernel time by category"
    enc: dict[str, Any] = {
        "y": alt.Y("category:N", title=None, sort=order),
        "x": alt.X("share:Q", title="share of device kernel time", axis=alt.Axis(format="%")),
        "color": alt.Color("run:N", title="run", sort=names) if len(docs) > 1 else alt.value("#4c78a8"),
        "tooltip": [alt.Tooltip("run:N"), alt.Tooltip("category:N"), alt.Tooltip("share:Q", format=".1%")],
    }
    if len(docs) > 1:
        enc["yOffset"] = alt.YOffset("run:N", sort=names)
    chart = (
        alt.Chart(frame).mark_bar().encode(**enc).properties(width=420, height=max(120, 28 * len(order)), title=heading)
    )
    return chart, (
        f"{heading}: the share of summed device kernel time in each category "
        f"({', '.join(order)}), for {len(docs)} run{'s' if len(docs) > 1 else ''}."
    )


Builder = Callable[..., "tuple[alt.TopLevelMixin, str]"]
KINDS: dict[str, tuple[Builder, tuple[str, ...]]] = {
    "step-scaling": (_step_scaling, ("tokens", "terms", "fit", "title")),
    "batch-sweep": (_batch_sweep, ("model", "title", "y")),
    "loss-memory": (_loss_memory, ("title",)),
    "kernel-shares": (_kernel_shares, ("labels", "title")),
}
"""Chart kind -> (builder, the options it accepts)."""


def render(kind: str, docs: list[dict[str, Any]], **options: Any) -> ChartOutput:
    """Draw chart ``kind`` from evidence documents ``docs``; every input error is a ProbebookError."""
    if kind not in KINDS:
        raise ProbebookError(f"unknown chart kind {kind!r}; the kinds are {', '.join(sorted(KINDS))}")
    builder, accepted = KINDS[kind]
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise ProbebookError(f"chart {kind!r} has no option {unknown[0]!r}; it accepts {', '.join(accepted)}")
    if isinstance(docs, dict) or not isinstance(docs, (list, tuple)) or not docs:
        raise ProbebookError(f"chart {kind!r} needs a non-empty list of evidence documents")
    chart, text = builder(list(docs), **options)
    # altair's JSON-schema validation costs more than drawing a simple chart; the specs these
    # builders make are validated in tests/test_charts.py instead
    spec = chart.to_dict(validate=False)
    spec.pop("$schema", None)  # a URL; the SVG is drawn offline and the spec needs no schema to render
    spec_text = json.dumps(spec, sort_keys=True, separators=(",", ":"), allow_nan=False)
    static = json.dumps(without_tooltips(spec), sort_keys=True, separators=(",", ":"), allow_nan=False)
    return ChartOutput(svg=svg_from_spec(static), spec_json=_script_safe(spec_text), alt=text)


def without_tooltips(spec: Any) -> Any:
    """The spec less its ``tooltip`` encodings: a static SVG cannot show them, and vl-convert takes
    about twice as long to draw a chart whose every mark carries a formatted tooltip."""
    if isinstance(spec, dict):
        return {k: without_tooltips(v) for k, v in spec.items() if k != "tooltip"}
    if isinstance(spec, list):
        return [without_tooltips(v) for v in spec]
    return spec


@functools.lru_cache(maxsize=256)
def svg_from_spec(spec_text: str) -> str:
    """Vega-Lite JSON -> deterministic SVG (cached: the same chart on two pages is drawn once)."""
    # allowed_base_urls=[]: never fetch data from anywhere, even if a spec named a URL (offline build)
    svg = vlc.vegalite_to_svg(spec_text, allowed_base_urls=[])
    svg = namespace_ids(svg, "pb" + hashlib.sha256(spec_text.encode("utf-8")).hexdigest()[:12])
    if re.search(r"<script|\son[a-z]+\s*=|javascript:", svg, re.IGNORECASE):
        raise ProbebookError("a chart's SVG holds script content; refusing to publish it")
    return svg


_ID_REF = re.compile(r'(\bid=")([^"]+)(")|(url\(#)([^)]+)(\))|((?:xlink:)?href="#)([^"]+)(")')


def namespace_ids(svg: str, prefix: str) -> str:
    """Rename every ``id`` (and its ``url(#..)``/``href="#.."`` uses) to ``<prefix>-<n>`` in order of first use."""
    names: dict[str, str] = {}

    def sub(m: re.Match[str]) -> str:
        groups = m.groups()
        for i in (0, 3, 6):
            if groups[i] is not None:
                old = groups[i + 1]
                new = names.setdefault(old, f"{prefix}-{len(names) + 1}")
                return groups[i] + new + groups[i + 2]
        return m.group(0)  # pragma: no cover - the pattern has exactly three alternatives

    return _ID_REF.sub(sub, svg)


def _script_safe(text: str) -> str:
    """JSON text with ``<``, ``>``, ``&`` as unicode escapes: still the same JSON, safe inside HTML."""
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def _n(value: float) -> str:
    """An integer-valued float as a plain integer string, for alt text."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"
