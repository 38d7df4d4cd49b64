"""Page functions of the input-pipeline records: ``padding()`` and ``mask_cost()`` (ARCHITECTURE.md §Pages).

Plain functions registered by ``render.functions.registry.page_function``, each called with the page first; the
derivations themselves are in ``render/derive/padding.py``.
"""

from __future__ import annotations

from typing import Any

from measure.errors import ProbebookError
from render.derive import fit_inputs, intervals, kernels
from render.derive import padding as padmod
from render.functions.page import Page
from render.functions.registry import page_function
from render.functions.step_scaling import step_fit
from render.functions.views import EvidenceRef, MaskView, PaddingView, call_text, number


@page_function
def padding(page: Page, ref: Any, bucket: Any = None, fit: Any = None, **fit_options: Any) -> PaddingView:
    """Padding before (naive) and after bucket-to-pair at ``bucket`` tokens (default: the smallest swept),
    diversity and its knee; with a step-scaling ``fit`` (or the one the probe named), seconds per epoch."""
    ref = page.ref(ref, "padding", "padding()")
    doc = page.doc(ref)
    rows = page.rows(ref)
    naive = next((r for r in rows if r.get("batching") == "naive"), None)
    sweep = sorted((r for r in rows if r.get("batching") == "bucket-to-pair"), key=lambda r: r["bucket_size"])
    if naive is None or not sweep:
        raise ProbebookError(f"padding(): {ref.alias} ({ref.short}) lacks the naive row or the bucket sweep")
    size = sweep[0]["bucket_size"] if bucket is None else int(number(bucket, "padding() bucket"))
    picked = next((r for r in sweep if r["bucket_size"] == size), None)
    if picked is None:
        swept = ", ".join(str(r["bucket_size"]) for r in sweep)
        raise ProbebookError(f"padding(): bucket {size} was not swept in {ref.alias} (swept: {swept})")
    corpus = doc["data"].get("corpus", {})
    diversities = [padmod.diversity(r["distinct_roots"], r["full_windows"]) for r in sweep]
    values: dict[str, Any] = {
        "documents": corpus.get("documents"),
        "tokens": corpus.get("tokens"),
        "sequences": corpus.get("sequences"),
        "naive_share": padmod.padding_share(naive["tokens"], naive["slots_width"]),
        "naive_longest_share": padmod.padding_share(naive["tokens"], naive["slots_longest"]),
        "bucket_share": padmod.padding_share(picked["tokens"], picked["slots_width"]),
        "bucket_longest_share": padmod.padding_share(picked["tokens"], picked["slots_longest"]),
        "naive_rows": naive["rows"],
        "bucket_rows": picked["rows"],
        "naive_diversity": padmod.diversity(naive["distinct_roots"], naive["full_windows"]),
        "bucket_diversity": padmod.diversity(picked["distinct_roots"], picked["full_windows"]),
        "bucket_size": size,
        "knee": padmod.diversity_knee([r["bucket_size"] for r in sweep], diversities),
    }
    evidence: tuple[str, ...] = (ref.id,)
    notes = {"knee": "diversity never falls 5% below its best across the sweep"}
    what = f"padding of corpus {corpus.get('name')!r} at width {doc['params'].get('width')}, bucket {size}"
    fit_ref = _padding_fit(page, ref, doc, fit)
    spans: dict[str, tuple[float, float] | None] = {}
    if fit_ref is None:
        for name in ("step", "epoch", "saving"):
            notes[name] = "no step-scaling fit given (padding(pad, fit=sweep) or the probe's --fit)"
    else:
        width = float(doc["params"]["width"])
        f = step_fit(page.library, fit_ref, {k: v for k, v in fit_options.items() if v is not None}, (width,))
        per_step = fit_inputs.step_batch(page.doc(fit_ref), fit_options.get("mode"))
        step = padmod.step_time_s(f.c_s, f.a_s_per_token, f.b_s_per_token2, width)
        values.update(
            {
                "step_s": step,
                "epoch_s": padmod.epoch_saving_s(naive["rows"], 0, per_step, step),
                "saving_s": padmod.epoch_saving_s(naive["rows"], picked["rows"], per_step, step),
            }
        )
        # the fit's interval of the step at this width, scaled by the exact rows per step (epoch_saving_s is linear)
        step_ci = f.ci.get(f"step_s:{fit_inputs.width_key(width)}")
        spans = {
            "step": step_ci,
            "epoch": intervals.scaled(step_ci, padmod.epoch_saving_s(naive["rows"], 0, per_step, 1.0)),
            "saving": intervals.scaled(step_ci, padmod.epoch_saving_s(naive["rows"], picked["rows"], per_step, 1.0)),
        }
        evidence += (fit_ref.id,)
        what += (
            f"; step at width {width:g} from the fit of {fit_ref.alias} ({fit_ref.short}), "
            f"{per_step:g} rows per step: (rows naive − rows bucketed) / rows per step × step"
            + ("; 95% interval: the fit's bootstrap of the step at this width" if step_ci else "")
        )
    return PaddingView(
        values, evidence, what, f"padding({call_text(ref.alias, bucket=bucket)})", notes, intervals=spans
    )


def _padding_fit(page: Page, ref: EvidenceRef, doc: dict[str, Any], fit: Any) -> EvidenceRef | None:
    named = doc["params"].get("fit")
    if fit is not None:
        fit_ref = page.ref(fit, "step-scaling", "padding() fit")
        if named and not fit_ref.id.startswith(named):
            raise ProbebookError(
                f"padding(): {ref.alias} was measured with --fit {named}, but fit={fit_ref.alias} is {fit_ref.short}"
            )
        return fit_ref
    if not named:
        return None
    matches = [i for i in page.library.docs if i.startswith(named)]
    if len(matches) != 1:
        raise ProbebookError(f"padding(): {ref.alias}'s --fit {named} names {len(matches)} evidence in the archive")
    return EvidenceRef(f"{ref.alias}.fit", matches[0], page.library.docs[matches[0]]["probe"])


@page_function
def mask_cost(page: Page, ref: Any, kind: str = "padded") -> MaskView:
    """Median step time of mask ``kind`` against ``causal`` (``.slowdown``); for ``padded``, the padding share
    of its batch (the loss positions the mask drops)."""
    ref = page.ref(ref, "mask", "mask_cost()")
    doc, rows = page.doc(ref), page.rows(ref)
    what = f"mask_cost(): {ref.alias} ({ref.short})"
    medians = padmod.mask_step_medians(rows)
    step, causal = (_median_step(medians, rows, k, what) for k in (kind, "causal"))
    observed = doc["data"].get("observed", {}).get("kinds", {})
    steps = doc["params"].get("steps")

    def attention_s(k: str) -> float | None:
        rows = observed.get(k, {}).get("attention_kernels") or []
        return kernels.kernel_seconds_per_step(rows, steps) if rows else None

    batches = doc["data"].get("batches", {})
    padded = batches.get("padded", {})
    values = {
        "step_s": step,
        "causal_s": causal,
        "slowdown": padmod.slowdown(step, causal),
        "padding_share": padmod.padded_batch_share(padded["lengths"], padded["width"]) if padded else None,
        "window": batches.get("sliding", {}).get("window"),
        "attention_s": attention_s(kind),
        "causal_attention_s": attention_s("causal"),
    }
    samples = padmod.mask_step_samples(rows)
    ratio = intervals.ratio_interval(samples[kind], samples["causal"])
    spans = {  # the kinds' rounds resampled apart (paired() keeps their pairing by round)
        "step": intervals.median_interval(samples[kind]),
        "causal_step": intervals.median_interval(samples["causal"]),
        "slowdown": None if ratio is None else (ratio[0] - 1.0, ratio[1] - 1.0),
    }
    return MaskView(
        values,
        (ref.id,),
        f"mask {kind} against is_causal: median step_s over interleaved rounds, slowdown = {kind} / causal − 1; "
        "padding share = 1 − Σ lengths / (batch × width) of the padded batch; attention = device time of the "
        "attention kernels per profiled step",
        f"mask_cost({call_text(ref.alias, kind)})",
        {
            "padding_share": "no padded batch in this evidence",
            "attention": "no attention kernels recorded (a CPU run has none)",
            "causal_attention": "no attention kernels recorded (a CPU run has none)",
        },
        intervals=spans,
    )


def _median_step(medians: dict[str, float], rows: list[dict[str, Any]], kind: str, what: str) -> float:
    """One mask kind's median ``step_s``, or the one-line refusal that names the kinds the rows hold."""
    if kind not in medians:
        kinds = ", ".join(sorted({str(r.get("kind")) for r in rows}))
        raise ProbebookError(f"{what}: no step_s samples of kind {kind!r} (kinds: {kinds})")
    return medians[kind]
