"""Tables of the input-pipeline probes, ``table("padding", pad)`` and ``table("mask", m)``, merged into tables.KINDS."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from measure.errors import ProbebookError
from render.derive import basis, kernels
from render.derive import padding as padmod
from render.derive.reading import significant
from render.numbers.links import field_anchor
from render.numbers.units import percent
from render.tables.cells import origin
from render.tables.columns import COLUMNS, Column, columns, fmt_count, fmt_ms, fmt_text, shown_in


def _padding(docs: list[dict[str, Any]]) -> tuple[list[Column], list[dict[str, Any]]]:
    """Naive batching, then bucket-to-pair at each swept bucket size: rows, padding shares, diversity."""
    records = []
    for d, doc in enumerate(docs):
        _need("padding", "padding", doc)
        for i, r in enumerate(doc["data"]["samples"]):
            records.append(
                {
                    "batching": r["batching"],
                    "bucket_size": r["bucket_size"],
                    "rows": r["rows"],
                    "padding_share": padmod.padding_share(r["tokens"], r["slots_width"]),
                    "padding_share_longest": padmod.padding_share(r["tokens"], r["slots_longest"]),
                    "roots_per_window": padmod.diversity(r["distinct_roots"], r["full_windows"]),
                    **origin([(d, i)]),
                }
            )
    # the probe counts tokens, slots, rows and roots of a fixed corpus through a seeded pipeline (no timing):
    # every number here is a count or arithmetic on counts, exact
    cols = columns(
        "batching",
        Column("bucket_size", "bucket (tokens)", fmt_count, unit="tokens", source="bucket_size", basis=basis.EXACT),
        "rows",
        # each share is 1 − tokens / slots: its link names the slots' column, the tokens beside it
        Column("padding_share", "padding, rows at width", percent, source="slots_width", basis=basis.EXACT),
        Column(
            "padding_share_longest",
            "padding, microbatch at longest",
            percent,
            source="slots_longest",
            basis=basis.EXACT,
        ),
        Column(
            "roots_per_window",
            "roots per window",
            lambda x: significant(x, 3),
            source="distinct_roots",
            basis=basis.EXACT,
        ),
    )
    return cols, records


def _lengths(docs: list[dict[str, Any]]) -> tuple[list[Column], list[dict[str, Any]]]:
    """The corpus's document-length histogram: documents per power-of-two length bin, and their share."""
    records = []
    for d, doc in enumerate(docs):
        _need("padding-lengths", "padding", doc)
        hist = doc["data"]["length_histogram"]
        total = sum(hist["counts"])
        # the histogram is a data field of its evidence page, not its samples: the cells land on its rows there
        edges, counts = (
            field_anchor(doc, "data.length_histogram.edges"),
            field_anchor(doc, "data.length_histogram.counts"),
        )
        at = {"from_tokens": edges, "below_tokens": edges, "documents": counts, "share": counts}
        for low, high, n in zip(hist["edges"][:-1], hist["edges"][1:], hist["counts"], strict=True):
            records.append(
                {
                    "from_tokens": low,
                    "below_tokens": high,
                    "documents": n,
                    "share": n / total,
                    **origin([(d, None)]),
                    "_at": at,
                }
            )
    # a histogram of the corpus's document lengths: bin edges and counts, and a count over the total, all exact
    cols = columns(
        Column("from_tokens", "from (tokens)", fmt_count, unit="tokens", basis=basis.EXACT),
        Column("below_tokens", "below (tokens)", fmt_count, unit="tokens", basis=basis.EXACT),
        "documents",
        dataclasses.replace(COLUMNS["share"], basis=basis.EXACT),
    )
    return cols, records


def _mask(docs: list[dict[str, Any]]) -> tuple[list[Column], list[dict[str, Any]]]:
    """Per mask kind: the SDPA backend the trace shows, its attention kernel and tags, median step, vs is_causal."""
    records = []
    for d, doc in enumerate(docs):
        _need("mask", "mask", doc)
        medians = padmod.mask_step_medians(doc["data"]["samples"])
        spans = padmod.mask_step_intervals(doc["data"]["samples"])
        causal = medians.get("causal")
        spread = {p["kind"]: p.get("cv") for p in doc["data"].get("points", []) if "kind" in p}
        for kind, seen in sorted(doc["data"]["observed"]["kinds"].items(), key=lambda kv: _ORDER.get(kv[0], 9)):
            rows = seen["attention_kernels"]
            top = max(rows, key=lambda r: r["device_time_s"])["kernel"] if rows else None
            median = medians.get(kind)
            records.append(
                {
                    "preset": doc["params"].get("preset"),
                    "kind": kind,
                    "sdpa_backend": "+".join(seen["sdpa_backends"]) or None,
                    "top_attention_kernel": top,
                    "arch_tags": " ".join(sorted(kernels.arch_tags(rows))) or None,
                    "median_step_s": median,
                    "vs_causal": None if causal is None or median is None else padmod.slowdown(median, causal),
                    "rounds_cv": spread.get(kind),
                    **origin(
                        [(d, i) for i, r in enumerate(doc["data"]["samples"]) if r.get("kind") in (kind, "causal")]
                    ),
                    **_mask_uncertainty(kind, spans.get(kind)),
                }
            )
    cols = [
        Column("preset", "model", fmt_text, False),
        Column("kind", "mask", fmt_text, False),
        Column("sdpa_backend", "SDPA backend (traced)", fmt_text, False),
        Column("top_attention_kernel", "top attention kernel", fmt_text, False, abbreviate=True),
        Column("arch_tags", "arch", fmt_text, False),
        Column("median_step_s", "step (ms)", fmt_ms, **shown_in("step_s"), basis=basis.FEW),
        Column("vs_causal", "vs is_causal", lambda x: f"{x:+.1%}", source="step_s", basis=basis.FEW),
        # the CV the probe computed over the kind's rounds and stored with its point
        Column("rounds_cv", "CV of rounds", percent, basis=basis.RECORDED),
    ]
    return cols, records


def _mask_uncertainty(kind: str, spans: Any) -> dict[str, Any]:
    """A mask record's ``_ci`` (``padmod.mask_step_intervals``: its median step's and its slowdown's, None with
    fewer than 3 rounds, as its columns say), and the basis of is_causal's own slowdown, 0 by definition."""
    step_ci, slowdown_ci = spans if spans is not None else (None, None)
    said = {"vs_causal": basis.EXACT} if kind == "causal" else {}
    return {"_ci": {"median_step_s": step_ci, "vs_causal": slowdown_ci}, "_basis": said}


def _need(table: str, probe: str, doc: dict[str, Any]) -> None:
    """Refuse evidence of another probe, naming the table and both probes."""
    if doc.get("probe") != probe:
        raise ProbebookError(f"table {table!r} needs {probe} evidence, got {doc.get('probe')} evidence")


_ORDER = {"causal": 0, "explicit": 1, "padded": 2, "padded-causal": 3, "sliding": 4, "document": 5}
PIPELINE_TABLES: dict[str, tuple[Callable[..., tuple[list[Column], list[dict[str, Any]]]], tuple[str, ...]]] = {
    "padding": (_padding, ()),
    "padding-lengths": (_lengths, ()),
    "mask": (_mask, ()),
}
"""Table kind -> (builder, options), merged into ``render.tables.columns.KINDS``."""
