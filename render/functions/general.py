"""The page functions of numbers read from one run's evidence, and of the page's own language: ``value``,
``median``, ``saving``, ``share_of``, ``constant``, ``claim``, ``context`` (``fit`` is
``render.functions.step_scaling``'s; what a measured rate gives, ``project``, ``nominal`` and ``mfu``, is
``render.functions.rates``').

Each returns a ``Quantity`` (or a view whose attributes are Quantities) built from archived evidence by a
pure derivation in ``render.derive``. Evidence is named by the aliases in the page's front matter; an alias
in a template is an ``EvidenceRef``. README.md's table of page functions says what each gives.
"""

from __future__ import annotations

import statistics
from dataclasses import replace
from typing import Any, ClassVar

from measure.errors import ProbebookError
from render.derive import basis, fields, intervals
from render.derive.ablation import saving_fraction
from render.functions.page import Page
from render.functions.registry import page_function
from render.functions.views import EvidenceRef, call_text, defined, quantity
from render.numbers import claims, legend
from render.numbers.links import field_anchor, rows_anchor, with_column
from render.numbers.propagation import propagated
from render.numbers.quantity import Quantity, recipes_of, shift_leaves, tree
from render.numbers.units import conversion_factor
from render.pages import methodology


@page_function
def value(page: Page, ref: Any, path: str, unit: str = "", fmt: str = ".3g", display: str | None = None) -> Quantity:
    """One number stored in the evidence at a dotted ``path`` (``params.batch``, ``data.samples.0.step_s``)."""
    ref = page.ref(ref, None, "value()")
    node: Any = page.doc(ref)
    for part in str(path).split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise ProbebookError(f"value(): evidence {ref.alias} ({ref.short}) has no field {path!r}")
    if isinstance(node, bool) or not isinstance(node, (int, float)):
        raise ProbebookError(f"value(): field {path!r} of {ref.alias} is {node!r}, not a number")
    page.reads.setdefault(str(path), set()).add(ref.id)
    anchor = field_anchor(page.doc(ref), str(path))
    # memoised: one document's field has one answer, and a page may show it several times
    said = dict(page.library.memo(("value basis", ref.id, path), lambda: _field_uncertainty(page, ref, path, node)))
    how = said.pop("derivation", f"evidence field {path}")
    q = quantity(node, unit, ref, how, f"value({ref.alias}, {path})", fmt=fmt, anchor=anchor, **said)
    return q.to(display) if display else q


def _field_uncertainty(page: Page, ref: EvidenceRef, path: str, recorded: float) -> dict[str, Any]:
    """What ``value()`` says of a stored number's uncertainty, by what the field is (``render.derive.fields``): a
    count or param is exact, a reading observed, a recorded time or rate whose windows the document keeps carries
    their median's bootstrap interval (``few windows`` under three), any other summary is as recorded."""
    said = fields.field_basis(path)
    if said == basis.EXACT:
        return {"exact": True}  # an input the run was given or a count: in arithmetic, a plain number
    found = fields.windows(page.data(ref), path, recorded) if fields.timed(path) else None
    if found is None:
        return {"basis": said}
    n, where = len(found.values), f"its {len(found.values)} windows, {found.source}"
    if n < intervals.MIN_SAMPLES:
        return {"basis": basis.FEW, "derivation": f"evidence field {path}; the median of {where}, too few to resample"}
    rows = f"{ref.id}|{list(found.rows)}" if found.rows is not None else f"{ref.id}|{path}"
    return {
        "uncertainty": intervals.median_interval(found.values),
        "resample": intervals.median_recipe(found.values, rows),
        "derivation": f"evidence field {path}; this run's interval: {intervals.MEDIAN_METHOD} over {where}, "
        f"coverage {intervals.median_coverage(n):.1%}",
    }


@page_function
def constant(page: Page, name: str) -> Quantity:
    """A number of the methods themselves (CV threshold, default windows, bootstrap replicates), read from
    the code that uses it (``render.pages.methodology``); it cites no evidence."""
    return methodology.constant(name)


@page_function
def share_of(page: Page, part: Quantity, whole: Quantity, fmt: str = ".1%") -> Quantity:
    """The ratio ``part / whole`` of two quantities whose units differ at most by a prefix."""
    defined(part), defined(whole)
    if not (isinstance(part, Quantity) and isinstance(whole, Quantity)):
        raise ProbebookError("share_of() takes two quantities, e.g. share_of(fit(s).c, fit(s).max_residual)")
    factor = conversion_factor(part.unit, whole.unit)
    value = None
    if part.value is not None and whole.value not in (None, 0):
        value = part.value * factor / whole.value
    # A quotient's interval, to first order, where the two stand on different evidence (GUM §5.1.2); two numbers
    # of one document share its windows, and no interval is stated for them here.
    ci = propagated("/", part, whole, factor, value)
    how = _PROPAGATED if ci else ""
    recipes = recipes_of(part) + recipes_of(whole)
    exact = all(r is not None and r[0] == "exact" for r in recipes)  # a ratio of recorded params is exact
    if ci is None and not exact and value is not None and all(r is not None for r in recipes):  # resampled jointly
        (top, leaves) = tree(part)
        ci = intervals.joint_interval(("/", top, shift_leaves(tree(whole)[0], len(leaves)), factor), recipes)
        how = intervals.JOINT if ci else ""
    return Quantity(
        value=value,
        unit="",
        fmt=fmt,
        evidence=tuple(dict.fromkeys(part.evidence + whole.evidence)),
        derivation=f"{part.key} / {whole.key}" + how,
        key=f"share_of({part.key}, {whole.key})",
        uncertainty=ci,
        exact=exact,
        note=None if value is not None else "a missing or zero operand",
        basis="" if ci or exact else basis.carried([part.stated_basis, whole.stated_basis]),  # two readings make one
    )


@page_function
def median(
    page: Page,
    ref: Any,
    field: str,
    unit: str | None = None,
    display: str | None = None,
    fmt: str | None = None,
    **where: Any,
) -> Quantity:
    """The median of one sample field over the rows matching ``where`` (e.g. ``arm="baseline"``)."""
    ref = page.ref(ref, None, "median()")
    rows = page.rows(ref)
    where = {k: selector(v, f"median(): {k}=") for k, v in where.items()}
    indices = _field_rows(rows, field, where, f"median(): {ref.alias} ({ref.short})")
    values = [rows[i][field] for i in indices]
    base, shown, spec = field_unit(field)
    condition = ", ".join(f"{k}={v!r}" for k, v in sorted(where.items()))
    ci = intervals.median_interval(values)
    q = quantity(
        statistics.median(values),
        unit if unit is not None else base,
        ref,
        f"median of {len(values)} samples of {field}"
        + (f" where {condition}" if where else "")
        + (_BOOT if ci else ""),
        f"median({call_text(ref.alias, field, *(f'{k}={v}' for k, v in sorted(where.items())))})",
        fmt=fmt or spec,
        anchor=with_column(rows_anchor(indices), field),
        uncertainty=ci,
        resample=intervals.median_recipe(values, f"{ref.id}|{indices}"),
        # under 3 samples no interval (one sample is that window's own reading); from 3 up every field's median
        # gets one, peak_bytes as well as step_s: a peak moves with the allocator's state from window to window,
        # and equal peaks give the interval (v, v), which is what they show
        basis="" if ci else basis.OBSERVED if len(values) == 1 else basis.FEW,
    )
    if display:
        return q.to(display)  # the page chose the unit
    return replace(q, display=shown) if shown and unit is None else q  # a hint: the prefix still fits the value


@page_function
def saving(page: Page, ref: Any, arm: str, baseline: str = "baseline", field: str = "step_s") -> Quantity:
    """What an ablation arm removes: ``1 − median(arm) / median(baseline)`` of ``field`` (fraction)."""
    ref = page.ref(ref, None, "saving()")
    rows = page.rows(ref)
    what = f"saving(): {ref.alias} ({ref.short})"
    arm_rows = _field_rows(rows, field, {"arm": arm}, what)
    arm_values = [rows[i][field] for i in arm_rows]
    base_rows = _field_rows(rows, field, {"arm": baseline}, what)
    base_values = [rows[i][field] for i in base_rows]
    return quantity(
        saving_fraction(statistics.median(arm_values), statistics.median(base_values)),
        "",
        ref,
        f"1 − median {field} of arm {arm} / median {field} of arm {baseline}; 95% interval: the arms' windows "
        f"resampled independently ({intervals.RESAMPLES:,} resamples; paired() keeps interleaved rounds' pairing)",
        f"saving({call_text(ref.alias, arm, baseline=None if baseline == 'baseline' else baseline)})",
        fmt=".1%",
        anchor=with_column(rows_anchor(arm_rows + base_rows), field),
        bounded=True,
        uncertainty=intervals.saving_interval(arm_values, base_values),
        resample=_saving_recipe(
            intervals.median_recipe(arm_values, f"{ref.id}|{arm_rows}"),
            intervals.median_recipe(base_values, f"{ref.id}|{base_rows}"),
        ),
    )


def _saving_recipe(arm: intervals.Recipe | None, base: intervals.Recipe | None) -> intervals.Recipe | None:
    return None if arm is None or base is None else ("saving", arm, base)


@page_function
def claim(page: Page, *args: Any) -> claims.Claim:
    """``claim(CONDITION, ..., "sentence")``: the sentence, shown only while every comparison holds."""
    if not args:
        raise ProbebookError('claim() takes one or more comparisons and then the sentence, e.g. claim(a < b, "...")')
    for a in args:
        defined(a)
    return claims.make(tuple(args[:-1]), args[-1])


class ContextMark:
    """What ``context()`` returns: the visible mark of a sentence the evidence does not check."""

    TEMPLATE_ATTRS: ClassVar[frozenset[str]] = frozenset()
    evidence: tuple[str, ...] = ()

    def template_markdown(self, page: str) -> str:
        return legend.sign_markdown(legend.CONTEXT)  # a sign and the page's legend, not the words every time


@page_function
def context(page: Page) -> ContextMark:
    """``... {{ context() }}``: shows the sign ‡ (context, not checked: its tooltip and the page's legend) after a
    comparative sentence the evidence cannot
    check (a method's rule, an order of steps, a reason), so the comparative-sentence lint passes it
    (``render.pages.comparative``) and the reader sees it is not a checked claim."""
    return ContextMark()


_PROPAGATED = "; 95% interval propagated to first order (GUM §5.1.2)"
_BOOT = f"; this run's interval: {intervals.MEDIAN_METHOD} over the windows"
"""What a median's derivation says of its interval (``render.derive.intervals``)."""


def field_unit(field: str) -> tuple[str, str | None, str]:
    """(base unit, display unit, format) for a sample field, from the naming convention (ARCHITECTURE.md §Evidence)."""
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


def selector(value: Any, what: str) -> Any:
    """A row selector as given, or the whole number an exact, unitless quantity holds (a batch or a context another
    function read from the evidence, ``batch_summary(...).largest_batch``), so a page can pick the row it names; a
    measured quantity with an interval or a unit selects nothing and is refused."""
    if not isinstance(value, Quantity):
        return value
    held = value.value
    if value.exact and not value.unit and held is not None and float(held).is_integer():
        return int(held)
    raise ProbebookError(f"{what} takes a value rows hold (a batch, a context, a name), not a measured quantity")


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
