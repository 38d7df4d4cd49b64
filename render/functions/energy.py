"""The page function of a run's energy: ``energy()``, joules per step and per token with the windows' intervals
(issue 43; the derivation is ``render.derive.energy``, the projection's energy ``project(..., joules_per_token=)``).
"""

from __future__ import annotations

from typing import Any, ClassVar

from measure.errors import ProbebookError
from render.derive import basis, intervals
from render.derive import energy as energymod
from render.functions.page import Page
from render.functions.registry import page_function
from render.functions.views import FieldView, call_text, defined, number
from render.numbers.links import rows_anchor, with_column
from render.numbers.quantity import Quantity


class EnergyView(FieldView):
    FIELDS: ClassVar[dict[str, tuple[str, str, dict[str, Any]]]] = {
        "per_step": ("per_step_j", "J", {"fmt": ".3g"}),
        "per_token": ("per_token_j", "J/tok", {"display": "mJ/tok", "fmt": ".3g"}),
        "windows": ("windows", "", {"fmt": "d", "exact": True}),
    }
    TEMPLATE_ATTRS = frozenset(FIELDS)


def _tokens(rows: list[dict[str, Any]], given: Any) -> float | None:
    """Tokens per step: as the page gives them (a plain number, or an exact one such as a product of the run's
    params), else the rows' one ``tokens_per_step`` (None where they record none)."""
    if isinstance(given, Quantity) and given.exact and given.value is not None:
        return float(given.value)  # exact by nature (recorded params): no interval to carry into the energy
    if given is not None:
        return number(given, "tokens_per_step")
    found = {r["tokens_per_step"] for r in rows if isinstance(r.get("tokens_per_step"), (int, float))}
    if len(found) > 1:
        raise ProbebookError(
            f"energy(): the rows hold {len(found)} different tokens_per_step; pick one shape with where= arguments"
        )
    return float(next(iter(found))) if found else None


@page_function
def energy(page: Page, ref: Any, tokens_per_step: Any = None, **where: Any) -> EnergyView:
    """A run's energy from its windows' ``energy_j`` (GPU runs): ``.per_step`` (J, the windows' mean from the counter,
    median from power readings: ``render.derive.energy``),
    ``.per_token`` (over ``tokens_per_step``, else the rows' own), ``.windows``; ``where`` picks rows (``arm=``)."""
    ref = page.ref(ref, None, "energy()")
    for value in where.values():
        defined(value)
    rows = page.rows(ref)
    picked = [i for i, r in enumerate(rows) if all(r.get(k) == v for k, v in where.items())]
    used = [i for i in picked if energymod.energy_values([rows[i]])]
    values = energymod.energy_values([rows[i] for i in used])
    key = f"energy({call_text(ref.alias, *(f'{k}={v}' for k, v in sorted(where.items())))})"
    if not values:
        # shown as a note in place of each number, as host_wait() does: an older or CPU run says why it has none
        shown = ", ".join(f"{k}={v!r}" for k, v in where.items()) or "any row"
        note = (
            f"no energy_j in rows matching {shown} ({len(picked)} rows match): a CPU run, a card NVML cannot read, "
            "or a run from before energy was recorded"
        )
        return EnergyView({}, (ref.id,), "no energy", key, notes=dict.fromkeys(EnergyView.FIELDS, note))
    tokens = _tokens([rows[i] for i in used], tokens_per_step)
    facts = (page.doc(ref).get("machine") or {}).get("energy")
    statistic = energymod.statistic_for(facts)
    result = energymod.per_step(values, tokens, statistic)
    mean = statistic == energymod.MEAN
    ci = intervals.mean_interval(values) if mean else intervals.median_interval(values)
    recipe = (intervals.mean_recipe if mean else intervals.median_recipe)(values, f"{ref.id}|{used}")
    source = energymod.source_text(facts)
    few = basis.OBSERVED if len(values) == 1 else basis.FEW
    condition = ", ".join(f"{k}={v!r}" for k, v in sorted(where.items()))
    method = "percentile bootstrap of the mean" if mean else intervals.MEDIAN_METHOD
    what = (
        f"{statistic} joules per step of {len(values)} windows"
        + (f" where {condition}" if where else "")
        + f", read from {source}"
        + ("; the mean, since a window reads the counter's whole steps, not its own energy" if mean else "")
        + (f"; per token over {tokens:g} tokens per step" if tokens is not None else "")
        + (f"; this run's interval: {method} over the windows" if ci else "")
    )
    return EnergyView(
        {"per_step_j": result.per_step_j, "per_token_j": result.per_token_j, "windows": result.windows},
        (ref.id,),
        what,
        key,
        notes={"per_token": "no tokens per step: pass tokens_per_step="},
        landing=(with_column(rows_anchor(used), "energy_j"),),
        intervals={
            "per_step": ci,
            "per_token": intervals.scaled(ci, 1.0 / tokens) if tokens is not None else None,
        },
        resamples={"per_step": recipe},
        bases={} if ci else {"per_step": few, "per_token": few},
    )
