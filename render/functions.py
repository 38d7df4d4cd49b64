"""The page functions a record or playbook page calls inside ``{{ }}`` (DESIGN §3, §4).

Each returns a ``Quantity`` (or an object whose attributes are Quantities, or a chart/table
block) built from archived evidence by a pure derivation in ``render.derive``. Evidence is
named by the aliases in the page's front matter; an alias in a template is an ``EvidenceRef``.

======================  ==========================================================================
``fit(sweep, ...)``     step-scaling fit: ``.c .a .b .asymptote .max_residual .noise .n_points``,
                        ``.share(W)``; options ``tokens="512:"``, ``terms="c+a"``, ``at=[W]``, ``mode``
``value(ref, path)``    one number stored in the evidence, e.g. ``value(run, "params.batch")``
``batch_summary(ref)``  batch sweep to OOM: ``.fastest_batch .fastest_tok_s .largest_batch .first_oom``
``loss_memory(ref,a)``  loss-kernel memory of arm ``a``: ``.per_microbatch .intercept .largest_microbatch``
``logit_bytes(ref,a,b)`` bytes per logit element, arm ``a`` over arm ``b``
``gemm_ceiling(ref)``   same-session GEMM ceiling (FLOP/s) at the median window of a shape
``kernel_share(ref,c)`` share of device kernel time in category ``c``
``project(rate, P)``    training time at a rate: ``.time .gpu_hours .per_billion_tokens .updates``
``mfu(rate, ...)``      model FLOPs utilisation against a datasheet peak or a measured ceiling
``share_of(x, y)``      the ratio x / y of two quantities of one kind of unit
``chart(kind, ref)``    an SVG chart (``render.charts``), written beside the page
``table(kind, ref)``    a table (``render.tables``) with CSV and JSON downloads
======================  ==========================================================================
"""

from __future__ import annotations

import statistics
import warnings
from dataclasses import dataclass
from typing import Any, Callable, ClassVar

import jinja2

from measure.errors import ProbebookError
from render import charts, peaks, tables
from render.derive import batchsweep, fit as fitmod, lossmem, mfu as mfumod, project as projmod
from render.pages import Block, current_state
from render.quantity import Quantity, conversion_factor, relative_link, evidence_page, short_id, title_text


@dataclass(frozen=True)
class EvidenceRef:
    """An evidence alias as a template sees it; shows as a link to the evidence page."""

    TEMPLATE_ATTRS: ClassVar[frozenset[str]] = frozenset({"alias", "probe", "short"})
    alias: str
    id: str
    probe: str

    @property
    def short(self) -> str:
        return short_id(self.id)

    def template_markdown(self, page: str) -> str:
        current_state().cited.add(self.id)
        return f'[`{self.short}`]({relative_link(page, evidence_page(self.id))} "{self.probe} evidence")'


class Library:
    """Evidence documents by id, and derivations computed so far (shared by every page of a build)."""

    def __init__(self, docs: dict[str, dict[str, Any]]):
        self.docs = docs
        self._memo: dict[tuple, Any] = {}

    def memo(self, key: tuple, compute: Callable[[], Any]) -> Any:
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]


def _q(value: Any, unit: str, ref: EvidenceRef | tuple[str, ...], derivation: str, key: str, **kw: Any) -> Quantity:
    ids = (ref.id,) if isinstance(ref, EvidenceRef) else tuple(ref)
    return Quantity(value=None if value is None else float(value) if not isinstance(value, int) else value,
                    unit=unit, evidence=ids, derivation=derivation, key=key, **kw)


def _args(*parts: Any, **named: Any) -> str:
    shown = [str(p) for p in parts] + [f"{k}={v!r}" for k, v in named.items() if v is not None]
    return ", ".join(shown)


class FitView:
    """A step-scaling fit; each attribute is a Quantity."""

    TEMPLATE_ATTRS: ClassVar[frozenset[str]] = frozenset(
        {"c", "a", "b", "asymptote", "max_residual", "noise", "n_points", "share", "warnings"})

    def __init__(self, fns: "PageFunctions", ref: EvidenceRef, options: dict[str, Any]):
        self._fns, self._ref, self._options = fns, ref, options
        self._fit = fns._fit(ref, options, ())
        f = self._fit
        tokens = options.get("tokens")
        self._what = (f"step-scaling fit step(S) = c + a·S + b·S² with terms {'+'.join(f.terms) or 'none'} "
                      f"(asked {options.get('terms', 'auto')}), tokens {tokens or 'all'}, "
                      f"{f.n_points} token counts, {f.n_samples} samples")
        self._key = f"fit({ref.alias})"

    def _make(self, name: str, value: float | None, unit: str, ci_name: str | None, **kw: Any) -> Quantity:
        ci = self._fit.ci.get(ci_name) if ci_name else None
        return _q(value, unit, self._ref, f"{self._what}; {name}", f"{self._key}.{name}",
                  uncertainty=ci, **kw)

    @property
    def c(self) -> Quantity:
        """Fixed cost per step."""
        return self._make("c", self._fit.c_s, "s", "c_s", display="ms")

    @property
    def a(self) -> Quantity:
        """Cost per token."""
        return self._make("a", self._fit.a_s_per_token, "s/token", "a_s_per_token", display="µs/token")

    @property
    def b(self) -> Quantity:
        """Cost per token squared."""
        return self._make("b", self._fit.b_s_per_token2, "s/token²", "b_s_per_token2", display="ns/token²")

    @property
    def asymptote(self) -> Quantity:
        """Tokens/s as S grows (only without a quadratic term)."""
        note = None if self._fit.asymptote_tok_s is not None else "no asymptote: the fit has a quadratic term"
        return self._make("asymptote", self._fit.asymptote_tok_s, "tok/s", "asymptote_tok_s", fmt=",.0f", note=note)

    @property
    def max_residual(self) -> Quantity:
        """Largest distance of a point mean from the model."""
        return self._make("max_residual", self._fit.max_abs_residual_s, "s", None, display="ms")

    @property
    def noise(self) -> Quantity:
        """Pooled within-S standard deviation of the samples."""
        note = None if self._fit.noise_floor_s is not None else "no repeated samples: no noise floor"
        return self._make("noise", self._fit.noise_floor_s, "s", None, display="ms", note=note)

    @property
    def n_points(self) -> Quantity:
        """Distinct token counts fitted."""
        return self._make("n_points", self._fit.n_points, "", None, fmt="d")

    def share(self, width: Any) -> Quantity:
        """Quadratic share ``b·W / (a + b·W)`` of the per-token cost at width W tokens."""
        w = _number(width, "share() width")
        f = self._fns._fit(self._ref, self._options, (w,))
        k = fitmod.width_key(w)
        value = f.quadratic_share.get(k)
        note = None if value is not None else "a = b = 0: no per-token cost"
        return _q(value, "", self._ref, f"{self._what}; quadratic share b·W/(a+b·W) at W={k}",
                  f"{self._key}.share({k})", fmt=".1%", uncertainty=f.ci.get(f"quadratic_share:{k}"), note=note)

    @property
    def warnings(self) -> Block:
        """The fit's warnings as an admonition (nothing when there are none)."""
        if not self._fit.warnings:
            return Block("")
        from render.quantity import escape_text
        body = "\n".join(f"    - {escape_text(w)}" for w in self._fit.warnings)
        return Block(f'!!! warning "Fit warnings"\n\n{body}\n')


class _View:
    """Attributes named in ``FIELDS`` are Quantities made by ``_make``."""

    FIELDS: ClassVar[dict[str, tuple[str, str, dict[str, Any]]]] = {}
    TEMPLATE_ATTRS: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, values: dict[str, Any], evidence: tuple[str, ...], what: str, key: str,
                 notes: dict[str, str] | None = None):
        self._values, self._evidence, self._what, self._key, self._notes = values, evidence, what, key, notes or {}

    def __getattr__(self, name: str) -> Quantity:
        if name.startswith("_") or name not in self.FIELDS:
            raise AttributeError(name)
        source, unit, kw = self.FIELDS[name]
        value = self._values.get(source)
        note = self._notes.get(name) if value is None else None
        return _q(value, unit, self._evidence, f"{self._what}; {source}", f"{self._key}.{name}", note=note, **kw)


class BatchView(_View):
    FIELDS = {"fastest_batch": ("fastest_stable_batch", "", {"fmt": "d"}),
              "fastest_tok_s": ("fastest_tok_s", "tok/s", {"fmt": ",.0f"}),
              "largest_batch": ("largest_fitting_batch", "", {"fmt": "d"}),
              "first_oom": ("first_oom_batch", "", {"fmt": "d"})}
    TEMPLATE_ATTRS = frozenset(FIELDS)


class LossMemoryView(_View):
    FIELDS = {"per_microbatch": ("bytes_per_microbatch", "B", {"display": "GiB", "fmt": ".3g"}),
              "intercept": ("intercept_bytes", "B", {"display": "GiB", "fmt": ".3g"}),
              "max_residual": ("max_abs_residual_bytes", "B", {"display": "MiB", "fmt": ".3g"}),
              "largest_microbatch": ("largest_usable_microbatch", "", {"fmt": "d"})}
    TEMPLATE_ATTRS = frozenset(FIELDS)


class ProjectionView(_View):
    FIELDS = {"time": ("seconds", "s", {"display": "h", "fmt": ".3g"}),
              "gpu_hours": ("gpu_hours", "GPU-h", {"fmt": ",.0f"}),
              "per_billion_tokens": ("seconds_per_billion_tokens", "s", {"display": "h", "fmt": ".3g"}),
              "tokens": ("tokens", "tok", {"fmt": ".3g"}),
              "updates": ("optimizer_updates", "", {"fmt": ",d"})}
    TEMPLATE_ATTRS = frozenset(FIELDS)


def _defined(value: Any) -> Any:
    """An undefined name passed to a function fails here, naming itself (StrictUndefined raises on str())."""
    if isinstance(value, jinja2.Undefined):
        str(value)
    return value


def _number(value: Any, what: str) -> float:
    """A plain number given in a template (a width, a parameter count): int, float or text like 250M."""
    _defined(value)
    if isinstance(value, Quantity):
        raise ProbebookError(f"{what} takes a plain number, not a measured quantity")
    if isinstance(value, str):
        return projmod.parse_count(value, what)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ProbebookError(f"{what} must be a number, got {value!r}")
    return value


def _suppressed_peak(gpu: str | None) -> peaks.Peak:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", peaks.UnknownGPUWarning)  # an unknown GPU is reported as an error below
        return peaks.lookup(gpu)


class PageFunctions:
    """The functions one page may call, bound to its evidence aliases."""

    def __init__(self, library: Library, aliases: dict[str, str]):
        self.library = library
        self.refs = {alias: EvidenceRef(alias, ident, library.docs[ident]["probe"])
                     for alias, ident in aliases.items()}

    def context(self) -> dict[str, Any]:
        """Names a template sees: the functions and the page's evidence aliases."""
        names: dict[str, Any] = {name: getattr(self, name) for name in FUNCTIONS}
        clash = sorted(set(names) & set(self.refs))
        if clash:
            raise ProbebookError(f"evidence alias {clash[0]!r} has the name of a page function; rename the alias")
        names.update(self.refs)
        return names

    # -- helpers --------------------------------------------------------------------------
    def _ref(self, ref: Any, probe: str | None, what: str) -> EvidenceRef:
        _defined(ref)
        if isinstance(ref, str):
            if ref not in self.refs:
                known = ", ".join(sorted(self.refs)) or "none"
                raise ProbebookError(f"{what}: no evidence alias {ref!r} on this page (its aliases: {known})")
            ref = self.refs[ref]
        if not isinstance(ref, EvidenceRef):
            raise ProbebookError(f"{what} takes an evidence alias from the front matter, got {type(ref).__name__}")
        if probe is not None and ref.probe != probe:
            raise ProbebookError(f"{what} needs {probe} evidence; {ref.alias} ({ref.short}) is {ref.probe} evidence")
        current_state().cited.add(ref.id)
        return ref

    def _doc(self, ref: EvidenceRef) -> dict[str, Any]:
        return self.library.docs[ref.id]

    def _rows(self, ref: EvidenceRef) -> list[dict[str, Any]]:
        rows = (self._doc(ref).get("data") or {}).get("samples")
        if not isinstance(rows, list) or not rows:
            raise ProbebookError(f"{ref.alias} ({ref.short}) has no data.samples")
        return rows

    def _fit(self, ref: EvidenceRef, options: dict[str, Any], at: tuple[float, ...]) -> fitmod.StepFit:
        key = ("fit", ref.id, tuple(sorted((k, str(v)) for k, v in options.items())), at)
        doc = self._doc(ref)
        return self.library.memo(key, lambda: fitmod.fit_evidence(
            doc, terms=options.get("terms", "auto"), tokens=options.get("tokens"), at=at,
            mode=options.get("mode"), source=f"evidence {ref.alias} ({ref.short})"))

    # -- the functions --------------------------------------------------------------------
    def fit(self, ref: Any, tokens: str | None = None, terms: str = "auto", at: Any = (), mode: str | None = None) -> FitView:
        """Fit ``step(S) = c + a·S + b·S²`` to step-scaling evidence."""
        ref = self._ref(ref, "step-scaling", "fit()")
        options = {k: v for k, v in (("tokens", tokens), ("terms", terms), ("mode", mode)) if v is not None}
        view = FitView(self, ref, options)
        for w in (at if isinstance(at, (list, tuple)) else [at]):
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
        q = _q(node, unit, ref, f"evidence field {path}", f"value({ref.alias}, {path})", fmt=fmt)
        return q.to(display) if display else q

    def batch_summary(self, ref: Any, model: str | None = None, context: Any = None) -> BatchView:
        """The batch sweep summary of one (model, context) group."""
        ref = self._ref(ref, "batch-sweep", "batch_summary()")
        groups = self.library.memo(("batch", ref.id), lambda: batchsweep.summarize(self._rows(ref)))
        picked = [g for g in groups if (model is None or g.model == model)
                  and (context is None or g.context == int(_number(context, "context")))]
        if len(picked) != 1:
            shown = "; ".join(f"model={g.model!r} context={g.context}" for g in groups)
            raise ProbebookError(f"batch_summary(): {len(picked)} groups match; pick one with model= and context= "
                                 f"(groups: {shown})")
        g = picked[0]
        what = f"batch sweep to OOM of {g.model} at context {g.context}"
        return BatchView(vars(g), (ref.id,), what, f"batch_summary({_args(ref.alias, model=model, context=context)})",
                         {"first_oom": "no batch ran out of memory", "fastest_batch": "no batch fits",
                          "fastest_tok_s": "no batch fits", "largest_batch": "no batch fits"})

    def loss_memory(self, ref: Any, arm: str) -> LossMemoryView:
        """Peak memory per extra microbatch of one loss arm, and its largest usable microbatch."""
        ref = self._ref(ref, "loss-memory", "loss_memory()")
        rows = self._rows(ref)
        slope = self.library.memo(("lossmem", ref.id, arm), lambda: lossmem.marginal_bytes_per_microbatch(rows, arm))
        values: dict[str, Any] = dict(vars(slope))
        notes = {}
        try:
            values["largest_usable_microbatch"] = lossmem.largest_usable_microbatch(rows, arm)
        except ProbebookError as exc:
            notes["largest_microbatch"] = str(exc)
        return LossMemoryView(values, (ref.id,), f"loss-kernel memory of arm {arm}, least-squares over microbatch",
                              f"loss_memory({ref.alias}, {arm})", notes)

    def logit_bytes(self, ref: Any, heavy: str, light: str, vocab: Any = None) -> Quantity:
        """Bytes per logit element that arm ``heavy`` holds beyond arm ``light``."""
        ref = self._ref(ref, "loss-memory", "logit_bytes()")
        v = None if vocab is None else int(_number(vocab, "vocab"))
        value = lossmem.bytes_per_logit_element(self._rows(ref), heavy, light, vocab=v)
        return _q(value, "B", ref, f"(slope {heavy} − slope {light}) / (tokens_per_step × vocab)",
                  f"logit_bytes({ref.alias}, {heavy}, {light})", fmt=".3g")

    def gemm_ceiling(self, ref: Any, shape: str | None = None) -> Quantity:
        """A GEMM shape's FLOP/s at its median window: ``2·m·n·k / median time`` (same-session ceiling)."""
        ref = self._ref(ref, "gemm", "gemm_ceiling()")
        rows = tables.evidence_rows("gemm_ceiling()", self._doc(ref), {"shape": (str,), "m": (int,), "n": (int,),
                                    "k": (int,), "time_s": (int, float)}, "gemm")
        shapes = sorted({r["shape"] for r in rows})
        chosen = shapes[0] if shape is None and len(shapes) == 1 else shape
        picked = [r for r in rows if r["shape"] == chosen]
        if not picked:
            raise ProbebookError(f"gemm_ceiling(): give shape= one of {', '.join(shapes)}")
        m, n, k = picked[0]["m"], picked[0]["n"], picked[0]["k"]
        median_s = statistics.median(r["time_s"] for r in picked)
        flop_s = tables.gemm_tflop_s(m, n, k, median_s) * 1e12
        return _q(flop_s, "FLOP/s", ref, f"GEMM {chosen} ({m}×{n}×{k}): 2·m·n·k / median of {len(picked)} windows",
                  f"gemm_ceiling({_args(ref.alias, shape=shape)})", display="TFLOP/s", fmt=".4g")

    def kernel_share(self, ref: Any, category: str) -> Quantity:
        """Share of summed device kernel time in one category (attention, gemm, ...)."""
        ref = self._ref(ref, None, "kernel_share()")
        rows = tables.evidence_rows("kernel_share()", self._doc(ref), {"category": (str,),
                                    "device_time_s": (int, float)})
        shares = tables.category_shares(rows)
        if category not in shares:
            raise ProbebookError(f"kernel_share(): no category {category!r} (present: {', '.join(sorted(shares))})")
        return _q(shares[category], "", ref, f"device kernel time in {category} / all device kernel time",
                  f"kernel_share({ref.alias}, {category})", fmt=".1%")

    def project(self, rate: Quantity, params: Any, tokens_per_param: Any = projmod.TOKENS_PER_PARAM,
                batch_tokens: Any = None, gpus: int = 1) -> ProjectionView:
        """Training time of ``params`` parameters at the measured ``rate`` (a tokens/s Quantity)."""
        tok_s = _rate(rate, "tok/s", "project()")
        p = _number(params, "params")
        bt = None if batch_tokens is None else int(_number(batch_tokens, "batch_tokens"))
        proj = projmod.project(p, tok_s, float(_number(tokens_per_param, "tokens_per_param")), bt, gpus)
        what = (f"T = k·P / R with P={p:.4g}, k={proj.tokens_per_param:g}, R={rate.text} ({rate.derivation})"
                + (f", {gpus} GPUs" if gpus != 1 else "") + (f", {bt} tokens per update" if bt else ""))
        return ProjectionView(vars(proj), rate.evidence, what, f"project({rate.key}, {p:g})",
                              {"updates": "no batch_tokens given"})

    def mfu(self, rate: Quantity, n_params: Any, n_layers: int, n_heads: int, head_dim: int, seq_len: int,
            peak: Quantity | None = None) -> Quantity:
        """Model FLOPs utilisation at ``rate`` tokens/s against ``peak`` (a measured ceiling) or the datasheet."""
        tok_s = _rate(rate, "tok/s", "mfu()")
        per_token = mfumod.model_flops_per_token(_number(n_params, "n_params"), n_layers, n_heads, head_dim, seq_len)
        achieved = mfumod.achieved_model_flop_s(tok_s, per_token)
        evidence = rate.evidence
        if peak is None:
            gpu = (self.library.docs[rate.evidence[0]].get("machine") or {}).get("gpu") if rate.evidence else None
            datasheet = _suppressed_peak(gpu)
            if not datasheet.known:
                raise ProbebookError(f"mfu(): no datasheet peak for GPU {gpu!r}; pass peak=gemm_ceiling(...) "
                                     "or add the GPU to render/peaks.py")
            peak_flop_s, against = datasheet.bf16_dense_flop_s, f"datasheet dense BF16 peak of {gpu}"
        else:
            peak_flop_s, against = _rate(peak, "FLOP/s", "mfu() peak"), f"{peak.text} ({peak.derivation})"
            evidence = tuple(dict.fromkeys(rate.evidence + peak.evidence))
        value = mfumod.mfu(achieved, peak_flop_s)  # type: ignore[arg-type]
        return _q(value, "", evidence, f"MFU: {rate.text} × (6N + 12·L·H·Q·T) model FLOPs/token / {against}",
                  f"mfu({rate.key})", fmt=".1%")

    def share_of(self, part: Quantity, whole: Quantity, fmt: str = ".1%") -> Quantity:
        """The ratio ``part / whole`` of two quantities whose units differ at most by a prefix."""
        _defined(part), _defined(whole)
        if not (isinstance(part, Quantity) and isinstance(whole, Quantity)):
            raise ProbebookError("share_of() takes two quantities, e.g. share_of(fit(s).c, fit(s).max_residual)")
        factor = conversion_factor(part.unit, whole.unit)
        value = None
        if part.value is not None and whole.value not in (None, 0):
            value = part.value * factor / whole.value  # type: ignore[operator]
        return Quantity(value=value, unit="", fmt=fmt, evidence=tuple(dict.fromkeys(part.evidence + whole.evidence)),
                        derivation=f"{part.key} / {whole.key}", key=f"share_of({part.key}, {whole.key})",
                        note=None if value is not None else "a missing or zero operand")

    def chart(self, kind: str, *refs: Any, **options: Any) -> Block:
        """An SVG chart of the evidence, saved beside the page, with its Vega-Lite spec as a download."""
        picked = [self._ref(r, None, f"chart({kind!r})") for r in refs]
        out = charts.render(kind, [self._doc(r) for r in picked], **options)
        stem = _asset_stem(kind)
        state = current_state()
        state.add_file(f"{stem}.svg", out.svg.encode("utf-8"))
        state.add_file(f"{stem}.vl.json", out.spec_json.encode("utf-8"))
        name = stem.rsplit("/", 1)[-1]
        alt = title_text(out.alt).replace("[", "(").replace("]", ")")
        return Block(f"![{alt}]({name}.svg)\n\n[Chart spec (Vega-Lite JSON)]({name}.vl.json)\n")

    def table(self, kind: str, *refs: Any, **options: Any) -> Block:
        """A table of the evidence with CSV and JSON downloads saved beside the page."""
        picked = [self._ref(r, None, f"table({kind!r})") for r in refs]
        out = tables.render(kind, [self._doc(r) for r in picked], **options)
        stem = _asset_stem(kind)
        state = current_state()
        state.add_file(f"{stem}.csv", out.csv.encode("utf-8"))
        state.add_file(f"{stem}.json", out.json.encode("utf-8"))
        name = stem.rsplit("/", 1)[-1]
        return Block(f"{out.markdown}\n\nDownload: [CSV]({name}.csv) · [JSON]({name}.json)\n")


def _rate(q: Any, unit: str, what: str) -> float:
    _defined(q)
    if not isinstance(q, Quantity):
        raise ProbebookError(f"{what} takes a measured quantity in {unit}, e.g. fit(sweep).asymptote")
    if q.value is None:
        raise ProbebookError(f"{what}: {q.key} has no value ({q.note})")
    return q.value * conversion_factor(q.unit, unit)


def _asset_stem(kind: str) -> str:
    """``records/x/v2-step-scaling-1``: a file name beside the page, numbered in order of use."""
    state = current_state()
    base = state.rel[:-3] if state.rel.endswith(".md") else state.rel
    n = 1
    while any(p.startswith(f"{base}-{kind}-{n}.") for p in state.files):
        n += 1
    return f"{base}-{kind}-{n}"


FUNCTIONS = ("fit", "value", "batch_summary", "loss_memory", "logit_bytes", "gemm_ceiling", "kernel_share",
             "project", "mfu", "share_of", "chart", "table")
"""The names a page's templates may call."""
