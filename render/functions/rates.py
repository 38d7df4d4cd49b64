"""The page functions of what a measured rate gives: ``project`` (the time, GPU-hours and energy of training at it),
``nominal`` (a typed count a projection may take, labelled so) and ``mfu`` (model FLOPs utilisation at it).

Each takes a tokens/s ``Quantity`` another page function read from evidence (``render.functions.general``'s
``value``, ``median``; ``fit(...).asymptote``) and carries its interval through a pure derivation in
``render.derive`` (``project``, ``mfu``, ``energy``). README.md's table of page functions says what each gives.
"""

from __future__ import annotations

import warnings
from typing import Any

from measure.errors import ProbebookError
from render.derive import basis, intervals, peaks, reading, workload
from render.derive import energy as energymod
from render.derive import mfu as mfumod
from render.derive import nominal as nominalmod
from render.derive import project as projmod
from render.functions.page import Page
from render.functions.registry import page_function
from render.functions.views import ProjectionView, defined, number, quantity
from render.numbers import claims, leases
from render.numbers.propagation import propagated
from render.numbers.quantity import Quantity
from render.numbers.units import conversion_factor


def _suppressed_peak(gpu: str | None) -> peaks.Peak:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", peaks.UnknownGPUWarning)  # an unknown GPU is reported as an error below
        return peaks.lookup(gpu)


@page_function
def project(
    page: Page,
    rate: Quantity,
    params: Any,
    tokens_per_param: Any = projmod.TOKENS_PER_PARAM,
    batch_tokens: Any = None,
    gpus: int = 1,
    joules_per_token: Quantity | None = None,
) -> ProjectionView:
    """Training time of ``params`` parameters at the measured ``rate`` (a tokens/s Quantity); with
    ``joules_per_token`` (``energy(ev).per_token``), ``.energy`` in kWh beside ``.gpu_hours``."""
    tok_s = _rate(rate, "tok/s", "project()")
    if isinstance(params, Quantity):  # a recorded count (batch_summary(...).params, params(ev).total) or nominal()
        if params.value is None or params.unit or not params.exact:
            raise ProbebookError(
                f"project(): params {params.key} is not a parameter count; pass batch_summary(...).params, "
                'params(ev).total or nominal(x, "why")'
            )
        p = float(params.value)
    else:
        p = number(params, "params")
    labelled = isinstance(params, Quantity) and params.mark == NOMINAL
    if not isinstance(params, Quantity):  # typed: comparable only with the measured count the evidence records
        recorded: dict[int, str] = {}
        for ident in rate.evidence:
            for count, where in nominalmod.recorded_counts(page.library.docs[ident]).items():
                recorded.setdefault(count, f"{where}, evidence {ident[:19]}")
        refused = nominalmod.nominal_count(p, recorded)
        if refused and (claims.on_superseded_page() or not claims.checking()):
            labelled = True  # a superseded version keeps the count it published, marked nominal, never refused
        elif refused:
            raise ProbebookError(
                f"project(): params {params!r}: {refused}; pass the recorded count (batch_summary(...).params, "
                f'params(ev).total) or label it nominal({params!r}, "why")'
            )
    bt = None if batch_tokens is None else int(number(batch_tokens, "batch_tokens"))
    proj = projmod.project(p, tok_s, float(number(tokens_per_param, "tokens_per_param")), bt, gpus)
    nominal_words = _nominal_words(params) if labelled else ""
    # The rate's interval reaches every time the projection gives: each is a constant over R (T = tokens / R).
    rate_ci = intervals.scaled(rate.uncertainty, conversion_factor(rate.unit, "tok/s"))
    spans = {
        "time": intervals.reciprocal(rate_ci, proj.tokens),
        "gpu_hours": intervals.reciprocal(rate_ci, proj.tokens / 3600.0 * proj.gpus),
        "per_billion_tokens": intervals.reciprocal(rate_ci, 1e9),
    }
    values: dict[str, Any] = {
        **vars(proj),
        ProjectionView.RATE_BASIS: rate.stated_basis,
        ProjectionView.NOMINAL: labelled,
    }
    # a recorded count (batch_summary(...).params) cites its evidence too
    evidence = tuple(dict.fromkeys(rate.evidence + (params.evidence if isinstance(params, Quantity) else ())))
    if joules_per_token is not None:
        per_token = _rate(joules_per_token, "J/tok", "project() joules_per_token")
        values["energy_kwh"] = energymod.projected_energy(proj.tokens, per_token)["kwh"]
        # tokens are exact arithmetic on the page's inputs: the energy's interval is the joules per token's, scaled
        spans["energy"] = intervals.scaled(
            intervals.scaled(joules_per_token.uncertainty, conversion_factor(joules_per_token.unit, "J/tok")),
            proj.tokens / energymod.J_PER_KWH,
        )
        evidence = tuple(dict.fromkeys(evidence + joules_per_token.evidence))
    what = (
        f"T = k·P / R with P={reading.general(p)}{nominal_words}, k={reading.general(proj.tokens_per_param)}, "
        f"R={rate.text} ({rate.derivation})"
        + (f", {gpus} GPUs" if gpus != 1 else "")
        + (f", {bt} tokens per update" if bt else "")
        + (
            f"; energy = tokens × {joules_per_token.text} ({joules_per_token.derivation})"
            if joules_per_token is not None
            else ""
        )
    )
    return ProjectionView(
        values,
        evidence,
        what,
        f"project({rate.key}, {reading.exact(p)})",
        {"updates": "no batch_tokens given", "energy": "no joules_per_token given"},
        intervals=spans,
        bases={} if joules_per_token is None or spans["energy"] else {"energy": joules_per_token.stated_basis},
    )


def _nominal_words(params: Any) -> str:
    """What a projection's derivation says of a nominal count: the reason it was labelled with, or that it was
    typed on a version since superseded."""
    if isinstance(params, Quantity):
        return f" ({params.derivation})"
    return " (nominal, typed on a version since superseded; the evidence records the measured count)"


NOMINAL = "nominal"
"""The mark a ``nominal()`` number carries, on the page and in its ledger row."""


@page_function
def nominal(page: Page, x: Any, why: str) -> Quantity:
    """A typed value labelled nominal (``nominal("500M", "the preset's name")``): where evidence records the
    measured one, a derivation refuses a typed value unless it is labelled so (``render.derive.nominal``)."""
    defined(x)
    if not isinstance(why, str) or not why.strip():
        raise ProbebookError('nominal() needs a reason in words, e.g. nominal("500M", "the preset\'s name")')
    v = projmod.parse_count(x, "nominal()") if isinstance(x, str) else number(x, "nominal()")
    return Quantity(
        value=v,
        unit="",
        fmt=".3g",
        derivation=f"nominal, not measured: {why.strip()}",
        key=f"nominal({x!r})",
        exact=True,
        mark=NOMINAL,
    )


@page_function
def mfu(page: Page, rate: Quantity, flops_per_token: Any = None, peak: Quantity | None = None) -> Quantity:
    """Model FLOPs utilisation at ``rate`` tokens/s against ``peak`` (a measured ceiling) or the datasheet.

    ``flops_per_token`` is the model's training FLOPs per token, e.g. the step-scaling probe's own
    ``value(sweep, "params.model_flops_per_token.2048")`` (PaLM's ``6N + 12·L·H·Q·T``, computed
    where the model's shapes are), or a plain number. Left out, it is what the rate's evidence recorded
    (``_recorded_flops``): frozen weights accounted for, never ``6·P_trainable`` (issue 27).
    """
    tok_s = _rate(rate, "tok/s", "mfu()")
    if flops_per_token is None:
        per_token, per_token_text = _recorded_flops(page, rate)
        evidence = rate.evidence
    elif isinstance(flops_per_token, Quantity):
        per_token, per_token_text = _rate(flops_per_token, "", "mfu() flops_per_token"), flops_per_token.key
        evidence = tuple(dict.fromkeys(rate.evidence + flops_per_token.evidence))
    else:
        defined(flops_per_token)
        per_token = number(flops_per_token, "mfu() flops_per_token")
        per_token_text, evidence = reading.general(per_token), rate.evidence
    achieved = mfumod.achieved_model_flop_s(tok_s, per_token)
    if peak is None:
        gpu = (page.library.docs[rate.evidence[0]].get("machine") or {}).get("gpu") if rate.evidence else None
        datasheet = _suppressed_peak(gpu)
        if not datasheet.known:
            raise ProbebookError(
                f"mfu(): no datasheet peak for GPU {gpu!r}; pass peak=gemm_ceiling(...) "
                "or add the GPU to render/derive/peaks.py"
            )
        peak_flop_s, against = datasheet.bf16_dense_flop_s, f"datasheet dense BF16 peak of {gpu}"
    else:
        peak_flop_s, against = _rate(peak, "FLOP/s", "mfu() peak"), f"{peak.text} ({peak.derivation})"
        evidence = tuple(dict.fromkeys(evidence + peak.evidence))
    value = mfumod.mfu(achieved, peak_flop_s)  # type: ignore[arg-type]
    interval, within, said = _mfu_interval(rate, peak, value)
    return quantity(
        value,
        "",
        evidence,
        f"MFU: {rate.text} × {per_token_text} model FLOPs/token / {against}{said}",
        f"mfu({rate.key})",
        fmt=".1%",
        uncertainty=interval,
        within=within,
        # without an interval, the rate's reason (and a measured peak's): a datasheet peak is a constant
        basis=basis.carried([rate.stated_basis] + ([peak.stated_basis] if peak is not None else [])),
    )


def _mfu_interval(
    rate: Quantity, peak: Quantity | None, value: float | None
) -> tuple[tuple[float, float] | None, tuple[float, float] | None, str]:
    """MFU's 95% interval, the ``within`` it keeps, and what its derivation adds. Against a datasheet peak (a
    constant) it is the rate's, scaled: where a new session lands, with the rate's windows' interval kept beside it.
    Against a measured peak it is a ratio of two rates: of one lease (``render.numbers.leases``), the two windows'
    intervals propagated, the session's movement cancelling; of different leases, their across-sessions intervals;
    relative errors in quadrature either way (``propagated``, the GUM's rule). None where the rate has no interval,
    the peak has none, or both stand on one document (they would need resampling jointly)."""
    if value is None or rate.value in (None, 0) or rate.uncertainty is None:
        return None, None, ""
    if peak is None:
        ratio = value / rate.value
        within = None if rate.within is None else intervals.scaled(rate.within, ratio)
        return intervals.scaled(rate.uncertainty, ratio), within, ""
    one = leases.shared((rate, peak))
    if one is None:
        return propagated("/", rate, peak, 1.0, value), None, ""
    interval = propagated("/", leases.within_view(rate), leases.within_view(peak), 1.0, value)
    return leases.carried(one, "", value, interval, "; 95% interval propagated to first order (GUM §5.1.2)")


def _recorded_flops(page: Page, rate: Quantity) -> tuple[float, str]:
    """The model FLOPs per token the rate's evidence recorded, and how the derivation names them.

    ``params.model_flops_per_token`` first (a number, or a map by sequence length with one entry): the probe's
    own count with attention; else ``params(ev).flops`` from the recorded parameter counts (``4·P_all +
    2·P_trainable``, ``render.derive.workload``: dense matmuls only, for a plug-in without attention shapes).
    Evidence that records neither, or pieces of evidence that disagree, are refused: pass ``flops_per_token``.
    """
    found: dict[float, str] = {}
    for ident in dict.fromkeys(rate.evidence):
        doc = page.library.docs[ident]
        short, params_ = ident.removeprefix("sha256:")[:12], doc.get("params") or {}
        recorded = params_.get("model_flops_per_token")
        if isinstance(recorded, dict) and len(recorded) > 1:
            raise ProbebookError(
                f"mfu(): evidence {short} records model FLOPs per token at {len(recorded)} sequence lengths; "
                f'pass one, e.g. value(ev, "params.model_flops_per_token.{next(iter(recorded))}")'
            )
        path = "params.model_flops_per_token"
        if isinstance(recorded, dict) and recorded:
            ((length, recorded),) = recorded.items()
            path += f".{length}"
        if isinstance(recorded, (int, float)) and not isinstance(recorded, bool):
            found[float(recorded)] = f"{reading.exact(recorded)} ({path} of {short})"
        elif "n_params_total" in params_:
            counts = workload.param_counts(params_, f"mfu(): evidence {short}")
            found[float(counts.dense_flops)] = (
                f"{reading.exact(counts.dense_flops)} (4·P_all + 2·P_trainable of {short}'s parameter counts, "
                "attention not counted)"
            )
    if not found:
        raise ProbebookError(
            "mfu(): the rate's evidence records no model FLOPs per token (params.model_flops_per_token or "
            "n_params_total); pass flops_per_token"
        )
    if len(found) > 1:
        raise ProbebookError(
            f"mfu(): the rate's evidence records {len(found)} different model FLOPs per token; pass flops_per_token"
        )
    return next(iter(found.items()))


def _rate(q: Any, unit: str, what: str) -> float:
    defined(q)
    if not isinstance(q, Quantity):
        raise ProbebookError(f"{what} takes a measured quantity in {unit}, e.g. fit(sweep).asymptote")
    if q.value is None:
        raise ProbebookError(f"{what}: {q.key} has no value ({q.note})")
    return q.value * conversion_factor(q.unit, unit)
