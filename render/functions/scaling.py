"""Page function of the data-parallel records: ``ddp(run)`` (ARCHITECTURE.md §Pages).

Plain functions registered by ``render.functions.registry.page_function``, each called with the page first; the
derivations are in ``render/derive/scaling.py``. ``ddp(run)`` reads ``ddp`` evidence and returns a
``ScalingView``: per-GPU throughput at 1 and N GPUs, scaling efficiency, the all-reduce time per
step and how much of it backward hid, all-reduce bandwidths, ``.projected(n)`` (a projection,
labelled so in every derivation text) and ``.interconnect`` (what NVIDIA's and NCCL's own tools said).
"""

from __future__ import annotations

import re
from typing import Any

from measure.errors import ProbebookError
from render.derive import basis, reading, scaling
from render.derive.intervals import RESAMPLES
from render.functions.page import Page
from render.functions.registry import page_function
from render.functions.views import EvidenceRef, FieldView, number, quantity
from render.numbers import said
from render.numbers.links import escape_text, rows_anchor, with_column
from render.numbers.quantity import Quantity
from render.pages.sandbox import Block

_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # nvidia-smi underlines its header row with terminal escapes
_N1 = "N=1: only the 1-GPU baseline ran (one visible GPU)"
_BOOT = f"; 95% intervals: the windows of each median resampled, derived terms replicate by replicate ({RESAMPLES:,})"


class ScalingView(FieldView):
    # every median carries its windows' interval and every term derived from medians the interval of its
    # replicates (render.derive.scaling.summary_intervals); below 3 windows it says so; the GPU count and the
    # gradient's bytes are params
    FIELDS = {
        "gpus": ("gpus", "", {"fmt": "d", "exact": True}),
        "tok_s_1": ("tok_s_1", "tok/s", {"fmt": ".3g", "basis": basis.FEW}),
        "tok_s_n": ("tok_s_n", "tok/s", {"fmt": ".3g", "basis": basis.FEW}),
        "tok_s_all": ("tok_s_all", "tok/s", {"fmt": ".3g", "basis": basis.FEW}),
        "step_1": ("step_1_s", "s", {"display": "ms", "fmt": ".4g", "basis": basis.FEW}),
        "step_n": ("step_n_s", "s", {"display": "ms", "fmt": ".4g", "basis": basis.FEW}),
        "efficiency": ("efficiency", "", {"fmt": ".1%", "basis": basis.FEW}),
        "paired_efficiency": ("paired_efficiency", "", {"fmt": ".1%", "basis": basis.FEW}),
        "comm": ("comm_s", "s", {"display": "ms", "fmt": ".3g", "basis": basis.FEW}),
        "exposed": ("exposed_s", "s", {"display": "ms", "fmt": ".3g", "basis": basis.FEW}),
        "instrumented_step": ("instrumented_step_s", "s", {"display": "ms", "fmt": ".4g", "basis": basis.FEW}),
        "comm_share": ("comm_share", "", {"fmt": ".1%", "basis": basis.FEW}),
        "exposed_share": ("exposed_share", "", {"fmt": ".1%", "basis": basis.FEW}),
        "overlap": ("overlap", "", {"fmt": ".0%", "basis": basis.FEW}),
        "other": ("other_s", "s", {"display": "ms", "fmt": ".3g", "basis": basis.FEW}),
        "other_share": ("other_share", "", {"fmt": ".1%", "basis": basis.FEW}),
        "grad_bytes": ("grad_bytes", "B", {"display": "MiB", "fmt": ".4g", "exact": True}),
        "grad_allreduce": ("grad_allreduce_s", "s", {"display": "ms", "fmt": ".3g", "basis": basis.FEW}),
        "algbw": ("grad_algbw_b_s", "B/s", {"display": "GB/s", "fmt": ".3g", "basis": basis.FEW}),
        "busbw": ("grad_busbw_b_s", "B/s", {"display": "GB/s", "fmt": ".3g", "basis": basis.FEW}),
    }
    TEMPLATE_ATTRS = frozenset(FIELDS) | {"projected", "projected_gpus", "sweep_busbw", "interconnect", "unstable"}

    def __init__(
        self, summary: scaling.ScalingSummary, doc: dict[str, Any], ref: EvidenceRef, reps: dict[str, Any]
    ) -> None:
        notes = {name: _N1 for name, (source, _, _) in self.FIELDS.items() if getattr(summary, source) is None}
        if summary.paired_efficiency is None and summary.gpus > 1:
            notes["paired_efficiency"] = "no paired rounds in this evidence (ddp probe version 1)"
        if summary.comm_s == 0:
            notes["overlap"] = "no all-reduce time was measured"
        gpus = reading.counted(summary.gpus, "GPU")
        what = f"ddp evidence at {gpus}, {summary.tokens_per_rank} tokens per rank, medians"
        self._reps, self._spans = reps, scaling.summary_intervals(summary, reps)
        what += _BOOT if any(self._spans.values()) else ""
        named = {name: self._spans.get(source) for name, (source, _, _) in self.FIELDS.items()}
        super().__init__(vars(summary), (ref.id,), what, f"ddp({ref.alias})", notes, _landing(doc, summary.gpus), named)
        self._summary, self._doc, self._ref = summary, doc, ref

    def projected(self, gpus: Any) -> Quantity:
        """PROJECTION: scaling efficiency at ``gpus`` GPUs from the measured compute and communication terms."""
        n = int(number(gpus, "projected() gpus"))
        if n < 1:
            raise ProbebookError(f"projected(): gpus must be >= 1, got {n}")
        s = self._summary
        ci = scaling.projected_interval(s, self._reps, n)
        return quantity(
            scaling.projected_efficiency(s, n),
            "",
            self._evidence,
            f"PROJECTION, not a measurement: efficiency at {n} GPUs = step(1) / step({n}), "
            f"step({n}) = step({s.gpus}) + a·(ring({n})/ring({s.gpus}) − 1), a = the standalone all-reduce of "
            "the gradient, ring(n) = 2(n−1)/n at the measured bus bandwidth"
            + ("; 95% interval: the measured terms' windows resampled, the model as stated" if ci else ""),
            f"{self._key}.projected({n})",
            fmt=".1%",
            note=None if s.grad_allreduce_s is not None else _N1,
            uncertainty=ci,
            basis=basis.FEW,
        )

    def projected_gpus(self, gpus: Any) -> Quantity:
        """The GPU count a projection is made at, as a ledger row: an input the page chooses, not a measurement,
        so that ``diff`` sees it beside ``projected(n)`` (issue 23)."""
        n = int(number(gpus, "projected_gpus() gpus"))
        if n < 1:
            raise ProbebookError(f"projected_gpus(): gpus must be >= 1, got {n}")
        return quantity(
            n,
            "",
            self._evidence,
            f"the GPU count projected() is evaluated at ({n}): an input of the page, not a measurement",
            f"{self._key}.projected_gpus({n})",
            fmt="d",
            exact=True,
        )

    def sweep_busbw(self, mib: Any) -> Quantity:
        """Bus bandwidth of the standalone all-reduce sweep at ``mib`` MiB (nccl-tests ``busbw``)."""
        nbytes = int(float(number(mib, "sweep_busbw() MiB")) * 2**20)
        swept = self._summary.sweep_busbw_b_s
        if self._summary.gpus > 1 and nbytes not in swept:
            shown = ", ".join(f"{b / 2**20:g}" for b in sorted(swept)) or "none"
            raise ProbebookError(f"sweep_busbw(): {mib} MiB was not swept in {self._ref.alias} (MiB swept: {shown})")
        return quantity(
            swept.get(nbytes),
            "B/s",
            self._evidence,
            f"{self._what}; all-reduce of {nbytes} bytes: busbw = bytes / median time · 2(n−1)/n (nccl-tests)",
            f"{self._key}.sweep_busbw({mib:g})" if isinstance(mib, (int, float)) else f"{self._key}.sweep_busbw({mib})",
            display="GB/s",
            fmt=".3g",
            note=None if nbytes in swept else _N1,
            uncertainty=self._spans.get(f"sweep:{nbytes}") if nbytes in swept else None,
            basis=basis.FEW,
        )

    @property
    def unstable(self) -> Block:
        """A note naming the step measurements whose windows' CV stayed over 5% (nothing when none did)."""
        points = (self._doc.get("data") or {}).get("points") or []
        flagged = [p for p in points if p.get("phase") == "step" and p.get("unstable")]
        if not flagged:
            return Block("")
        which = " and ".join(reading.counted(int(p["gpus"]), "GPU") for p in flagged)
        why = "the step windows' coefficient of variation stayed over 5% after the extra windows; flagged unstable"
        ids = (self._evidence.id,) if isinstance(self._evidence, EvidenceRef) else tuple(self._evidence)
        sentence = said.Said(f"{self._key}.unstable", f"At {which}: {why}.", ids, f"{self._what}; unstable points")

        def shown(page: str) -> str:
            text = escape_text(sentence.text)
            return f'!!! note "Unstable windows"\n\n    {said.linked(page, text, sentence) if page else text}\n'

        return Block(shown(""), (), (sentence,), shown)

    @property
    def interconnect(self) -> Block:
        """``nvidia-smi topo -m`` and the transports NCCL's own log named, as recorded (code blocks)."""
        observed = (self._doc.get("data") or {}).get("observed") or {}
        phase = (observed.get("phases") or {}).get(str(self._summary.gpus)) or {}
        topo = _ANSI.sub("", observed.get("topology") or "(nvidia-smi was not available)")
        transports = ", ".join(phase.get("transports") or []) or "none named (gloo, or one GPU)"
        version = phase.get("nccl_version") or "not printed"
        lines = [
            "```text",
            *(line.replace("```", "'''") for line in str(topo).rstrip().splitlines()),
            "```",
            "",
            f"NCCL transports as logged: {escape_text(transports)}; NCCL version as logged: {escape_text(version)}.",
            "",
        ]
        return Block("\n".join(lines))


def _landing(doc: dict[str, Any], gpus: int) -> dict[str, str]:
    """Where each figure's inputs are on the evidence page (``render.derive.scaling.summarize`` reads the same rows):
    the GPU count on its params row, a 1-GPU figure on the 1-GPU step rows, the rest on the N-GPU rows of its phase."""
    rows = (doc.get("data") or {}).get("samples") or []

    def at(phase: str, n: int, column: str) -> str:
        picked = [
            i for i, r in enumerate(rows) if isinstance(r, dict) and r.get("phase") == phase and r.get("gpus") == n
        ]
        return with_column(rows_anchor(picked), column) if picked else ""

    step_1, step_n = at("step", 1, "step_s"), at("step", gpus, "step_s")
    comm, reduce = at("comm", gpus, "comm_s"), at("allreduce", gpus, "time_s")
    out = dict.fromkeys(ScalingView.FIELDS, step_n)
    out.update(gpus="params-gpus", tok_s_1=step_1, step_1=step_1, paired_efficiency=at("paired", gpus, "step_s"))
    out.update(dict.fromkeys(("comm", "exposed", "instrumented_step", "comm_share", "exposed_share", "overlap"), comm))
    out.update(dict.fromkeys(("grad_allreduce", "algbw", "busbw"), reduce))
    return out


@page_function
def ddp(page: Page, ref: Any) -> ScalingView:
    """Data-parallel scaling of ``ddp`` evidence: efficiency, communication, bandwidths, projection."""
    ref = page.ref(ref, "ddp", "ddp()")
    doc = page.doc(ref)
    summary = page.library.memo(("ddp", ref.id), lambda: scaling.summarize(doc))
    reps = page.library.memo(("ddp replicates", ref.id), lambda: scaling.replicates(doc, f"{ref.id}|ddp"))
    return ScalingView(summary, doc, ref, reps)
