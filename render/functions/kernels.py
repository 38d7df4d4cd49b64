"""Page functions of the kernel records: ``gemm_ceiling``, ``gemm_ceiling_series``, ``gemm_clock``,
``kernel_share``, ``kernel_time`` (ARCHITECTURE.md §Pages).

Plain functions registered by ``render.functions.registry.page_function``, each called with the page first; the
derivations are in ``render/derive/gemm.py`` and ``render/derive/kernels.py``.
"""

from __future__ import annotations

import statistics
from typing import Any

from measure.errors import ProbebookError
from measure.evidence.configkey import card_of, config_key
from render.derive import basis, gemm, intervals, kernels, replication
from render.evidence import series
from render.functions.page import Page
from render.functions.registry import page_function
from render.functions.views import EvidenceRef, call_text, quantity
from render.numbers.links import rows_anchor, short_id, with_column
from render.numbers.quantity import Quantity
from render.tables import columns

_BOOT = f"; this run's interval: the {intervals.MEDIAN_METHOD} of the windows, mapped to the rate"
_SUMMED = "; the profile sums each kernel over the profiled steps, with no per-step rows to resample"


@page_function
def gemm_ceiling(page: Page, ref: Any, shape: str | None = None) -> Quantity:
    """A GEMM shape's FLOP/s at its median window: ``2·m·n·k / median time`` (same-session ceiling);
    ``shape="workload"``: the step's GEMM mix, each shape weighted by how often a step runs it."""
    ref = page.ref(ref, "gemm", "gemm_ceiling()")
    rows = columns.evidence_rows(
        "gemm_ceiling()",
        page.doc(ref),
        {"shape": (str,), "m": (int,), "n": (int,), "k": (int,), "time_s": (int, float)},
        "gemm",
    )
    if shape == "workload":
        return _workload_ceiling(page, ref, rows)
    try:
        g, flop_s = gemm.gemm_ceiling_flop_s(rows, shape)
    except ProbebookError as exc:
        raise ProbebookError(f"gemm_ceiling(): {exc}") from None
    ci = gemm.ceiling_interval(g)
    return quantity(
        flop_s,
        "FLOP/s",
        ref,
        f"GEMM {g.shape} ({g.m}×{g.n}×{g.k}): 2·m·n·k / median of {g.windows} windows" + (_BOOT if ci else ""),
        f"gemm_ceiling({call_text(ref.alias, shape=shape)})",
        display="TFLOP/s",
        fmt=".4g",
        anchor=_shape_rows(page, ref, {g.shape}),
        uncertainty=ci,
        resample=gemm.ceiling_recipe(g, f"{ref.id}|gemm {g.shape}"),
        basis=basis.FEW,
    )


@page_function
def gemm_clock(page: Page, ref: Any, shape: str | None = None) -> Quantity:
    """The SM clock the GEMM windows ran at (gemm v2 samples it in every window): the median of the windows'
    medians, of one ``shape`` or of all; beside a step's clock it says whether the ceiling is the step's."""
    ref = page.ref(ref, "gemm", "gemm_clock()")
    try:
        mhz, windows = gemm.shape_clock_mhz(page.rows(ref), shape)
        ci = gemm.clock_interval(page.rows(ref), shape)
    except ProbebookError as exc:
        raise ProbebookError(f"gemm_clock(): {ref.alias} ({ref.short}): {exc}") from None
    return quantity(
        mhz,
        "MHz",
        ref,
        f"median over {windows} windows of each window's median SM clock (NVML)"
        + (f", shape {shape}" if shape else ", every shape")
        + (_BOOT if ci else ""),
        f"gemm_clock({call_text(ref.alias, shape=shape)})",
        fmt=".4g",
        uncertainty=ci,
        basis=basis.FEW,
    )


def _shape_rows(page: Page, ref: EvidenceRef, shapes: set[str]) -> str:
    """The fragment landing on the samples rows of ``shapes``, their ``time_s`` in view: the rows a ceiling used."""
    used = [i for i, r in enumerate(page.rows(ref)) if isinstance(r, dict) and r.get("shape") in shapes]
    return with_column(rows_anchor(used), "time_s")


def _workload_ceiling(page: Page, ref: EvidenceRef, rows: list[dict[str, Any]]) -> Quantity:
    points = (page.doc(ref).get("data") or {}).get("points")
    if not isinstance(points, list) or not all(isinstance(p, dict) and "shape" in p for p in points):
        raise ProbebookError(f"gemm_ceiling(): {ref.alias} ({ref.short}) records no per-shape counts (data.points)")
    counts = {p["shape"]: p.get("count", 0) for p in points}
    shapes = gemm.gemm_shapes(rows)
    try:
        flop_s = gemm.workload_ceiling_flop_s(shapes, counts)
    except ProbebookError as exc:
        raise ProbebookError(f"gemm_ceiling(): {ref.alias}: {exc}") from None
    used = sum(1 for g in shapes if counts.get(g.shape, 0))
    ci = gemm.workload_interval(shapes, counts, f"{ref.id}|gemm workload")
    return quantity(
        flop_s,
        "FLOP/s",
        ref,
        f"GEMM workload mix: Σ count·2·m·n·k / Σ count·median window time over the {used} shapes a step runs"
        + (f"; 95% interval: each shape's windows resampled ({intervals.RESAMPLES:,} resamples)" if ci else ""),
        f"gemm_ceiling({call_text(ref.alias, shape='workload')})",
        display="TFLOP/s",
        fmt=".4g",
        anchor=_shape_rows(page, ref, {g.shape for g in shapes if counts.get(g.shape, 0)}),
        uncertainty=ci,
        basis=basis.FEW,
    )


@page_function
def kernel_share(page: Page, ref: Any, category: str) -> Quantity:
    """Share of summed device kernel time in one category (attention, gemm, ...)."""
    ref = page.ref(ref, None, "kernel_share()")
    rows = columns.evidence_rows(
        "kernel_share()", page.doc(ref), {"kernel": (str,), "category": (str,), "device_time_s": (int, float)}
    )
    shares = kernels.category_shares(rows)
    if category not in shares:
        raise ProbebookError(f"kernel_share(): no category {category!r} (present: {', '.join(sorted(shares))})")
    return quantity(
        shares[category],
        "",
        ref,
        f"device kernel time in {category} / all device kernel time (user annotation rows left out)" + _SUMMED,
        f"kernel_share({ref.alias}, {category})",
        fmt=".1%",
        bounded=True,
        basis=basis.OBSERVED,
    )


@page_function
def kernel_time(page: Page, ref: Any, category: str | None = None) -> Quantity:
    """Device kernel seconds per profiled step, in one category or all (user annotation rows left out)."""
    ref = page.ref(ref, "kernels", "kernel_time()")
    doc = page.doc(ref)
    rows = kernels.counted_rows(
        columns.evidence_rows(
            "kernel_time()", doc, {"kernel": (str,), "category": (str,), "device_time_s": (int, float)}
        )
    )
    picked = rows if category is None else [r for r in rows if r["category"] == category]
    if not picked:
        present = ", ".join(sorted({r["category"] for r in rows}))
        raise ProbebookError(f"kernel_time(): no category {category!r} (present: {present})")
    steps: Any = (doc.get("params") or {}).get("steps")  # checked by the derivation
    return quantity(
        kernels.kernel_seconds_per_step(picked, steps),
        "s",
        ref,
        f"device kernel time{' in ' + category if category else ''} summed over {steps} profiled steps / "
        f"{steps} (user annotation rows left out)" + _SUMMED,
        f"kernel_time({call_text(ref.alias, *([category] if category else []))})",
        display="ms",
        fmt=".3g",
        basis=basis.OBSERVED,
    )


@page_function
def gemm_ceiling_series(page: Page, ref: Any, shape: str) -> Quantity:
    """The canonical same-card ceiling of a GEMM ``shape``: every finished measured session in the archive that
    timed this shape at ``ref``'s size and dtype on ``ref``'s card model (whatever record cites it, whatever else
    the run timed), each session's ``2·m·n·k / median time``, as where a new session lands
    (``replication.prediction``: the sessions' geometric mean and its 95% prediction interval). Its evidence is
    every session; each configuration's history page lists its own.

    Pooled by the shape, not the configuration key: a run's key also holds the other shapes it timed (the
    preset, ``tokens``), which do not change how long one square product takes, so one shape has one ceiling
    per card (issue 39) where keying by configuration would give it one per run design."""
    ref = page.ref(ref, "gemm", "gemm_ceiling_series()")
    if shape == "workload":
        raise ProbebookError("gemm_ceiling_series(): give one shape; the workload's mix is gemm_ceiling()'s")
    docs = page.library.docs
    wanted, _ = gemm.gemm_ceiling_flop_s(_gemm_rows(ref.id, page.doc(ref)), shape)
    ident_of = _shape_ident(page.doc(ref))
    figures: dict[str, float] = {}
    for ident in sorted(docs, key=lambda i: (str(docs[i].get("created_at") or ""), i)):
        doc = docs[ident]
        if doc.get("probe") != "gemm" or not _counted(doc) or _shape_ident(doc) != ident_of:
            continue
        rows = _gemm_rows(ident, doc)
        same = [g for g in gemm.gemm_shapes(rows) if g.shape == shape]
        if same and all((g.m, g.n, g.k) == (wanted.m, wanted.n, wanted.k) for g in same):
            figures[ident] = gemm.gemm_ceiling_flop_s(rows, shape)[1]
    if not figures:
        raise ProbebookError(f"gemm_ceiling_series(): {ref.alias} ({ref.short}) is no finished measured session")
    keys = sorted({config_key(docs[i]).ident for i in figures})
    pool = page.library.pools.get(replication.probe_class("gemm"))
    guess = replication.prediction(list(figures.values()), pool)
    return quantity(
        guess.center if guess is not None else statistics.geometric_mean(figures.values()),
        "FLOP/s",
        tuple(figures),
        f"GEMM {shape} ({wanted.m}×{wanted.n}×{wanted.k}, {ident_of[1]}) on {ident_of[0]}: 2·m·n·k / median window "
        f"time in each of {len(figures)} sessions of configuration{'s' if len(keys) > 1 else ''} {', '.join(keys)}, "
        + (
            f"their geometric mean; {_across(guess)}"
            if guess is not None
            else "their geometric mean; no between-session SD to say where a new session lands"
        ),
        f"gemm_ceiling_series({call_text(ref.alias, shape=shape)})",
        display="TFLOP/s",
        fmt=".4g",
        uncertainty=(guess.low, guess.high) if guess is not None else None,
        basis="" if guess is not None else basis.FEW,
        band=replication.DELTA["kernel"],  # across-sessions already: series.across passes it through
    )


def _gemm_rows(ident: str, doc: dict[str, Any]) -> list[dict[str, Any]]:
    try:
        return columns.evidence_rows(
            "gemm_ceiling_series()",
            doc,
            {"shape": (str,), "m": (int,), "n": (int,), "k": (int,), "time_s": (int, float)},
            "gemm",
        )
    except ProbebookError as exc:
        raise ProbebookError(f"gemm_ceiling_series(): {short_id(ident)}: {exc}") from None


def _shape_ident(doc: dict[str, Any]) -> tuple[str, str]:
    """What a shape's time depends on besides its size: the card model and the product's dtype (``gemm_dtype``;
    gemm version 1 recorded it as ``dtype``)."""
    found_params, found_machine = doc.get("params"), doc.get("machine")
    params: dict[str, Any] = found_params if isinstance(found_params, dict) else {}
    machine: dict[str, Any] = found_machine if isinstance(found_machine, dict) else {}
    return card_of(machine), str(params.get("gemm_dtype") or params.get("dtype"))


def _across(guess: replication.Prediction) -> str:
    spread = guess.spread
    where = "their own" if spread.source == "own" else "the archive's repeated kernel configurations'"
    return (
        f"95% interval across sessions: where a new session on this card lands, from these {guess.sessions} sessions "
        f"and {where} between-session SD ({spread.sd_log:.1%} on the log scale, {spread.df} degrees of freedom; "
        "replication.prediction)"
    )


def _counted(doc: dict[str, Any]) -> bool:
    """A finished measured run: a session (``render.evidence.series.MEASURED``)."""
    return (doc.get("origin") or {}).get("kind") == "measured" and doc.get("status") in series.MEASURED
