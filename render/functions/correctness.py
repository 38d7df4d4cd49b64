"""Page functions of the correctness records: agreement, hvp, hvp_speedup, stream (ARCHITECTURE.md §Pages).

Plain functions registered by ``render.functions.registry.page_function``, each called with the page first; the
derivations are in ``render/derive/correctness.py``.

* ``agreement(ref, arm)``: ``.loss .logits .grads`` (relative L2 against the fp32 eager reference),
  ``.noise_loss .noise_logits .noise_grads`` (the reference against itself), ``.limit_loss ...`` (the
  stated limit), ``.grads_times_noise``, ``.grads_cosine .grads_sign .grads_max_abs``, ``.passed`` (1 or 0).
* ``hvp(ref, method, mode, dtype, batch)``, or ``hvp(ref, dtype=..., selected=True)`` for the probe's
  selection: ``.warm .first_call .compile`` (first call minus a warm one) ``.first_peak .warm_peak .tok_s .error``;
  against the fp32 reference (hvp v2): ``.vhv .vhv_fp32 .vhv_error .error_fp32 .angle .curvature_share
  .direction_share .tolerance .within`` (1 when the candidate's verdict is within tolerance, else 0).
* ``hvp_epoch(ref, method, mode, dtype, batch)`` (or ``selected=True``): a candidate's accuracy over an epoch of
  data batches (hvp v4, ``--epoch-batches N``): ``.batches``; ``.vhv_mean .vhv_sd .vhv_min .vhv_max`` (vᵀHv,
  nats), the same of ``.error_*`` (relative L2 against float64), ``.error_fp32_*`` and ``.vhv_error_*`` (relative
  error of vᵀHv against fp32); ``.agree .within .sign``: shares of the batches whose verdict is the timed batch's,
  is within tolerance, whose sign agrees. Their spread is across the run's batches, not sessions.
* ``hvp_speedup(ref, slow, fast, ...)``: warm time of candidate ``slow`` over that of ``fast``, where
  each is a method name or ``eager``/``compiled`` and the rest of the key is shared.
* ``stream(ref, arm)``: ``.step .tok_s .stall .stall_share .layer_copy .layer_grad_copy``.
* ``utilisation(ref, tokens)``: NVML over the timed windows at one shape: ``.sm_clock_min .sm_clock
  .clock_sag`` (below the card's maximum SM clock) ``.power_max .power .power_limit .temperature_max
  .sm_util .mem_util .windows .readings``.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeGuard

from measure.errors import ProbebookError
from render.derive import basis, correctness, intervals
from render.derive import utilisation as utilmod
from render.functions.page import Page
from render.functions.registry import page_function
from render.functions.views import EvidenceRef, FieldView, call_text, number, quantity
from render.numbers.links import field_anchor, machine_anchor, rows_anchor

if TYPE_CHECKING:
    from render.numbers.quantity import Quantity

_REL = {"fmt": ".2e"}
_ONE_RUN = {"basis": basis.OBSERVED}
"""An agreement arm's figures are one batch's numerical errors against the reference, one run each: readings,
not estimates from windows. Its limits are the tolerances the probe stated, and ``passed`` is the test's verdict."""


class AgreementView(FieldView):
    FIELDS = {
        "loss": ("loss_rel_l2", "", {**_REL, **_ONE_RUN}),
        "logits": ("logits_rel_l2", "", {**_REL, **_ONE_RUN}),
        "grads": ("grads_rel_l2", "", {**_REL, **_ONE_RUN}),
        "noise_loss": ("loss_noise", "", {**_REL, **_ONE_RUN}),
        "noise_logits": ("logits_noise", "", {**_REL, **_ONE_RUN}),
        "noise_grads": ("grads_noise", "", {**_REL, **_ONE_RUN}),
        "limit_loss": ("loss_limit", "", {**_REL, "exact": True}),
        "limit_logits": ("logits_limit", "", {**_REL, "exact": True}),
        "limit_grads": ("grads_limit", "", {**_REL, "exact": True}),
        "loss_times_noise": ("loss_times_noise", "", {"fmt": ".3g", **_ONE_RUN}),
        "grads_times_noise": ("grads_times_noise", "", {"fmt": ".3g", **_ONE_RUN}),
        "grads_cosine": ("grads_cosine", "", {"fmt": ".8f", **_ONE_RUN}),
        "grads_sign": ("grads_sign", "", {"fmt": ".4%", **_ONE_RUN}),
        "grads_max_abs": ("grads_max_abs", "", {**_REL, **_ONE_RUN}),
        "floor": ("floor", "", {**_REL, **_ONE_RUN}),
        "passed": ("passed", "", {"fmt": "d", "basis": basis.TEST}),
    }
    TEMPLATE_ATTRS = frozenset(FIELDS)


class UtilisationView(FieldView):
    # the lowest clock and the highest power or temperature are readings (observed); a median of the windows'
    # medians carries the windows' bootstrap interval (render.derive.utilisation.window_intervals), and says why
    # not where there are fewer than 3 windows; the counts are exact
    FIELDS = {
        "sm_clock_min": ("sm_clock_mhz_min", "MHz", {"fmt": ".0f", "basis": basis.OBSERVED}),
        "sm_clock": ("sm_clock_mhz_median", "MHz", {"fmt": ".0f", "basis": basis.FEW}),
        "clock_sag": ("clock_sag", "", {"fmt": ".1%", "basis": basis.OBSERVED}),
        "power_max": ("power_w_max", "W", {"fmt": ".0f", "basis": basis.OBSERVED}),
        "power": ("power_w_median", "W", {"fmt": ".0f", "basis": basis.FEW}),
        "power_limit": ("power_limit_w", "W", {"fmt": ".0f", "basis": basis.OBSERVED}),
        "temperature_max": ("temperature_c_max", "°C", {"fmt": ".0f", "basis": basis.OBSERVED}),
        "sm_util": ("sm_util_pct_median", "%", {"fmt": ".0f", "basis": basis.FEW}),
        "mem_util": ("mem_util_pct_median", "%", {"fmt": ".0f", "basis": basis.FEW}),
        "windows": ("windows", "", {"fmt": "d", "exact": True}),
        "readings": ("readings", "", {"fmt": "d", "exact": True}),
    }
    TEMPLATE_ATTRS = frozenset(FIELDS)


_ONE_RUN = {"basis": basis.OBSERVED}  # one run's numerical result or error: no repeated windows to resample


class HvpView(FieldView):
    # warm times carry their windows' interval (window_spans), else say there were too few; a first call is one
    # window, a peak and a numerical error are one run's readings; the batch and tolerance are params, and the
    # within-tolerance flag is the probe's test verdict
    FIELDS = {
        "warm": ("warm_median_s", "s", {"display": "ms", "fmt": ".4g", "basis": basis.FEW}),
        "first_call": ("first_call_s", "s", {"fmt": ".3g", "basis": basis.FEW}),
        "compile": ("first_call_extra_s", "s", {"fmt": ".3g", "basis": basis.FEW}),
        "first_peak": ("first_peak_bytes", "B", {"display": "GiB", "fmt": ".3g", **_ONE_RUN}),
        "warm_peak": ("warm_peak_bytes", "B", {"display": "GiB", "fmt": ".3g", **_ONE_RUN}),
        "tok_s": ("tok_s", "tok/s", {"fmt": ".3g", "basis": basis.FEW}),
        "error": ("rel_l2_vs_float64", "", {**_REL, **_ONE_RUN}),
        "batch": ("batch", "", {"fmt": "d", "exact": True}),
        # the quadratic form against the fp32 reference (hvp v2, measure/curvature.py)
        "vhv": ("vhv_nats", "nats", {"fmt": ".4g", **_ONE_RUN}),
        "vhv_fp32": ("reference_vhv_nats", "nats", {"fmt": ".4g", **_ONE_RUN}),
        "vhv_error": ("vhv_rel_error", "", {"fmt": ".2%", **_ONE_RUN}),
        "error_fp32": ("rel_l2_vs_fp32", "", {**_REL, **_ONE_RUN}),
        "angle": ("angle_deg_vs_fp32", "°", {"fmt": ".3g", **_ONE_RUN}),
        "curvature_share": ("curvature_share_vs_fp32", "", {"fmt": ".2%", **_ONE_RUN}),
        "direction_share": ("direction_share_vs_fp32", "", {"fmt": ".2%", **_ONE_RUN}),
        "tolerance": ("tolerance", "", {"fmt": ".0%", "exact": True}),
        "within": ("within_tolerance", "", {"fmt": "d", "basis": basis.TEST}),
    }
    TEMPLATE_ATTRS = frozenset(FIELDS)

    def __getattr__(self, name: str) -> Quantity:
        q = super().__getattr__(name)
        if name in ("warm", "tok_s") and q.uncertainty is None and len(self._values.get("warm_times_s") or []) >= 3:
            # windows enough, but their median is not the one the summary reports: shown as recorded
            return replace(q, basis=basis.RECORDED)
        return q


_RECORDED = {"basis": basis.RECORDED}


def _epoch_fields() -> dict[str, tuple[str, str, dict[str, Any]]]:
    units = {"vhv": ("nats", ".4g"), "error": ("", ".2e"), "error_fp32": ("", ".2e"), "vhv_error": ("", ".2%")}
    fields: dict[str, tuple[str, str, dict[str, Any]]] = {"batches": ("batches", "", {"fmt": "d", "exact": True})}
    for name in correctness.EPOCH_SPREADS:
        unit, fmt = units[name]
        for stat in ("mean", "sd", "min", "max"):
            fields[f"{name}_{stat}"] = (f"{name}_{stat}", unit, {"fmt": fmt, **_ONE_RUN})
    for name in correctness.EPOCH_SHARES:
        fields[name] = (name, "", {"fmt": ".0%", "basis": basis.TEST})
    return fields


class HvpEpochView(FieldView):
    # statistics of one run's readings over its epoch of data batches, as the probe recorded them: their spread is
    # across batches, not sessions (the derivation says so), so none carries an interval; the shares count checks
    FIELDS = _epoch_fields()
    TEMPLATE_ATTRS = frozenset(FIELDS)


class StreamView(FieldView):
    # each figure is the arm's summary as the probe recorded it, with an interval where its windows are stored and
    # reproduce it (stream()): the rounds for the step, the observed steps' visits for the stall and the copies;
    # the stall share's per-step step times are not stored
    FIELDS = {
        "step": ("median_step_s", "s", {"display": "ms", "fmt": ".4g", **_RECORDED}),
        "tok_s": ("tok_s", "tok/s", {"fmt": ".3g", **_RECORDED}),
        "stall": ("stall_s", "s", {"display": "ms", "fmt": ".3g", **_RECORDED}),
        "stall_share": ("stall_share", "", {"fmt": ".1%", **_RECORDED}),
        "layer_copy": ("layer_copy_s", "s", {"display": "ms", "fmt": ".3g", **_RECORDED}),
        "layer_grad_copy": ("layer_grad_copy_s", "s", {"display": "ms", "fmt": ".3g", **_RECORDED}),
        # counted from the arm's visit rows and params.block_weight_bytes (correctness.stream_moved): exact; the
        # rate is those bytes over the step, its interval the step's (stream())
        "loads": ("loads_per_step", "", {"fmt": "d", "exact": True}),
        "stores": ("stores_per_step", "", {"fmt": "d", "exact": True}),
        "bytes": ("bytes_per_step", "B", {"fmt": ".3g", "exact": True}),
        "rate": ("bytes_per_s", "B/s", {"display": "GB/s", "fmt": ".3g", **_RECORDED}),
    }
    TEMPLATE_ATTRS = frozenset(FIELDS)


@page_function
def agreement(page: Page, ref: Any, arm: str) -> AgreementView:
    """An agreement arm against the fp32 eager reference: relative L2 per quantity, noise floor, limit."""
    ref = page.ref(ref, "agreement", "agreement()")
    try:
        values = correctness.agreement_arm(page.data(ref), str(arm))
    except ProbebookError as exc:
        raise ProbebookError(f"agreement(): {ref.alias} ({ref.short}): {exc}") from None
    notes = {"logits": "the arm makes no full logits", "limit_logits": "the arm makes no full logits"}
    notes.update({f"{q}_times_noise": "the noise floor is zero" for q in ("loss", "grads")})
    what = f"agreement arm {arm} against fp32 eager, one batch, float64 sums"
    return AgreementView(values, (ref.id,), what, f"agreement({ref.alias}, {arm})", notes)


def _candidate(page: Page, ref: EvidenceRef, method: str, mode: str, dtype: str, batch: Any, selected: bool) -> Any:
    data = page.data(ref)
    if selected:
        return correctness.hvp_selected(data, dtype)
    return correctness.Candidate(method, mode, dtype, int(number(batch, "batch")))


def _read_candidate(
    page: Page,
    ref: EvidenceRef,
    name: str,
    read: Callable[[dict[str, Any], correctness.Candidate], dict[str, Any]],
    pick: tuple[str, str, str, Any, bool],
) -> tuple[Any, dict[str, Any]]:
    """The candidate ``pick`` names (method, mode, dtype, batch, selected) and what ``read`` takes from the run for
    it; a refusal names the page function ``name`` and the evidence."""
    try:
        which = _candidate(page, ref, *pick)
        return which, read(page.data(ref), which)
    except ProbebookError as exc:
        raise ProbebookError(f"{name}(): {ref.alias} ({ref.short}): {exc}") from None


@page_function
def hvp(
    page: Page,
    ref: Any,
    method: str = "double-backward",
    mode: str = "eager",
    dtype: str = "bf16",
    batch: Any = 1,
    selected: bool = False,
) -> HvpView:
    """One H·v candidate's cost and error; ``selected=True``: the probe's selected setting for ``dtype``."""
    ref = page.ref(ref, "hvp", "hvp()")
    which, values = _read_candidate(page, ref, "hvp", correctness.hvp_candidate, (method, mode, dtype, batch, selected))
    what = f"H·v by {which.method}, {which.mode}, {which.dtype}, batch {which.batch}"
    key = (
        f"hvp({ref.alias}, selected, {dtype})"
        if selected
        else f"hvp({call_text(ref.alias, method, mode, dtype, which.batch)})"
    )
    median = values.get("warm_median_s")
    warm = reported_windows(values.get("warm_times_s"), median)
    spans, recipes = window_spans(warm, median, values.get("tok_s"), f"{ref.id}|hvp {which}", "warm")
    return HvpView(
        values, (ref.id,), what, key, landing=_candidate_rows(page, ref, which), intervals=spans, resamples=recipes
    )


@page_function
def hvp_epoch(
    page: Page,
    ref: Any,
    method: str = "double-backward",
    mode: str = "eager",
    dtype: str = "bf16",
    batch: Any = 1,
    selected: bool = False,
) -> HvpEpochView:
    """One H·v candidate's accuracy over the run's epoch of data batches (hvp v4, ``--epoch-batches``)."""
    ref = page.ref(ref, "hvp", "hvp_epoch()")
    pick = (method, mode, dtype, batch, selected)
    which, values = _read_candidate(page, ref, "hvp_epoch", correctness.hvp_epoch, pick)
    what = (
        f"H·v by {which}: {values['batches']} data batches, same weights and v; spread {values['basis']}"
        if values.get("basis")
        else f"H·v by {which}: {values['batches']} data batches"
    )
    key = (
        f"hvp_epoch({ref.alias}, selected, {dtype})"
        if selected
        else f"hvp_epoch({call_text(ref.alias, method, mode, dtype, which.batch)})"
    )
    # a spread of no values (a zero reference leaves vᵀHv's relative error undefined), or one value's SD
    notes = {
        name: "no batch of the epoch recorded it" if name.endswith("_mean") else "fewer than 2 batches recorded it"
        for name, (source, _, _) in HvpEpochView.FIELDS.items()
        if values.get(source) is None
    }
    return HvpEpochView(values, (ref.id,), what, key, notes=notes, landing=_epoch_rows(page, ref, which))


def _epoch_rows(page: Page, ref: EvidenceRef, which: correctness.Candidate) -> dict[str, str]:
    """Each epoch field's place on the evidence page: the candidate's ``epoch`` entry it is read from."""
    candidates = page.data(ref).get("candidates") or []
    wanted = (which.method, which.mode, which.dtype, which.batch)
    at = [
        i
        for i, c in enumerate(candidates)
        if (c.get("method"), c.get("mode"), c.get("dtype"), c.get("batch")) == wanted
    ]
    if not at:
        return {}
    doc, base = page.doc(ref), f"data.candidates.{at[0]}.epoch"
    out = {"batches": field_anchor(doc, f"{base}.batches")}
    for name, field in correctness.EPOCH_SPREADS.items():
        for stat in ("mean", "sd", "min", "max"):
            out[f"{name}_{stat}"] = field_anchor(doc, f"{base}.{field}.{stat}")
    for name, field in correctness.EPOCH_SHARES.items():
        out[name] = field_anchor(doc, f"{base}.{field}")
    return out


def reported_windows(times: Any, reported: Any) -> list[float]:
    """The windows (s) a summary's median was taken over, where their median is the one it reports (else none:
    an interval of other windows would not be the reported number's)."""
    if not isinstance(times, list) or not times or not all(_positive(t) for t in times) or not _positive(reported):
        return []
    return [float(t) for t in times] if math.isclose(statistics.median(times), reported, rel_tol=1e-9) else []


def window_spans(
    times: list[float], reported: Any, rate: Any, key: str, name: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``name``'s interval and recipe (a bootstrap of its windows ``times``, the rows ``key`` names), and those of
    ``tok_s`` (``rate``: the step's tokens over the reported median, so its interval is those tokens over the
    median's); empty without windows."""
    if not times:
        return {}, {}
    spans: dict[str, Any] = {name: intervals.median_interval(times)}
    recipes: dict[str, Any] = {name: intervals.median_recipe(times, key)}
    if spans[name] is not None and _positive(rate):
        tokens = rate * reported
        spans["tok_s"] = intervals.reciprocal(spans[name], tokens)
        recipes["tok_s"] = ("reciprocal", tokens, recipes[name]) if recipes[name] else None
    return spans, recipes


def _candidate_rows(page: Page, ref: EvidenceRef, which: correctness.Candidate) -> dict[str, str]:
    """Each H·v field's row in its evidence page's "Other data" (``data.candidates.<i>.<field>``); a derived one
    (the compile time, the reference's vᵀHv) lands on the candidate's warm time."""
    candidates = page.data(ref).get("candidates") or []
    wanted = (which.method, which.mode, which.dtype, which.batch)
    found = [
        i
        for i, c in enumerate(candidates)
        if (c.get("method"), c.get("mode"), c.get("dtype"), c.get("batch")) == wanted
    ]
    if not found:
        return {}
    i, doc = found[0], page.doc(ref)
    out = {
        name: field_anchor(doc, f"data.candidates.{i}.{source if source in candidates[i] else 'warm_median_s'}")
        for name, (source, _, _) in HvpView.FIELDS.items()
    }
    # the reference's vᵀHv is the fp32 reference's own row at this batch (correctness.reference_vhv), and the
    # verdict the within-tolerance flag is read from is the candidate's
    references = page.data(ref).get("references") or []
    at = [j for j, r in enumerate(references) if isinstance(r, dict) and r.get("batch") == which.batch]
    if at:
        out["vhv_fp32"] = field_anchor(doc, f"data.references.{at[0]}.fp32.vhv_nats")
    if "verdict" in candidates[i]:
        out["within"] = field_anchor(doc, f"data.candidates.{i}.verdict")
    return out


@page_function
def hvp_speedup(
    page: Page, ref: Any, slow: str, fast: str, method: str = "double-backward", dtype: str = "bf16", batch: Any = 1
) -> Quantity:
    """Warm H·v time of ``slow`` over ``fast``: two methods (eager), or ``eager`` over ``compiled`` (one method)."""
    ref = page.ref(ref, "hvp", "hvp_speedup()")
    b = int(number(batch, "batch"))
    modes = ("eager", "compiled")

    def key(x: str) -> correctness.Candidate:
        return correctness.Candidate(method if x in modes else x, x if x in modes else "eager", dtype, b)

    data = page.data(ref)
    try:
        slow_c, fast_c = correctness.hvp_candidate(data, key(slow)), correctness.hvp_candidate(data, key(fast))
        value = correctness.speedup(slow_c["warm_median_s"], fast_c["warm_median_s"])
    except ProbebookError as exc:
        raise ProbebookError(f"hvp_speedup(): {ref.alias} ({ref.short}): {exc}") from None
    return quantity(
        value,
        "",
        ref,
        f"warm median H·v time of {key(slow)} / that of {key(fast)}; 95% interval: the two candidates' warm windows "
        f"resampled apart ({intervals.RESAMPLES:,} resamples)",
        f"hvp_speedup({call_text(ref.alias, slow, fast, *([method] if slow in modes else []), dtype, b)})",
        fmt=".3g",
        order=(fast, slow) if value >= 1 else (slow, fast),
        uncertainty=intervals.ratio_interval(
            reported_windows(slow_c.get("warm_times_s"), slow_c.get("warm_median_s")),
            reported_windows(fast_c.get("warm_times_s"), fast_c.get("warm_median_s")),
        ),
    )


@page_function
def stream(page: Page, ref: Any, arm: str = "streamed-d1") -> StreamView:
    """One stream arm: median step, tokens/s, compute-stream stall and its share, per-layer copy times."""
    ref = page.ref(ref, "stream", "stream()")
    try:
        values = correctness.stream_arm(page.data(ref), str(arm))
    except ProbebookError as exc:
        raise ProbebookError(f"stream(): {ref.alias} ({ref.short}): {exc}") from None
    no_events = "this arm records no per-layer events"
    notes = dict.fromkeys(("stall", "stall_share", "layer_copy", "layer_grad_copy"), no_events)
    notes.update(dict.fromkeys(("loads", "stores", "bytes", "rate"), no_events))
    # recounted from the rows, so a v1 run (which recorded no counts) shows them too
    block = (page.doc(ref).get("params") or {}).get("block_weight_bytes")
    moved = correctness.stream_moved(page.rows(ref), str(arm), block)
    if moved is not None and moved["bytes_per_step"] is None:
        notes.update(dict.fromkeys(("bytes", "rate"), "the run records no block size (params.block_weight_bytes)"))
    values = {**values, **(moved or {})}
    step = values.get("median_step_s")
    if moved is not None and moved["bytes_per_step"] is not None and _positive(step):
        values["bytes_per_s"] = correctness.bytes_per_s(moved["bytes_per_step"], step)
    what = f"stream arm {arm}: median of interleaved rounds; stall and copies: median of observed steps"
    spans, recipes, bases = page.library.memo(
        ("stream intervals", ref.id, str(arm)), lambda: _stream_spans(page.rows(ref), str(arm), values, ref.id)
    )
    # each figure is the arm's own summary row on the evidence page's "Other data" (data.arms.<i>.<field>)
    arms = page.data(ref).get("arms") or []
    i = next(j for j, a in enumerate(arms) if isinstance(a, dict) and a.get("arm") == arm)
    doc = page.doc(ref)
    landing = {name: field_anchor(doc, f"data.arms.{i}.{source}") for name, (source, _, _) in StreamView.FIELDS.items()}
    # the counts are recounted from the arm's visit rows: they land there, whether or not the probe recorded them
    seen = rows_anchor(
        j
        for j, r in enumerate(page.rows(ref))
        if isinstance(r, dict) and r.get("kind") == "visit" and r.get("arm") == arm
    )
    landing.update(dict.fromkeys(("loads", "stores", "bytes", "rate"), seen))
    return StreamView(
        values,
        (ref.id,),
        what,
        f"stream({ref.alias}, {arm})",
        notes,
        landing,
        intervals=spans,
        resamples=recipes,
        bases=bases,
    )


def _stream_spans(
    rows: list[dict[str, Any]], arm: str, values: dict[str, Any], ident: str
) -> tuple[dict[str, Any], dict[str, Any], dict[str, str]]:
    """A stream arm's intervals, recipes and bases: the step's and tokens/s from its interleaved rounds, the stall's
    and copies' from its observed steps' visits (``correctness.stream_step_windows``), each only where the windows
    reproduce the recorded median; ``few windows`` where they do, under 3 of them."""
    rounds = [
        r["step_s"]
        for r in rows
        if isinstance(r, dict) and r.get("arm") == arm and r.get("kind") == "round" and _positive(r.get("step_s"))
    ]
    step = values.get("median_step_s")
    spans, recipes = window_spans(
        reported_windows(rounds, step), step, values.get("tok_s"), f"{ident}|stream rounds of {arm}", "step"
    )
    moved = values.get("bytes_per_step")
    if spans.get("step") is not None and _positive(moved):  # the bytes are exact: the rate's spread is the step's
        spans["rate"] = intervals.reciprocal(spans["step"], moved)
        recipes["rate"] = ("reciprocal", moved, recipes["step"]) if recipes.get("step") else None
    for name, observed in correctness.stream_step_windows(rows, arm).items():
        source = StreamView.FIELDS[name][0]
        found = reported_windows(observed, values.get(source))
        if found:
            spans[name] = intervals.median_interval(found)
            recipes[name] = intervals.median_recipe(found, f"{ident}|stream {source} of {arm}")
    bases = {name: basis.FEW for name, ci in spans.items() if ci is None}  # windows found, under 3 of them
    return spans, recipes, bases


def _positive(x: Any) -> TypeGuard[float]:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0


@page_function
def utilisation(page: Page, ref: Any, tokens: Any) -> UtilisationView:
    """NVML clocks, power and utilisation over the timed windows at ``tokens`` (a ``--utilisation`` run)."""
    ref = page.ref(ref, None, "utilisation()")
    doc = page.doc(ref)
    t = int(number(tokens, "tokens"))
    machine = doc.get("machine") or {}
    try:
        values = utilmod.window_summary(page.rows(ref), t)
        top = machine.get("sm_clock_max_mhz")
        values["clock_sag"] = utilmod.clock_sag(values, float(top)) if top else None
    except ProbebookError as exc:
        raise ProbebookError(f"utilisation(): {ref.alias} ({ref.short}): {exc}") from None
    values["power_limit_w"] = machine.get("power_limit_w")
    notes = {"clock_sag": "the evidence's machine has no maximum SM clock"}
    notes["power_limit"] = "the evidence's machine has no power limit"
    what = f"NVML over the timed windows at {t} tokens: lowest, highest, or median of window medians"
    windows = rows_anchor(i for i, r in enumerate(page.rows(ref)) if isinstance(r, dict) and r.get("tokens") == t)
    landing = dict.fromkeys(UtilisationView.FIELDS, windows)  # the windows at t; the limit on its machine row
    landing["power_limit"] = machine_anchor("power_limit_w")
    spans = utilmod.window_intervals(page.rows(ref), t)
    named = {view: spans.get(source) for view, (source, _, _) in UtilisationView.FIELDS.items()}
    return UtilisationView(values, (ref.id,), what, f"utilisation({ref.alias}, {t})", notes, landing, named)
