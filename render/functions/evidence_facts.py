"""Page functions for what a sentence about evidence needs checked: ``paired``, ``step_ratio``, ``written``,
``sources``, ``between_sessions``.

``paired(ref, arm)`` analyses an interleaved arm against its baseline round by round
(``render.derive.paired``): the saving with its bootstrap interval, the paired difference in seconds, the
signed-rank p. ``step_ratio(ref, other)`` compares two runs that were not interleaved
(``render.derive.unpaired``): the ratio of their medians with a bootstrap interval that resamples each run on
its own. ``written(ref)`` is when an evidence document was written, so that a claim can say which of two runs
came first; ``sources(ref, ...)`` counts the measuring-source versions behind the cited runs.
Plain functions registered by ``render.functions.registry.page_function``, each called with the page first.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from measure.errors import ProbebookError
from render.derive import basis, intervals, replication
from render.derive import paired as pairedmod
from render.derive import sessions as sessionsmod
from render.derive import unpaired as unpairedmod
from render.evidence import series
from render.functions.page import Page
from render.functions.registry import page_function
from render.functions.views import EvidenceRef, call_text, defined, quantity
from render.numbers.links import field_anchor, row_anchor, rows_anchor, with_column
from render.numbers.quantity import Quantity
from render.numbers.units import conversion_factor


class PairedView:
    """An interleaved arm against its baseline, paired by round; each attribute is a Quantity."""

    TEMPLATE_ATTRS: ClassVar[frozenset[str]] = frozenset({"saving", "low", "high", "difference", "p", "rounds"})

    def __init__(self, change: pairedmod.PairedChange, ref: EvidenceRef, key: str, what: str, anchor: str):
        self._c, self._ref, self._key, self._what, self._anchor = change, ref, key, what, anchor

    def _q(self, name: str, value: float | None, unit: str, **kw: Any) -> Quantity:
        return quantity(
            value, unit, self._ref, f"{self._what}; {name}", f"{self._key}.{name}", anchor=self._anchor, **kw
        )

    @property
    def saving(self) -> Quantity:
        """Median over rounds of ``1 − arm_i / baseline_i``, with its 95% bootstrap interval over rounds."""
        return self._q("saving", self._c.saving, "", fmt=".1%", bounded=True, uncertainty=self._c.saving_ci)

    @property
    def low(self) -> Quantity:
        """The saving interval's lower end (a claim that the arm saves time: ``.low > 0``); ``saving.low`` with the
        paired view's own key."""
        lo = self._c.saving_ci[0] if self._c.saving_ci else None
        return self._q(
            "low", lo, "", fmt=".1%", note=None if lo is not None else "fewer than 3 rounds", basis=basis.END
        )

    @property
    def high(self) -> Quantity:
        """The saving interval's upper end (a claim that the arm costs time: ``.high < 0``)."""
        hi = self._c.saving_ci[1] if self._c.saving_ci else None
        return self._q(
            "high", hi, "", fmt=".1%", note=None if hi is not None else "fewer than 3 rounds", basis=basis.END
        )

    @property
    def difference(self) -> Quantity:
        """Median over rounds of ``baseline_i − arm_i`` (seconds), with its interval."""
        return self._q("difference", self._c.difference_s, "s", display="ms", uncertainty=self._c.difference_ci)

    @property
    def p(self) -> Quantity:
        """Two-sided Wilcoxon signed-rank p over the rounds."""
        note = None if self._c.p_value is not None else "fewer than 6 rounds, or no difference in any round"
        return self._q("p", self._c.p_value, "", fmt=".2g", note=note, basis=basis.TEST)

    @property
    def rounds(self) -> Quantity:
        """Rounds that timed both arms."""
        return self._q("rounds", self._c.rounds, "", fmt="d", exact=True)


@page_function
def paired(
    page: Page, ref: Any, arm: str, baseline: str = "baseline", field: str = "step_s", by: str = "arm"
) -> PairedView:
    """An interleaved arm against its baseline, paired by round: ``.saving`` (with its interval) ``.low .high
    .difference .p .rounds``; ``by`` names the rows' arm field (``kind`` for the mask probe)."""
    ref = page.ref(ref, None, "paired()")
    rows = page.rows(ref)
    try:
        change = page.library.memo(
            ("paired", ref.id, arm, baseline, field, by),
            lambda: pairedmod.paired_change(
                pairedmod.by_round(rows, baseline, field, by), pairedmod.by_round(rows, arm, field, by)
            ),
        )
    except ProbebookError as exc:
        raise ProbebookError(f"paired(): {ref.alias} ({ref.short}), arm {arm!r}: {exc}") from None
    first = next(i for i, r in enumerate(rows) if r.get(by) == arm)
    what = (
        f"arm {arm} against {baseline} over {change.rounds} interleaved rounds, {field}: median of per-round "
        f"1 − arm/baseline; this run's interval: the {intervals.MEDIAN_METHOD} over rounds, coverage "
        f"{intervals.median_coverage(change.rounds):.1%}; Wilcoxon p"
    )
    named = {"baseline": None if baseline == "baseline" else baseline, "by": None if by == "arm" else by}
    key = f"paired({call_text(ref.alias, arm, **named)})"
    return PairedView(change, ref, key, what, row_anchor(first))


def _samples(page: Page, ref: EvidenceRef, field: str, where: dict[str, Any]) -> tuple[list[float], str]:
    """The numbers ``step_ratio`` compares from one run, and where its evidence page shows them: a sample field
    of the rows matching ``where``, or a list of numbers at a dotted ``data.`` path (``data.event_step.windows_s``)."""
    what = f"step_ratio(): {ref.alias} ({ref.short})"
    if field.startswith("data."):
        if where:
            raise ProbebookError(f"{what}: row conditions ({', '.join(where)}) apply to a sample field, not to {field}")
        node: Any = page.doc(ref)
        for part in field.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if not isinstance(node, list) or not node:
            raise ProbebookError(f"{what}: evidence has no list of numbers at {field!r}")
        if any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in node):
            raise ProbebookError(f"{what}: {field!r} holds something that is not a number")
        return [float(v) for v in node], field_anchor(page.doc(ref), field)
    for v in where.values():
        defined(v)
    rows = page.rows(ref)
    picked = [
        i
        for i, r in enumerate(rows)
        if all(r.get(k) == v for k, v in where.items())
        and isinstance(r.get(field), (int, float))
        and not isinstance(r.get(field), bool)
    ]
    if not picked:
        shown = ", ".join(f"{k}={v!r}" for k, v in where.items()) or "any row"
        raise ProbebookError(f"{what}: no {field!r} values in rows matching {shown}")
    return [float(rows[i][field]) for i in picked], with_column(rows_anchor(picked), field)


@page_function
def step_ratio(page: Page, ref: Any, other: Any, field: str = "step_s", **where: Any) -> Quantity:
    """Two runs that were not interleaved: ``median(ref) / median(other)`` of ``field`` (a sample field of the rows
    matching ``where``, or a ``data.`` path to a list of times), with a 95% bootstrap interval that resamples each
    run on its own and a Mann-Whitney U p in its title."""
    ra, rb = page.ref(ref, None, "step_ratio()"), page.ref(other, None, "step_ratio()")
    if ra.id == rb.id:
        raise ProbebookError(f"step_ratio(): {ra.alias} and {rb.alias} are one evidence document, not two runs")
    sa, anchor_a = _samples(page, ra, field, where)
    sb, anchor_b = _samples(page, rb, field, where)
    try:
        r = page.library.memo(
            ("step_ratio", ra.id, rb.id, field, tuple(sorted(where.items()))),
            lambda: unpairedmod.ratio_of_medians(sa, sb),
        )
    except ProbebookError as exc:
        raise ProbebookError(f"step_ratio(): {ra.alias} over {rb.alias}: {exc}") from None
    condition = "".join(f", {k}={v!r}" for k, v in sorted(where.items()))
    what = (
        f"median of {r.n_numerator} {field} of {ra.alias} / median of {r.n_denominator} of {rb.alias}{condition}; "
        f"95% percentile bootstrap resampling each run on its own ({unpairedmod.RESAMPLES} resamples)"
    )
    p_text = f"{r.p_value:.2g}" if r.p_value is not None else f"none (fewer than {unpairedmod.MIN_SAMPLES} samples)"
    return quantity(
        r.ratio,
        "",
        (ra.id, rb.id),
        what,
        f"step_ratio({call_text(ra.alias, rb.alias, field=None if field == 'step_s' else field, **where)})",
        fmt=".3g",
        uncertainty=r.ratio_ci,
        extra=(("Mann-Whitney U p", p_text),),
        anchor=anchor_a,
        more_anchors=(anchor_b,),
        order=(rb.alias, ra.alias) if r.ratio >= 1 else (ra.alias, rb.alias),
    )


def _written_s(doc: dict[str, Any], what: str) -> float:
    stamp = doc.get("created_at")
    try:
        return datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise ProbebookError(f"{what}: created_at {stamp!r} is not an ISO 8601 time") from None


@page_function
def written(page: Page, ref: Any) -> Quantity:
    """When an evidence document was written (its ``created_at``), for a claim of which run came first:
    ``claim(written(gemm) < written(sweep), "...")``."""
    ref = page.ref(ref, None, "written()")
    doc = page.doc(ref)
    return quantity(
        _written_s(doc, f"written(): {ref.alias} ({ref.short})"),
        "s",
        ref,
        f"the evidence's created_at, {doc.get('created_at')}, as seconds since 1970-01-01 UTC",
        f"written({ref.alias})",
        fmt=",.0f",
        basis=basis.OBSERVED,  # the clock's reading when the document was written
        anchor="envelope-created_at",
    )


@page_function
def sources(page: Page, *refs: Any) -> Quantity:
    """How many versions of the measuring code the cited runs recorded (distinct ``measure_source_sha256``);
    runs from before the hash was recorded are named in the derivation, not counted."""
    picked = [page.ref(r, None, "sources()") for r in refs]
    if not picked:
        raise ProbebookError("sources() takes one or more evidence aliases, e.g. sources(sweep, kernels)")
    hashes = {(page.doc(r).get("code") or {}).get("measure_source_sha256") for r in picked}
    unrecorded = [r.alias for r in picked if not (page.doc(r).get("code") or {}).get("measure_source_sha256")]
    hashes.discard(None)
    return quantity(
        len(hashes),
        "",
        tuple(dict.fromkeys(r.id for r in picked)),
        f"distinct measure_source_sha256 among {len(picked)} runs"
        + (f"; not recorded by {', '.join(unrecorded)} (older evidence)" if unrecorded else ""),
        f"sources({call_text(*(r.alias for r in picked))})",
        fmt="d",
        exact=True,  # a count of recorded hashes
    )


@page_function
def between_sessions(page: Page, *figures: Any) -> Quantity:
    """The spread between sessions of one configuration's figure: ``(max − min) / min`` of two or more
    Quantities from different evidence documents, e.g. ``between_sessions(hvp(a, ...).warm, hvp(b, ...).warm)``."""
    if len(figures) < 2 or not all(isinstance(q, Quantity) for q in figures):
        raise ProbebookError(
            "between_sessions() takes two or more numbers from evidence, e.g. between_sessions(a.warm, b.warm)"
        )
    if any(q.value is None for q in figures):
        raise ProbebookError(f"between_sessions(): {', '.join(q.key for q in figures if q.value is None)} has no value")
    docs = [q.evidence[:1] for q in figures]
    if len(set(docs)) < len(docs):
        raise ProbebookError("between_sessions(): two of its figures come from the same evidence document, one session")
    try:
        values = [float(q.value or 0) * conversion_factor(q.unit, figures[0].unit) for q in figures]
    except ProbebookError as exc:
        raise ProbebookError(f"between_sessions(): {exc}") from None
    keys = ", ".join(q.key for q in figures)
    try:
        spread = sessionsmod.relative_range(values)
    except ProbebookError as exc:
        raise ProbebookError(f"between_sessions({keys}): {exc}") from None
    # each session's figure redrawn from its own windows (its recipe), the range taken replicate by replicate
    ci = None
    if all(q.expr is None and q.resample is not None for q in figures):
        ci = sessionsmod.relative_range_interval(
            [intervals.draws(q.resample) * conversion_factor(q.unit, figures[0].unit) for q in figures]
        )
    return quantity(
        spread,
        "",
        tuple(dict.fromkeys(e for q in figures for e in q.evidence)),
        f"(max − min) / min of {keys}, each from its own session's evidence"
        + (f"; 95% interval: each session's windows resampled apart ({intervals.RESAMPLES:,} resamples)" if ci else ""),
        f"between_sessions({keys})",
        fmt=".1%",
        uncertainty=ci,
        basis=basis.carried([q.stated_basis for q in figures]),
    )


@page_function
def session_spread(page: Page, kind: str = "step") -> Quantity:
    """The between-session SD of a probe class (``step`` or ``kernel``) on the log scale, pooled over the archive's
    repeated configurations (``render.evidence.series``): what an across-sessions interval stands on."""
    if kind not in replication.DELTA:
        raise ProbebookError(f"session_spread({kind!r}): a probe class is one of {', '.join(replication.DELTA)}")
    pool = page.library.pools.get(kind)
    ids = series.pooled_ids(page.library.docs, kind)
    if pool is None or not ids:
        return Quantity(
            value=None, unit="", key=f"session_spread({kind})", note=f"the archive repeats no {kind} configuration"
        )
    return Quantity(
        value=pool.sd_log,
        unit="",
        fmt=".1%",
        evidence=ids,
        key=f"session_spread({kind})",
        uncertainty=replication.sd_interval(pool),
        derivation=(
            f"SD of the log session figures around each configuration's mean, pooled over {pool.configurations} "
            f"repeated points of {len(ids)} runs ({pool.df} degrees of freedom; replication.pooled_log_sd); "
            "95% interval: chi-square on those degrees of freedom"
        ),
    )
