"""Kernel-time derivations from the ``kernels`` probe's raw rows (one row per profiler key).

A GPU *user annotation* (``record_function``: ``Optimizer.step#AdamW.step``, ``ProfilerStep#3``)
appears in ``key_averages()`` as a CUDA row whose device time spans every kernel launched inside
it, so counting it counts those kernels twice (PyTorch issue 130730). Version 1 of the probe
archived such rows among its kernel rows; every derivation here leaves them out, so evidence
already archived gives the corrected numbers from its own raw rows. Version 2 of the probe
keeps them apart in ``data.annotations``.

Architecture tags (``sm90``, ``sm_90a``, ``sm100``) are read from kernel names and compared with
the device's compute capability. Library namespaces such as thrust's ``THRUST_300001_SM_750_800_NS``
list the architectures a library was built for, in tens (750 is 7.5): they are not tags.
"""

from __future__ import annotations

import re
from typing import Any

from measure.errors import ProbebookError
from measure.evidence.kernel_names import categorize

ANNOTATION = re.compile(r"^(ProfilerStep#\d+|Optimizer\.\w+#\w+\.\w+)$")
"""Annotation names torch writes itself: the profiler's step marker and the optimizer's label."""
_NAMESPACE = re.compile(r"(?<![A-Za-z])SM(?:_\d{2,4})+")
_TAG = re.compile(r"(?<![a-z0-9])sm_?(\d{2,3})([af]?)(?![0-9a-z])", re.IGNORECASE)


def is_annotation_row(name: str) -> bool:
    """Whether a profiler row named ``name`` is a user annotation rather than device work."""
    return bool(ANNOTATION.match(name))


def counted_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows that are device work: every row except user annotations (rows without a name count), a row
    archived as ``other`` categorised again from its kernel name (``measure.evidence.kernel_names.categorize``).

    The category a probe archived is its reading of the name under the rules of its day, and the name is
    the evidence. A rule added later claims names the earlier rules left as ``other`` (cuDNN's attention
    helpers, issue 23 item 9), so reading those rows again corrects every archived profile from its own raw
    names, while a category the probe did assign stands: the rules live in one place, measure's."""
    return [
        {**r, "category": categorize(r["kernel"])}
        if r.get("category") == "other" and isinstance(r.get("kernel"), str)
        else r
        for r in rows
        if not is_annotation_row(str(r.get("kernel", "")))
    ]


def category_time_s(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Summed ``device_time_s`` (seconds) per ``category`` over the counted rows, in order of first appearance.

    The categories are the probe's (it classifies each kernel when it measures), so no list of
    them is kept in render.
    """
    totals: dict[str, float] = {}
    for row in counted_rows(rows):
        totals[row["category"]] = totals.get(row["category"], 0.0) + row["device_time_s"]
    return totals


def category_shares(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Fraction of summed ``device_time_s`` per ``category`` over the counted rows (fractions of 1, summing to 1)."""
    totals = category_time_s(rows)
    whole = sum(totals.values())
    if whole <= 0:
        return {}
    return {cat: t / whole for cat, t in totals.items()}


def kernel_shares(rows: list[dict[str, Any]]) -> list[float | None]:
    """Each counted row's fraction of the counted rows' summed ``device_time_s`` (None when that is not positive)."""
    counted = counted_rows(rows)
    total = sum(r["device_time_s"] for r in counted)
    return [r["device_time_s"] / total if total > 0 else None for r in counted]


def per_call_s(device_time_s: float, calls: int) -> float | None:
    """Mean device time of one call, seconds (None for a kernel with no calls)."""
    return device_time_s / calls if calls else None


def kernel_seconds_per_step(rows: list[dict[str, Any]], steps: int) -> float:
    """Device seconds per profiled step: the counted rows' ``device_time_s`` summed, divided by ``steps``."""
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ProbebookError(f"kernel time per step needs the number of profiled steps >= 1, got {steps!r}")
    return float(sum(r["device_time_s"] for r in counted_rows(rows)) / steps)


def arch_tags(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Device seconds per architecture tag found in kernel names (``sm90``, ``sm90a``), namespaces left out."""
    out: dict[str, float] = {}
    for row in counted_rows(rows):
        name = _NAMESPACE.sub(" ", str(row.get("kernel", "")))
        for digits, suffix in {(m.group(1), m.group(2).lower()) for m in _TAG.finditer(name)}:
            tag = f"sm{digits}{suffix}"
            out[tag] = out.get(tag, 0.0) + row["device_time_s"]
    return out


def tag_capability(tag: str) -> str:
    """The compute capability a tag names: ``sm90a`` -> ``9.0``, ``sm100`` -> ``10.0``, ``sm75`` -> ``7.5``."""
    m = re.fullmatch(r"sm(\d{2,3})[af]?", tag)
    if not m:
        raise ProbebookError(f"{tag!r} is not an architecture tag like sm90 or sm90a")
    digits = m.group(1)
    return f"{int(digits[:-1])}.{digits[-1]}"


def foreign_arch_tags(tags: dict[str, float], compute_capability: str | None) -> list[str]:
    """Tags naming another architecture than the device's ``compute_capability`` (``"9.0"``), sorted.

    An unknown capability (a CPU run, an old fingerprint) gives no finding: nothing to compare with.
    """
    if not compute_capability:
        return []
    return sorted(t for t in tags if tag_capability(t) != compute_capability)


def trace_diff(
    rows_a: list[dict[str, Any]], steps_a: int, rows_b: list[dict[str, Any]], steps_b: int, top: int = 10
) -> list[dict[str, Any]]:
    """Two profiles side by side, per profiled step: each category's device seconds in ``a`` and ``b`` and the change
    (``b − a``, seconds, and ``b / a − 1``), categories by the larger side's time, then the ``top`` kernels (by name,
    summed over the categories a name's rows fell in) that moved most, by the size of their change. A category or
    kernel absent from one side counts 0 s there; its relative change is None where ``a`` is 0."""
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise ProbebookError(f"trace_diff(): top must be a whole number >= 1, got {top!r}")
    for side, steps in (("a", steps_a), ("b", steps_b)):
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise ProbebookError(f"trace_diff(): {side} needs the number of profiled steps >= 1, got {steps!r}")

    def by(rows: list[dict[str, Any]], steps: int, field: str) -> dict[str, float]:
        out: dict[str, float] = {}
        for r in counted_rows(rows):
            out[r[field]] = out.get(r[field], 0.0) + r["device_time_s"] / steps
        return out

    def row(category: str, kernel: str, a: float, b: float) -> dict[str, Any]:
        return {"category": category, "kernel": kernel, "a_s": a, "b_s": b, "change_s": b - a,
                "change": b / a - 1 if a > 0 else None}  # fmt: skip

    cat_a, cat_b = by(rows_a, steps_a, "category"), by(rows_b, steps_b, "category")
    cats = sorted(set(cat_a) | set(cat_b), key=lambda c: (-max(cat_a.get(c, 0.0), cat_b.get(c, 0.0)), c))
    out = [row(c, "", cat_a.get(c, 0.0), cat_b.get(c, 0.0)) for c in cats]
    out.append(row("all", "", sum(cat_a.values()), sum(cat_b.values())))
    ker_a, ker_b = by(rows_a, steps_a, "kernel"), by(rows_b, steps_b, "kernel")
    home = {r["kernel"]: r["category"] for rows in (rows_b, rows_a) for r in counted_rows(rows)}
    names = sorted(set(ker_a) | set(ker_b), key=lambda k: (-abs(ker_b.get(k, 0.0) - ker_a.get(k, 0.0)), k))[:top]
    out += [row(home[k], k, ker_a.get(k, 0.0), ker_b.get(k, 0.0)) for k in names]
    return out
