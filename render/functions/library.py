"""The page functions a record or playbook page calls inside ``{{ }}`` (ARCHITECTURE.md §6.4).

Each returns a ``Quantity`` (or an object whose attributes are Quantities, or a chart/table
block) built from archived evidence by a pure derivation in ``render.derive``. Evidence is
named by the aliases in the page's front matter; an alias in a template is an ``EvidenceRef``.

======================  ==========================================================================
``fit(sweep, ...)``     step-scaling fit: ``.c .a .b .asymptote .max_residual .noise .n_points``,
                        ``.share(W)``; options ``tokens="512:"``, ``terms="c+a"``, ``at=[W]``, ``mode``
``value(ref, path)``    one number stored in the evidence, e.g. ``value(run, "params.batch")``
``median(ref, f, ...)`` median of sample field ``f`` over rows matching filters, e.g.
                        ``median(copy, "gb_s", direction="h2d")``, ``median(abl, "step_s", arm="baseline")``
``saving(ref, arm)``    ablation: ``1 − median(arm) / median(baseline)`` of ``step_s``
``batch_summary(ref)``  batch sweep to OOM: ``.fastest_batch .fastest_tok_s .largest_batch .first_oom``
``batch_models(ref)``   the models (presets) a batch sweep covers; ``stable=True``: those with a fastest stable batch
``campaign_time(ref)``  a collected campaign's wall time: ``.wall .device_busy .runs``, per point ``.imports .timed``
``loss_memory(ref,a)``  loss-kernel memory of arm ``a``: ``.per_microbatch .intercept .largest_microbatch``
``logit_bytes(ref,a,b)`` bytes per logit element, arm ``a`` over arm ``b``
``gemm_ceiling(ref)``   same-session GEMM ceiling (FLOP/s) at the median window of a shape
``kernel_share(ref,c)`` share of device kernel time in category ``c``
``kernel_time(ref,c)``  device kernel time per profiled step, in category ``c`` (or all)
``project(rate, P)``    training time at a rate: ``.time .gpu_hours .per_billion_tokens .updates``
``mfu(rate, ...)``      model FLOPs utilisation against a datasheet peak or a measured ceiling
``share_of(x, y)``      the ratio x / y of two quantities of one kind of unit
``constant(name)``      a number of the methods (``cv_threshold``, ``windows`` ...), read from the code
``ddp(run)``            data-parallel scaling: ``.efficiency .paired_efficiency .tok_s_1 .tok_s_n .tok_s_all .comm_share``
                        ``.exposed .overlap .busbw .algbw .sweep_busbw(MiB) .projected(n) .interconnect``
``agreement(ref, arm)`` relative L2 of an arm's loss, logits, gradients; noise floor, limit (``.grads``, ...)
``hvp(ref, ...)``       an H·v candidate's ``.warm .first_call .first_peak .error``; ``hvp_speedup(ref, slow, fast)``
``stream(ref, arm)``    layer streaming: ``.step .tok_s .stall .stall_share .layer_copy``
``padding(ref, ...)``   padding probe: ``.before .after .diversity .knee``; with ``fit=``: ``.step .epoch .saving``
``mask_cost(ref, k)``   mask kind ``k`` against ``is_causal``: ``.step .causal_step .slowdown .attention``
``utilisation(ref, S)`` NVML over the timed windows: ``.sm_clock_min .clock_sag .power_max .sm_util``
``claim(a < b, "s")``   sentence ``s``, shown only while the comparison holds (``render.numbers.claims``)
``chart(kind, ref)``    an SVG chart (``render.charts.draw``), written beside the page
``table(kind, ref)``    a table (``render.tables.kinds``) with CSV and JSON downloads
======================  ==========================================================================
"""

from __future__ import annotations

import json
import statistics
import warnings
from dataclasses import replace
from typing import Any, Callable

from measure.errors import ProbebookError
from render.charts import theme as chart_theme
from render.charts.output import PendingChart, chart_files
from render.derive import fit as fitmod
from render.derive import mfu as mfumod
from render.derive import peaks
from render.derive import project as projmod
from render.derive.ablation import saving_fraction
from render.evidence import pages as evidence_pages
from render.functions.batch import BatchFunctions
from render.functions.correctness import CorrectnessFunctions
from render.functions.derivations import load_libraries
from render.functions.kernels import KernelFunctions
from render.functions.memory import MemoryFunctions
from render.functions.names import FUNCTIONS
from render.functions.pipeline import PipelineFunctions
from render.functions.scaling import ScalingFunctions
from render.functions.views import (
    EvidenceRef,
    FitView,
    ProjectionView,
    call_text,
    defined,
    number,
    quantity,
)
from render.numbers import claims
from render.numbers import reading as numbers
from render.numbers.links import title_text
from render.numbers.quantity import Quantity, conversion_factor
from render.pages import methodology
from render.pages.sandbox import Asset
from render.tables import kinds as tables


def _suppressed_peak(gpu: str | None) -> peaks.Peak:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", peaks.UnknownGPUWarning)  # an unknown GPU is reported as an error below
        return peaks.lookup(gpu)


class PageFunctions(
    MemoryFunctions, KernelFunctions, BatchFunctions, PipelineFunctions, ScalingFunctions, CorrectnessFunctions
):
    """The functions one page may call, bound to its evidence aliases."""

    def context(self) -> dict[str, Any]:
        """Names a template sees: the functions and the page's evidence aliases."""
        names: dict[str, Any] = {name: getattr(self, name) for name in FUNCTIONS}
        clash = sorted(set(names) & set(self.refs))
        if clash:
            raise ProbebookError(f"evidence alias {clash[0]!r} has the name of a page function; rename the alias")
        names.update(self.refs)
        return names

    def _fit(self, ref: EvidenceRef, options: dict[str, Any], at: tuple[float, ...]) -> fitmod.StepFit:
        key = ("fit", ref.id, tuple(sorted((k, str(v)) for k, v in options.items())), at)
        doc = self._doc(ref)
        return self.library.memo(
            key,
            lambda: fitmod.fit_evidence(
                doc,
                terms=options.get("terms", "auto"),
                tokens=options.get("tokens"),
                at=at,
                mode=options.get("mode"),
                source=f"evidence {ref.alias} ({ref.short})",
            ),
        )

    # -- the functions --------------------------------------------------------------------
    def fit(
        self, ref: Any, tokens: str | None = None, terms: str = "auto", at: Any = (), mode: str | None = None
    ) -> FitView:
        """Fit ``step(S) = c + a·S + b·S²`` to step-scaling evidence."""
        ref = self._ref(ref, "step-scaling", "fit()")
        options = {k: v for k, v in (("tokens", tokens), ("terms", terms), ("mode", mode)) if v is not None}
        view = FitView(self._fit, ref, options)
        for w in at if isinstance(at, (list, tuple)) else [at]:
            view.share(w)  # validates the widths early, with the page's line
        return view

    def value(self, ref: Any, path: str, unit: str = "", fmt: str = ".3g", display: str | None = None) -> Quantity:
        """One number stored in the evidence at a dotted ``path`` (``params.batch``, ``data.samples.0.step_s``)."""
        ref = self._ref(ref, None, "value()")
        node: Any = self._doc(ref)
        for part in str(path).split("."):
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                raise ProbebookError(f"value(): evidence {ref.alias} ({ref.short}) has no field {path!r}")
        if isinstance(node, bool) or not isinstance(node, (int, float)):
            raise ProbebookError(f"value(): field {path!r} of {ref.alias} is {node!r}, not a number")
        anchor = evidence_pages.field_anchor(self._doc(ref), str(path))
        q = quantity(node, unit, ref, f"evidence field {path}", f"value({ref.alias}, {path})", fmt=fmt, anchor=anchor)
        return q.to(display) if display else q

    def project(
        self,
        rate: Quantity,
        params: Any,
        tokens_per_param: Any = projmod.TOKENS_PER_PARAM,
        batch_tokens: Any = None,
        gpus: int = 1,
    ) -> ProjectionView:
        """Training time of ``params`` parameters at the measured ``rate`` (a tokens/s Quantity)."""
        tok_s = _rate(rate, "tok/s", "project()")
        p = number(params, "params")
        bt = None if batch_tokens is None else int(number(batch_tokens, "batch_tokens"))
        proj = projmod.project(p, tok_s, float(number(tokens_per_param, "tokens_per_param")), bt, gpus)
        what = (
            f"T = k·P / R with P={numbers.general(p)}, k={numbers.general(proj.tokens_per_param)}, "
            f"R={rate.text} ({rate.derivation})"
            + (f", {gpus} GPUs" if gpus != 1 else "")
            + (f", {bt} tokens per update" if bt else "")
        )
        return ProjectionView(
            vars(proj),
            rate.evidence,
            what,
            f"project({rate.key}, {numbers.exact(p)})",
            {"updates": "no batch_tokens given"},
        )

    def mfu(self, rate: Quantity, flops_per_token: Any, peak: Quantity | None = None) -> Quantity:
        """Model FLOPs utilisation at ``rate`` tokens/s against ``peak`` (a measured ceiling) or the datasheet.

        ``flops_per_token`` is the model's training FLOPs per token, e.g. the step-scaling probe's own
        ``value(sweep, "params.model_flops_per_token.2048")`` (PaLM's ``6N + 12·L·H·Q·T``, computed
        where the model's shapes are), or a plain number.
        """
        tok_s = _rate(rate, "tok/s", "mfu()")
        defined(flops_per_token)
        if isinstance(flops_per_token, Quantity):
            per_token, per_token_text = _rate(flops_per_token, "", "mfu() flops_per_token"), flops_per_token.key
            evidence = tuple(dict.fromkeys(rate.evidence + flops_per_token.evidence))
        else:
            per_token = number(flops_per_token, "mfu() flops_per_token")
            per_token_text, evidence = numbers.general(per_token), rate.evidence
        achieved = mfumod.achieved_model_flop_s(tok_s, per_token)
        if peak is None:
            gpu = (self.library.docs[rate.evidence[0]].get("machine") or {}).get("gpu") if rate.evidence else None
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
        return quantity(
            value,
            "",
            evidence,
            f"MFU: {rate.text} × {per_token_text} model FLOPs/token / {against}",
            f"mfu({rate.key})",
            fmt=".1%",
        )

    def constant(self, name: str) -> Quantity:
        """A number of the methods themselves (CV threshold, default windows, bootstrap replicates), read from
        the code that uses it (``render.pages.methodology``); it cites no evidence."""
        return methodology.constant(name)

    def share_of(self, part: Quantity, whole: Quantity, fmt: str = ".1%") -> Quantity:
        """The ratio ``part / whole`` of two quantities whose units differ at most by a prefix."""
        defined(part), defined(whole)
        if not (isinstance(part, Quantity) and isinstance(whole, Quantity)):
            raise ProbebookError("share_of() takes two quantities, e.g. share_of(fit(s).c, fit(s).max_residual)")
        factor = conversion_factor(part.unit, whole.unit)
        value = None
        if part.value is not None and whole.value not in (None, 0):
            value = part.value * factor / whole.value
        return Quantity(
            value=value,
            unit="",
            fmt=fmt,
            evidence=tuple(dict.fromkeys(part.evidence + whole.evidence)),
            derivation=f"{part.key} / {whole.key}",
            key=f"share_of({part.key}, {whole.key})",
            note=None if value is not None else "a missing or zero operand",
        )

    def median(
        self,
        ref: Any,
        field: str,
        unit: str | None = None,
        display: str | None = None,
        fmt: str | None = None,
        **where: Any,
    ) -> Quantity:
        """The median of one sample field over the rows matching ``where`` (e.g. ``arm="baseline"``)."""
        ref = self._ref(ref, None, "median()")
        rows = self._rows(ref)
        indices = _field_rows(rows, field, where, f"median(): {ref.alias} ({ref.short})")
        values = [rows[i][field] for i in indices]
        base, shown, spec = field_unit(field)
        condition = ", ".join(f"{k}={v!r}" for k, v in sorted(where.items()))
        q = quantity(
            statistics.median(values),
            unit if unit is not None else base,
            ref,
            f"median of {len(values)} samples of {field}" + (f" where {condition}" if where else ""),
            f"median({call_text(ref.alias, field, *(f'{k}={v}' for k, v in sorted(where.items())))})",
            fmt=fmt or spec,
            anchor=evidence_pages.row_anchor(indices[0]),
        )
        if display:
            return q.to(display)  # the page chose the unit
        return replace(q, display=shown) if shown and unit is None else q  # a hint: the prefix still fits the value

    def saving(self, ref: Any, arm: str, baseline: str = "baseline", field: str = "step_s") -> Quantity:
        """What an ablation arm removes: ``1 − median(arm) / median(baseline)`` of ``field`` (fraction)."""
        ref = self._ref(ref, None, "saving()")
        rows = self._rows(ref)
        what = f"saving(): {ref.alias} ({ref.short})"
        arm_rows = _field_rows(rows, field, {"arm": arm}, what)
        arm_s = statistics.median(rows[i][field] for i in arm_rows)
        base_s = statistics.median(_field_values(rows, field, {"arm": baseline}, what))
        return quantity(
            saving_fraction(arm_s, base_s),
            "",
            ref,
            f"1 − median {field} of arm {arm} / median {field} of arm {baseline}",
            f"saving({call_text(ref.alias, arm, baseline=None if baseline == 'baseline' else baseline)})",
            fmt=".1%",
            anchor=evidence_pages.row_anchor(arm_rows[0]),
            bounded=True,
        )

    def claim(self, *args: Any) -> claims.Claim:
        """``claim(CONDITION, ..., "sentence")``: the sentence, shown only while every comparison holds."""
        if not args:
            raise ProbebookError(
                'claim() takes one or more comparisons and then the sentence, e.g. claim(a < b, "...")'
            )
        for a in args:
            defined(a)
        return claims.make(tuple(args[:-1]), args[-1])

    def chart(self, kind: str, *refs: Any, **options: Any) -> Asset:
        """An SVG chart of the evidence, saved beside the page, with its Vega-Lite spec as a download."""
        picked = [self._ref(r, None, f"chart({kind!r})") for r in refs]
        docs = [self._doc(r) for r in picked]

        def draw() -> Any:
            from render.charts import draw as charts  # here, not at the top: see load_libraries

            load_libraries()
            return charts.render(kind, docs, **options)

        def describe(token: str) -> PendingChart:
            from render.charts import draw as charts

            ids = tuple(r.id for r in picked)
            return PendingChart(token, charts.describe(kind, docs, **options), kind, ids, options)

        out = self._derived("chart", kind, picked, options, draw, describe)
        alt = title_text(out.alt).replace("[", "(").replace("]", ")")
        return Asset(kind, chart_files(out), lambda name: chart_theme.markdown(name, alt), tuple(r.id for r in picked))

    def table(self, kind: str, *refs: Any, **options: Any) -> Asset:
        """A table of the evidence with CSV and JSON downloads saved beside the page."""
        picked = [self._ref(r, None, f"table({kind!r})") for r in refs]
        out = self._derived(
            "table", kind, picked, options, lambda: tables.render(kind, [self._doc(r) for r in picked], **options)
        )
        return Asset(
            kind,
            {"csv": out.csv.encode("utf-8"), "json": out.json.encode("utf-8")},
            lambda name: f"{out.markdown}\n\nDownload: [CSV]({name}.csv) · [JSON]({name}.json)\n",
            tuple(r.id for r in picked),
        )

    def _derived(
        self,
        what: str,
        kind: str,
        picked: list[EvidenceRef],
        options: dict[str, Any],
        make: Any,
        later: Callable[[str], Any] | None = None,
    ) -> Any:
        """``make()``, kept in the library under (what, kind, ids, options) when the options are plain JSON;
        ``later``: what stands in for it until it is made, in a build that makes it later (``Library.memo``)."""
        try:
            opts = json.dumps(options, sort_keys=True, allow_nan=False)
        except (TypeError, ValueError):
            return make()  # an option that is not plain data: computed, never kept under a lossy key
        return self.library.memo((what, kind, tuple(r.id for r in picked), opts), make, later)


def field_unit(field: str) -> tuple[str, str | None, str]:
    """(base unit, display unit, format) for a sample field, from the naming convention (ARCHITECTURE.md §4.1)."""
    if field in _RATE_FIELDS:
        return _RATE_FIELDS[field]
    if field.endswith(("_s", "_ms", "_us")) or field == "time":
        base = {"_s": "s", "ms": "ms", "us": "µs"}[field[-2:]] if field != "time" else "s"
        return base, "ms" if base == "s" else None, ".3g"
    if field.endswith("bytes"):
        return "B", "GiB", ".3g"
    return "", None, ".4g"


_RATE_FIELDS = {"tok_s": ("tok/s", None, ".3g"), "gb_s": ("GB/s", None, ".3g"), "tflop_s": ("TFLOP/s", None, ".4g")}
"""Fields named like times that are rates: tokens/s, GB/s (1e9 bytes/s), TFLOP/s."""


def _field_values(rows: list[dict[str, Any]], field: str, where: dict[str, Any], what: str) -> list[float]:
    """Numbers in ``field`` of the rows whose columns equal ``where``; refuse when there are none."""
    return [rows[i][field] for i in _field_rows(rows, field, where, what)]


def _field_rows(rows: list[dict[str, Any]], field: str, where: dict[str, Any], what: str) -> list[int]:
    """Indices of the rows whose columns equal ``where`` and whose ``field`` is a number; refuse when there are none."""
    for value in where.values():
        defined(value)
    picked = [i for i, r in enumerate(rows) if all(r.get(k) == v for k, v in where.items())]
    values = [
        i for i in picked if isinstance(rows[i].get(field), (int, float)) and not isinstance(rows[i].get(field), bool)
    ]
    if not values:
        shown = ", ".join(f"{k}={v!r}" for k, v in where.items()) or "any row"
        raise ProbebookError(f"{what}: no {field!r} values in rows matching {shown} ({len(picked)} rows match)")
    return values


def _rate(q: Any, unit: str, what: str) -> float:
    defined(q)
    if not isinstance(q, Quantity):
        raise ProbebookError(f"{what} takes a measured quantity in {unit}, e.g. fit(sweep).asymptote")
    if q.value is None:
        raise ProbebookError(f"{what}: {q.key} has no value ({q.note})")
    return q.value * conversion_factor(q.unit, unit)
