"""Batch sweeps to OOM: per model and context, which batches fit and which is fastest.

Rows are batch-sweep evidence samples (ARCHITECTURE.md §Evidence): ``model``, ``params``, ``context``,
``batch``, ``tok_s``, ``peak_bytes``, ``status`` (``ok`` or ``oom``; an OOM row has no
throughput). Following ARCHITECTURE.md §Lessons, "fits" means more than "did not OOM": a batch counts as
fitting only if it ran (``ok``), lies below the first OOM, its peak is not above the card's total
memory (a proven spill), and its throughput has not collapsed against the neighbouring smaller
batch (``lossmem.stable_prefix``); a batch past a collapse is probably spilling, and one above an
OOM that happened to run is not reliable. An *unstable* batch (its windows' CV above 5%) fits but
never competes for the fastest stable batch: its median is not a reliable rate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from measure.errors import ProbebookError
from measure.evidence import contracts
from render.derive import basis
from render.derive.lossmem import COLLAPSE, row_device_bytes, spilled, stable_prefix, unstable
from render.derive.windows import median_ci, rate_interval, recorded_windows


@dataclass(frozen=True)
class BatchSummary:
    """One (model, context) group of a batch sweep."""

    model: str
    """Model name as the rows give it."""
    params: int
    """Parameter count of the model."""
    context: int
    """Sequence length, tokens."""
    fastest_stable_batch: int | None
    """Fitting, stable batch with the highest tokens/s (the smaller on a tie); None if none."""
    fastest_tok_s: float | None
    """Tokens/s at ``fastest_stable_batch``."""
    largest_fitting_batch: int | None
    """Largest batch that fits (ran, below the first OOM, no throughput collapse)."""
    first_oom_batch: int | None
    """Smallest batch that ran out of memory; None if none did."""
    unstable_batches: tuple[int, ...] = ()
    """Batches that ran but were flagged unstable (CV over 5%), ascending; never the fastest stable batch."""
    spilled_batches: tuple[int, ...] = ()
    """Batches whose peak was above the card's total memory (a proven spill), ascending."""
    runner_up_batch: int | None = None
    """The stable fitting batch with the next highest tokens/s; None with fewer than two."""
    tie: bool | None = None
    """Whether the fastest and the runner-up are a tie within noise (``tied``); None when either point lacks
    its windows' CV and count, or there is no runner-up."""

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "params": self.params,
            "context": self.context,
            "fastest_stable_batch": self.fastest_stable_batch,
            "fastest_tok_s": self.fastest_tok_s,
            "largest_fitting_batch": self.largest_fitting_batch,
            "first_oom_batch": self.first_oom_batch,
            "unstable_batches": list(self.unstable_batches),
            "spilled_batches": list(self.spilled_batches),
        }


def _check(i: int, row: dict[str, Any]) -> None:
    for column in ("model", "params", "context", "batch", "status"):
        if row.get(column) is None:
            raise ProbebookError(f"batch-sweep row {i}: missing {column}")
    why = contracts.status_problem(row)  # the rule's one home: measure/evidence/contracts.py
    if why is not None:
        raise ProbebookError(f"batch-sweep row {i}: {why}")


TIE_Z = 1.96
"""Two-sided 95% normal quantile: the runner-up ties when the gap is within this many standard errors."""


def tied(
    fast_tok_s: float, fast_cv: float, fast_windows: int, next_tok_s: float, next_cv: float, next_windows: int
) -> bool:
    """Whether two batch points' throughputs (tokens/s) are a tie within noise.

    Each point's median is over its own timed windows, independent of the other's, so the comparison is of
    two samples, not of pairs: the standard error of a point's throughput is ``tok_s · cv / √windows`` (the
    windows' CV is of the step time, and tokens/s moves by the same fraction), and the two tie when their
    gap is within ``TIE_Z`` standard errors of the gap, ``√(se₁² + se₂²)`` (issue 23: "fastest stable
    batch" must say whether the runner-up is distinguishable)."""
    for n in (fast_windows, next_windows):
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ProbebookError(f"a tie test needs a whole number of windows >= 1, got {n!r}")
    se_fast = fast_tok_s * fast_cv / fast_windows**0.5
    se_next = next_tok_s * next_cv / next_windows**0.5
    return bool(abs(fast_tok_s - next_tok_s) <= TIE_Z * (se_fast**2 + se_next**2) ** 0.5)


def fastest_basis(runner_up: int | None, tie: bool | None) -> tuple[str, str]:
    """Why the fastest stable batch has no interval of its own, and what its ledger row adds to its derivation:
    the batch is a choice among points, and the choice's uncertainty is ``tied``'s test against the runner-up.

    Returns (basis, words): ``a test`` with the test's verdict when it ran; ``exact`` when no runner-up was
    stable (nothing to tell it from); ``observed`` when either point lacks its windows' CV and count (the
    fastest as observed, untested)."""
    if runner_up is None:
        return basis.EXACT, "; the only stable fitting batch: no runner-up to tell it from"
    if tie is None:
        return basis.OBSERVED, f"; runner-up batch {runner_up} not tested (a point lacks its windows' CV or count)"
    verdict = "a tie within noise" if tie else f"distinguishable (gap over {TIE_Z} standard errors)"
    return basis.TEST, f"; against runner-up batch {runner_up}: {verdict}"


def throughput_interval(tok_s: float, cv: float, windows: int) -> tuple[float, float]:
    """95% interval of one batch point's throughput (tokens/s): ``tok_s ± TIE_Z · tok_s · cv / √windows``.

    A batch-sweep row keeps its windows' CV and count, not the windows, so its interval is the normal one of a
    mean of ``windows`` values with that CV (the same standard error ``tied`` compares two points with)."""
    half = TIE_Z * tok_s * cv / windows**0.5
    return tok_s - half, tok_s + half


def point_interval(rows: Sequence[dict[str, Any]], batch: float, tok_s: float) -> tuple[float, float] | None:
    """``throughput_interval`` of the ok row at ``batch``; None when the row lacks its CV and window count."""
    spread = _spread([r for r in rows if r.get("status") == "ok"], batch)
    return None if spread is None else throughput_interval(tok_s, spread[0], spread[1])


def tok_s_interval(row: dict[str, Any], windows: Sequence[Any]) -> tuple[float, float] | None:
    """95% bootstrap interval of an ok row's tokens/s from its timed windows (the document's ``data.windows``,
    each ``context``, ``batch``, ``step_s``): the row's rate is ``batch × context`` tokens over the windows'
    median, so the interval is the median's (``render.derive.windows``). None when the document keeps no windows
    of the row (older evidence, imported rows) or fewer than 3."""
    if row.get("status") != "ok":
        return None
    times = recorded_windows(windows, row, ("context", "batch"))
    if times is None:
        return None
    return rate_interval(int(row["batch"]) * int(row["context"]), median_ci(times))


def _spread(rows: Sequence[dict[str, Any]], batch: float) -> tuple[float, int] | None:
    """(cv, windows) of the one ok row at ``batch``; None when the row lacks them or several rows share it."""
    at = [r for r in rows if float(r["batch"]) == batch]
    if len(at) != 1:
        return None
    cv, windows = at[0].get("cv"), at[0].get("windows")
    if isinstance(cv, bool) or not isinstance(cv, (int, float)) or isinstance(windows, bool):
        return None
    return (float(cv), windows) if isinstance(windows, int) and windows >= 1 else None


def no_fastest_reason(g: BatchSummary) -> str:
    """Why ``g`` has no fastest stable batch, in words for the note beside the missing number.

    "No batch fits" only when none does; when batches fit but every one of them is flagged unstable the
    note says so and names them, since those batches ran and a reader can see them in the table (issue 23,
    item 8)."""
    if g.largest_fitting_batch is None:
        return "no batch fits"
    shaky = [b for b in g.unstable_batches if b <= g.largest_fitting_batch]
    listed = ", ".join(str(b) for b in shaky)
    return f"every batch that fits is unstable (CV over 5%): {listed}" if shaky else "no stable batch fits"


def summarize(
    rows: Sequence[dict[str, Any]], collapse: float = COLLAPSE, device_bytes: float | None = None
) -> list[BatchSummary]:
    """One summary per (model, context), ordered by params, model, then context.

    ``device_bytes`` is the card's total memory where the rows do not give it (the evidence's machine).
    """
    groups: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for i, row in enumerate(rows):
        _check(i, row)
        groups.setdefault((str(row["model"]), int(row["context"])), []).append(row)
    out = []
    for (model, context), group in groups.items():
        params = sorted({int(r["params"]) for r in group})
        if len(params) > 1:
            raise ProbebookError(
                f"batch-sweep model {model!r} has several params values ({params}); give each model one parameter count"
            )
        ooms = [int(r["batch"]) for r in group if r["status"] == "oom"]
        first_oom = min(ooms) if ooms else None
        ran = [
            (float(r["batch"]), float(r["tok_s"]))
            for r in group
            if r["status"] == "ok" and (first_oom is None or int(r["batch"]) < first_oom)
        ]
        below = [r for r in group if r["status"] == "ok" and (first_oom is None or int(r["batch"]) < first_oom)]
        spills = sorted(
            {int(r["batch"]) for r in below if spilled(r.get("peak_bytes"), row_device_bytes(r, device_bytes))}
        )
        shaky = sorted({int(r["batch"]) for r in below if unstable(r)})
        fits = stable_prefix(ran, collapse, spills)
        steady = [p for p in fits if int(p[0]) not in shaky]
        ranked = sorted(steady, key=lambda p: (-p[1], p[0]))
        fastest = ranked[0] if ranked else None
        runner = ranked[1] if len(ranked) > 1 else None
        tie = None
        if fastest is not None and runner is not None:
            a, b = _spread(below, fastest[0]), _spread(below, runner[0])
            if a is not None and b is not None:
                tie = tied(fastest[1], a[0], a[1], runner[1], b[0], b[1])
        out.append(
            BatchSummary(
                model=model,
                params=params[0],
                context=context,
                fastest_stable_batch=int(fastest[0]) if fastest else None,
                fastest_tok_s=fastest[1] if fastest else None,
                largest_fitting_batch=int(fits[-1][0]) if fits else None,
                first_oom_batch=first_oom,
                unstable_batches=tuple(shaky),
                spilled_batches=tuple(spills),
                runner_up_batch=int(runner[0]) if runner else None,
                tie=tie,
            )
        )
    return sorted(out, key=lambda s: (s.params, s.model, s.context))


def models(groups: Sequence[BatchSummary], stable: bool = False) -> list[str]:
    """The models of ``groups`` in their order (smallest first), once each; ``stable``: only models with a
    fastest stable batch in some group (``fastest_group`` of their groups is not None)."""
    return list(dict.fromkeys(g.model for g in groups if not stable or g.fastest_tok_s is not None))


def fastest_group(groups: Sequence[BatchSummary]) -> BatchSummary | None:
    """The group with the highest ``fastest_tok_s`` (tokens/s; the earlier group on a tie); None if nothing fits."""
    fitting = [g for g in groups if g.fastest_tok_s is not None]
    return max(fitting, key=lambda g: g.fastest_tok_s or 0.0) if fitting else None


MARGIN = 0.10
"""Share of the card's memory a recommended batch leaves free (dimensionless). Lightning's BatchSizeFinder gained a
margin after users ran out of memory in training at the size it found: fragmentation, a longer sequence or an
evaluation pass take more than the sweep's steady step (issue 43)."""


@dataclass(frozen=True)
class Headroom:
    """Memory headroom at a group's largest fitting batch, and the batch a stated margin recommends."""

    margin: float
    """Share of the card's memory kept free, dimensionless."""
    peak_bytes: float | None
    """Peak memory at the largest fitting batch, bytes; None when the row lacks it."""
    device_bytes: float | None
    """The card's total memory, bytes; None when neither the row nor the machine gives it."""
    headroom_bytes: float | None
    """``device_bytes - peak_bytes``, bytes."""
    headroom_share: float | None
    """``headroom_bytes / device_bytes``, dimensionless."""
    recommended_batch: int | None
    """Largest fitting batch whose peak is at most ``(1 - margin) x device_bytes``; None when none is."""


def headroom(
    rows: Sequence[dict[str, Any]], largest: int | None, device_bytes: float | None, margin: float = MARGIN
) -> Headroom:
    """The headroom of one (model, context) group's rows at its largest fitting batch ``largest`` and the batch
    that leaves ``margin`` of the card free; the fitting batches are the ``ok`` rows up to ``largest``."""
    if not 0 <= margin < 1:
        raise ProbebookError(f"batch headroom: margin must be in [0, 1), got {margin}")
    fitting = [r for r in rows if r.get("status") == "ok" and largest is not None and int(r["batch"]) <= largest]
    peaks = {int(r["batch"]): r.get("peak_bytes") for r in fitting}
    card = next((row_device_bytes(r, device_bytes) for r in fitting if row_device_bytes(r, device_bytes)), device_bytes)
    peak = peaks.get(largest) if largest is not None else None
    peak = float(peak) if isinstance(peak, (int, float)) and not isinstance(peak, bool) else None
    room = card - peak if card is not None and peak is not None else None
    below = [
        b
        for b, p in peaks.items()
        if card is not None and isinstance(p, (int, float)) and not isinstance(p, bool) and p <= (1 - margin) * card
    ]
    return Headroom(
        margin=margin,
        peak_bytes=peak,
        device_bytes=card,
        headroom_bytes=room,
        headroom_share=room / card if room is not None and card else None,
        recommended_batch=max(below) if below else None,
    )
