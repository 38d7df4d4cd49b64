"""Page functions of a kernels profile's timeline: ``host_wait`` (where the GPU's time went: busy, waiting for the
host, otherwise idle; launch delays and short kernels) and ``trace_diff`` (two profiles side by side) (issue 43).

The attribution is the probe's (``measure.evidence.attribution``, stored as ``data.attribution`` from kernels v7 on a
GPU): one profile's trace read once, so each number is observed, with no windows to resample.
"""

from __future__ import annotations

from typing import Any, ClassVar

from render.derive import basis
from render.functions.blocks import table_asset
from render.functions.page import Page
from render.functions.registry import page_function
from render.functions.views import FieldView
from render.pages.sandbox import Asset

_SHARE = {"fmt": ".1%", "bounded": True, "basis": basis.OBSERVED}
_US = {"display": "µs", "fmt": ".3g", "basis": basis.OBSERVED}


class HostWaitView(FieldView):
    FIELDS: ClassVar[dict[str, tuple[str, str, dict[str, Any]]]] = {
        "busy_share": ("busy_share", "", _SHARE),
        "host_wait_share": ("host_wait_share", "", _SHARE),
        "other_idle_share": ("other_idle_share", "", _SHARE),
        "launch_delay": ("launch_delay.median_s", "s", _US),
        "launch_delay_p90": ("launch_delay.p90_s", "s", _US),
        "short_kernels": ("short_kernels.per_step", "", {"fmt": ",.0f", "basis": basis.OBSERVED}),
    }
    TEMPLATE_ATTRS = frozenset(FIELDS)


_NAMES = tuple(HostWaitView.FIELDS)


def _flat(attribution: dict[str, Any]) -> dict[str, Any]:
    """The attribution's fields by the dotted names ``HostWaitView.FIELDS`` reads."""
    out = dict(attribution)
    for part in ("launch_delay", "short_kernels"):
        for key, value in (attribution.get(part) or {}).items():
            out[f"{part}.{key}"] = value
    return out


@page_function
def host_wait(page: Page, ref: Any) -> HostWaitView:
    """Where a profiled step's GPU time went (kernels v7 on a GPU): ``.busy_share .host_wait_share .other_idle_share``
    of the span its kernels cover, ``.launch_delay`` (median; ``.launch_delay_p90``), ``.short_kernels`` per step."""
    ref = page.ref(ref, "kernels", "host_wait()")
    attribution = (page.doc(ref).get("data") or {}).get("attribution")
    if not isinstance(attribution, dict) or "absent" in attribution:
        # shown as a note in place of each number: on the CPU the probe says why; before v7 it did not record one
        why = attribution.get("absent") if isinstance(attribution, dict) else "kernels v7 on a GPU records it"
        note = f"no attribution in this run (data.attribution): {why}"
        return HostWaitView(
            {}, (ref.id,), "no attribution", f"host_wait({ref.alias})", notes=dict.fromkeys(_NAMES, note)
        )
    threshold = (attribution.get("short_kernels") or {}).get("threshold_s")
    what = (
        f"the profiled steps' trace: kernel intervals' union over the span from the first kernel's start to the last's "
        f"end, an idle gap waiting for the host when the next kernel's launch call began after the GPU went idle; "
        f"short: under {threshold * 1e6:g} µs"
        if isinstance(threshold, (int, float))
        else "the profiled steps' trace"
    )
    return HostWaitView(_flat(attribution), (ref.id,), what, f"host_wait({ref.alias})")


@page_function
def trace_diff(page: Page, ref: Any, other: Any, top: int = 10) -> Asset:
    """Two kernels profiles side by side, ``ref`` (a) then ``other`` (b): per category, then the ``top`` kernels that
    moved most, each side's device time per profiled step and the change (a table with CSV and JSON downloads)."""
    picked = [page.ref(ref, "kernels", "trace_diff()"), page.ref(other, "kernels", "trace_diff()")]
    options = {} if top == 10 else {"top": top}
    # the ledger key names the call the template wrote, not the table() it builds
    key = f"trace_diff({', '.join([*(r.alias for r in picked), *([f'top={top!r}'] if options else [])])})"
    return table_asset(page, "trace-diff", picked, options, key)
