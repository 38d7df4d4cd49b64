"""What page functions return: evidence references, and views whose attributes are Quantities.

Templates may read only the attributes a view lists in ``TEMPLATE_ATTRS`` (the page sandbox
enforces it), so a page can show a derived number but never reach the raw value behind it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

import jinja2

from measure.errors import ProbebookError
from render.derive import basis, batchsweep
from render.derive import project as projmod
from render.numbers import said
from render.numbers.links import escape_text, evidence_page, relative_link, short_id
from render.numbers.quantity import Quantity
from render.pages.sandbox import Block


@dataclass(frozen=True)
class EvidenceRef:
    """An evidence alias as a template sees it; shows as a link to the evidence page."""

    TEMPLATE_ATTRS: ClassVar[frozenset[str]] = frozenset({"alias", "probe", "short"})
    alias: str
    id: str
    probe: str

    @property
    def evidence(self) -> tuple[str, ...]:
        """The id, as a Quantity names its evidence (for the page's list of cited evidence)."""
        return (self.id,)

    @property
    def short(self) -> str:
        return short_id(self.id)

    def template_markdown(self, page: str) -> str:
        return f'[`{self.short}`]({relative_link(page, evidence_page(self.id))} "{self.probe} evidence")'


def quantity(
    value: Any, unit: str, ref: EvidenceRef | tuple[str, ...], derivation: str, key: str, **kw: Any
) -> Quantity:
    ids = (ref.id,) if isinstance(ref, EvidenceRef) else tuple(ref)
    return Quantity(
        value=None if value is None else float(value) if not isinstance(value, int) else value,
        unit=unit,
        evidence=ids,
        derivation=derivation,
        key=key,
        **kw,
    )


def call_text(*parts: Any, **named: Any) -> str:
    shown = [str(p) for p in parts] + [f"{k}={v!r}" for k, v in named.items() if v is not None]
    return ", ".join(shown)


class FieldView:
    """Attributes named in ``FIELDS`` are Quantities made by ``_make``."""

    FIELDS: ClassVar[dict[str, tuple[str, str, dict[str, Any]]]] = {}
    TEMPLATE_ATTRS: ClassVar[frozenset[str]] = frozenset()

    def __init__(
        self,
        values: dict[str, Any],
        evidence: tuple[str, ...],
        what: str,
        key: str,
        notes: dict[str, str] | None = None,
        landing: tuple[str, ...] | dict[str, str] | dict[str, tuple[str, ...]] = (),
        intervals: dict[str, tuple[float, float] | None] | None = None,
        resamples: dict[str, Any] | None = None,
        bases: dict[str, str] | None = None,
    ):
        self._values, self._evidence, self._what, self._key, self._notes = values, evidence, what, key, notes or {}
        self._intervals = intervals or {}  # a field's 95% interval in its unit, where the derivation gives one
        self._resamples = resamples or {}  # a field's recipe for joint resampling (render.derive.intervals)
        # why a field has no interval where this instance knows better than FIELDS (few windows found, say)
        self._bases = bases or {}
        # where each evidence document's inputs are (render.numbers.links.rows_anchor), or one place per field
        self._landing = landing

    def __getattr__(self, name: str) -> Quantity:
        if name.startswith("_") or name not in self.FIELDS:
            raise AttributeError(name)
        source, unit, kw = self.FIELDS[name]
        value = self._values.get(source)
        note = self._notes.get(name) if value is None else None
        landing = self._landing
        if isinstance(landing, dict):  # one place per field, or one per evidence document for each field
            got = landing.get(name, "")
            landing = got if isinstance(got, tuple) else (got,)
        where = {"anchor": landing[0], "more_anchors": tuple(landing[1:])} if landing else {}
        ci = self._intervals.get(name) if value is not None else None
        if name in self._bases:
            kw = {**kw, "basis": self._bases[name]}
        return quantity(
            value,
            unit,
            self._evidence,
            f"{self._what}; {source}",
            f"{self._key}.{name}",
            note=note,
            uncertainty=ci,
            resample=self._resamples.get(name) if value is not None else None,
            **where,
            **kw,
        )


class BatchView(FieldView):
    FIELDS = {
        # the fastest batch's basis is its tie test against the runner-up (__getattr__); its rate's interval is
        # the normal one of its windows' CV and count, as recorded where the row lacks them; the rest are params
        "fastest_batch": ("fastest_stable_batch", "", {"fmt": "d"}),
        "fastest_tok_s": ("fastest_tok_s", "tok/s", {"fmt": ".3g", "basis": basis.RECORDED}),
        "largest_batch": ("largest_fitting_batch", "", {"fmt": "d", "exact": True}),
        "first_oom": ("first_oom_batch", "", {"fmt": "d", "exact": True}),
        "context": ("context", "", {"fmt": "d", "exact": True}),
        # the largest fitting batch's one recorded peak against the card (issue 43): a reading, not a median
        "headroom": ("headroom_bytes", "B", {"display": "GiB", "fmt": ".3g", "basis": basis.RECORDED}),
        "headroom_share": ("headroom_share", "", {"fmt": ".1%", "basis": basis.RECORDED}),
        "recommended_batch": ("recommended_batch", "", {"fmt": "d", "exact": True}),
        "margin": ("margin", "", {"fmt": ".0%", "exact": True}),
        "params": ("params", "", {"fmt": ",d", "exact": True}),  # the model's measured count, for project()
    }
    TEMPLATE_ATTRS = frozenset(FIELDS) | {"unstable", "spilled"}

    def __getattr__(self, name: str) -> Quantity:
        q = super().__getattr__(name)
        if name == "fastest_batch":
            said_basis, words = batchsweep.fastest_basis(self._values.get("runner_up_batch"), self._values.get("tie"))
            q = replace(q, basis=said_basis, derivation=q.derivation + words)
        if name in ("fastest_batch", "fastest_tok_s") and self._values.get("tie"):
            # a tie within noise is shown as one wherever the fastest batch is (issue 23)
            return replace(q, mark=f"tie with batch {self._values['runner_up_batch']}")
        return q

    @property
    def unstable(self) -> Block:
        """The batches flagged unstable (CV over 5%), as a note; nothing when there are none."""
        return _batch_note(
            self,
            "unstable",
            self._values.get("unstable_batches"),
            "Unstable points",
            "their windows' CV was over 5%, so none of them competes for the fastest stable batch",
        )

    @property
    def spilled(self) -> Block:
        """The batches whose peak was above the card's memory (a proven spill), as a note."""
        return _batch_note(
            self,
            "spilled",
            self._values.get("spilled_batches"),
            "Spilled points",
            "their peak memory was above the card's total, so none of them counts as fitting",
        )


def _batch_note(view: Any, name: str, batches: Any, heading: str, why: str) -> Block:
    """A note naming batches; its numbers (the batches, the CV threshold) are ledger rows of ``view.name``."""
    if not batches:
        return Block("")
    sentence = said.Said(
        f"{view._key}.{name}",
        f"Batch {', '.join(str(int(b)) for b in batches)}: {why}.",
        (view._evidence.id,) if isinstance(view._evidence, EvidenceRef) else tuple(view._evidence),
        f"{view._what}; {name} batches",
    )

    def shown(page: str) -> str:
        text = escape_text(sentence.text)
        return f'!!! note "{heading}"\n\n    {said.linked(page, text, sentence) if page else text}\n'

    return Block(shown(""), (), (sentence,), shown)


class CampaignTimeView(FieldView):
    """A campaign's wall time (``render.derive.campaign``): totals, and per measured point the phases."""

    # one campaign's wall clock, as its receipts recorded it: readings of the one run there was, not estimates
    # from repeated windows; the counts are exact
    FIELDS = {
        "wall": ("wall_s", "s", {"fmt": ",.0f", "basis": basis.OBSERVED}),
        "device_busy": ("device_busy_s", "s", {"fmt": ",.0f", "basis": basis.OBSERVED}),
        "points": ("points", "", {"fmt": "d", "exact": True}),
        "attempts": ("attempts", "", {"fmt": "d", "exact": True}),
        "runs": ("runs", "", {"fmt": "d", "exact": True}),
        "job_start": ("job_start_s", "s", {"basis": basis.OBSERVED}),
        "imports": ("imports_s", "s", {"basis": basis.OBSERVED}),
        "device_wait": ("device_wait_s", "s", {"basis": basis.OBSERVED}),
        "setup": ("setup_s", "s", {"basis": basis.OBSERVED}),
        "warmup": ("warmup_s", "s", {"basis": basis.OBSERVED}),
        "timed": ("timed_s", "s", {"basis": basis.OBSERVED}),
        "observe": ("observe_s", "s", {"basis": basis.OBSERVED}),
        "trace": ("trace_s", "s", {"basis": basis.OBSERVED}),
    }
    TEMPLATE_ATTRS = frozenset(FIELDS)


_PEAKS = {"basis": basis.OBSERVED}
"""A line through peaks, and what it reads off them: peaks are readings of the allocator, one per microbatch, not
windows that could be resampled (``render.derive.lossmem``)."""


class LossMemoryView(FieldView):
    FIELDS = {
        "per_microbatch": ("bytes_per_microbatch", "B", {"display": "GiB", "fmt": ".3g", **_PEAKS}),
        "intercept": ("intercept_bytes", "B", {"display": "GiB", "fmt": ".3g", **_PEAKS}),
        "max_residual": ("max_abs_residual_bytes", "B", {"display": "MiB", "fmt": ".3g", **_PEAKS}),
        "largest_microbatch": ("largest_usable_microbatch", "", {"fmt": "d", **_PEAKS}),
    }
    TEMPLATE_ATTRS = frozenset(FIELDS)


class ProjectionView(FieldView):
    FIELDS = {
        "time": ("seconds", "s", {"display": "h", "fmt": ".3g"}),
        "gpu_hours": ("gpu_hours", "GPU-h", {"fmt": ",.0f"}),
        "per_billion_tokens": ("seconds_per_billion_tokens", "s", {"display": "h", "fmt": ".3g"}),
        "tokens": ("tokens", "tok", {"fmt": ".3g", "exact": True}),  # k·P: arithmetic on the page's inputs
        "updates": ("optimizer_updates", "", {"fmt": ",d", "exact": True}),
        # the training's energy at a measured joules per token (project(..., joules_per_token=energy(ev).per_token))
        "energy": ("energy_kwh", "kWh", {"fmt": ",.3g"}),
    }
    TEMPLATE_ATTRS = frozenset(FIELDS)
    RATE_BASIS = "rate_basis"
    """The values' entry holding the rate's own basis: a time without an interval says the rate's reason."""

    NOMINAL = "nominal_params"
    """The values' entry saying the parameter count was nominal: what it gives is marked so (issue: like with like)."""

    def __getattr__(self, name: str) -> Quantity:
        q = super().__getattr__(name)
        if name in ("time", "gpu_hours", "tokens", "updates") and self._values.get(self.NOMINAL):
            q = replace(q, mark="nominal P")  # a count typed, not the one the evidence records
        if name in ("time", "gpu_hours", "per_billion_tokens") and q.uncertainty is None:
            said = self._values.get(self.RATE_BASIS) or ""
            return replace(q, basis="" if said == basis.INTERVAL else said)
        return q


_CORPUS = {"exact": True}  # arithmetic on a tokenized corpus, not a timing: nothing to resample


class PaddingView(FieldView):
    FIELDS = {
        "documents": ("documents", "", {"fmt": ",d", **_CORPUS}),
        "tokens": ("tokens", "tok", {"fmt": ",d", **_CORPUS}),
        "sequences": ("sequences", "", {"fmt": ",d", **_CORPUS}),
        "before": ("naive_share", "", {"fmt": ".1%", **_CORPUS}),
        "before_longest": ("naive_longest_share", "", {"fmt": ".1%", **_CORPUS}),
        "after": ("bucket_share", "", {"fmt": ".1%", **_CORPUS}),
        "after_longest": ("bucket_longest_share", "", {"fmt": ".1%", **_CORPUS}),
        "rows_before": ("naive_rows", "", {"fmt": ",d", **_CORPUS}),
        "rows_after": ("bucket_rows", "", {"fmt": ",d", **_CORPUS}),
        "diversity": ("bucket_diversity", "", {"fmt": ".3g", **_CORPUS}),
        "naive_diversity": ("naive_diversity", "", {"fmt": ".3g", **_CORPUS}),
        "bucket": ("bucket_size", "tok", {"fmt": "d", **_CORPUS}),
        "knee": ("knee", "tok", {"fmt": "d", **_CORPUS}),
        # from the step-scaling fit at the corpus's width: the fit's bootstrap interval, where it has one
        "step": ("step_s", "s", {"display": "ms", "fmt": ".3g", "basis": basis.FEW}),
        "epoch": ("epoch_s", "s", {"fmt": ",.0f", "basis": basis.FEW}),
        "saving": ("saving_s", "s", {"fmt": ",.0f", "basis": basis.FEW}),
    }
    TEMPLATE_ATTRS = frozenset(FIELDS)


class MaskView(FieldView):
    # the step times and slowdown carry their rounds' interval, and lack one only under 3 rounds; the padding share
    # and the window are arithmetic on the batch the probe built; attention is one profile's kernel time, as read
    FIELDS = {
        "step": ("step_s", "s", {"display": "ms", "fmt": ".3g", "basis": basis.FEW}),
        "causal_step": ("causal_s", "s", {"display": "ms", "fmt": ".3g", "basis": basis.FEW}),
        "slowdown": ("slowdown", "", {"fmt": ".1%", "basis": basis.FEW}),
        "padding_share": ("padding_share", "", {"fmt": ".1%", "exact": True}),
        "window": ("window", "tok", {"fmt": "d", "exact": True}),
        "attention": ("attention_s", "s", {"display": "ms", "fmt": ".3g", "basis": basis.OBSERVED}),
        "causal_attention": ("causal_attention_s", "s", {"display": "ms", "fmt": ".3g", "basis": basis.OBSERVED}),
    }
    TEMPLATE_ATTRS = frozenset(FIELDS)


def defined(value: Any) -> Any:
    """An undefined name passed to a function fails here, naming itself (StrictUndefined raises on str())."""
    if isinstance(value, jinja2.Undefined):
        str(value)
    return value


def number(value: Any, what: str) -> float:
    """A plain number given in a template (a width, a parameter count): int, float or text like 250M."""
    defined(value)
    if isinstance(value, Quantity):
        raise ProbebookError(f"{what} takes a plain number, not a measured quantity")
    if isinstance(value, str):
        return projmod.parse_count(value, what)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ProbebookError(f"{what} must be a number, got {value!r}")
    return value
