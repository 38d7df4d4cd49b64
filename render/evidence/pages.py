"""One generated page per evidence id (ARCHITECTURE.md §Pages); the index of them is ``render/evidence/index.py``.

A page is titled by what was measured (probe, preset, shape, date) with the id beneath it, opens
with one sentence saying what the document holds, and shows the envelope, the machine (its idle
clock at fingerprint and the clocks the run itself recorded, each labelled), the params, the raw
samples as a table whose rows carry anchors (``#row-12``) that number links land on, any other data
as a field table, the pages that cite it, the numbers taken from it (``render.evidence.taken``: where a derived
number's link lands), and downloads: the archived JSON bytes unchanged, the
samples as CSV, the whole archive as one reproducible tarball and the site's ledger. Raw floats
show six significant figures without exponents (``render.derive.reading.readable_float``); the exact
values stay in the JSON download. Every text taken from the evidence (notes, source, column names,
values) is escaped, so evidence cannot inject markup into the site.
"""

from __future__ import annotations

import gzip
import io
import json
import re
import statistics
import tarfile
from dataclasses import dataclass
from typing import Any

from measure.evidence.configkey import config_key
from render.derive import marks, reading
from render.evidence import fields, points, reproduction, taken
from render.evidence import history as hist
from render.evidence.folds import fold
from render.numbers.links import (
    MAX_OTHER,
    MAX_ROWS,
    RUN_CLOCKS,
    SAMPLES,
    escape_text,
    evidence_page,
    field_id,
    flatten,
    machine_anchor,
    relative_link,
    row_anchor,
    scrub_paths,
    short_id,
)
from render.pages.layout import nav_title
from render.tables import columns

MAX_LIST = 24
"""Items of a list of plain values shown in one "Other data" cell."""
TARBALL = "evidence/probebook-archive.tar.gz"
"""Tree path of the whole archive as one download (``archive_tarball``)."""
LEDGER = "ledger.json"
"""Tree path of the build's ledger (every published number)."""

# Machine fields a reader misreads without a label: the fingerprint is taken before the run, on an idle card.
_MACHINE_LABELS = {
    "sm_clock_mhz": "SM clock at fingerprint, idle",
    "sm_clock_max_mhz": "SM clock, maximum",
    "mem_clock_mhz": "memory clock at fingerprint",
    "temperature_c": "temperature at fingerprint",
    "hostname_hash": "host (hash of its name)",
    "gpu_count": "GPUs in the machine",
}
# Shape params, in the order a title names them, each as (param, how it reads).
_SHAPE = (
    ("gpus", "{} GPUs"),
    ("batch", "batch {}"),
    ("batches", "batches {}"),
    ("seq_len", "{} tokens"),
    ("seq_lens", "{} tokens"),
    ("contexts", "contexts {}"),
    ("tokens", "{} tokens"),
    ("microbatches", "microbatches {}"),
)


def readable(value: Any, column: str = "") -> str:  # a samples cell: six figures, as stored (the column names the unit)
    """A stored value as page text: floats to six figures without exponents, lists joined, text escaped; under a
    ``column`` that names a point in time (``device_acquired_unix``), seconds since 1970 as a UTC date and time,
    since six figures of a unix time read as a count (``1,796,080,000``)."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "true" if value else "false"
    if column and fields.is_unix_time(column, value):
        return fields.utc_iso(value)
    if isinstance(value, float):
        return reading.readable_float(value)
    if isinstance(value, int):
        return reading.minus(str(value))
    if isinstance(value, (dict, list)):
        return escape_text(scrub_paths(json.dumps(value, sort_keys=True, ensure_ascii=False)))
    return escape_text(scrub_paths(str(value)))  # a folder of the measuring host reads as <dir>


def _span(values: Any) -> str:
    """``[512, 1024, 8192]`` -> ``512–8192``; one value as itself; a list of up to three names listed."""
    if not isinstance(values, list):
        return str(values)
    if values and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        lo, hi = min(values), max(values)
        return f"{lo:g}" if lo == hi else f"{lo:g}–{hi:g}"
    return ", ".join(str(v) for v in values[:3]) + (" …" if len(values) > 3 else "")


def shape_text(params: dict[str, Any]) -> str:
    """What a run's shape params say, e.g. ``batch 4 × 512–8192 tokens`` (empty when it has none)."""
    parts = [form.format(_span(params[key])) for key, form in _SHAPE if params.get(key) not in (None, [], "")]
    return " × ".join(parts)


def title_text(doc: dict[str, Any]) -> str:
    """Probe, preset, shape and date: ``step-scaling · 250m · batch 4 × 512–8192 tokens · 2026-11-29``."""
    params = doc.get("params") or {}
    parts = [str(doc.get("probe") or "evidence")]
    if params.get("preset"):
        parts.append(str(params["preset"]))
    shape = shape_text(params)
    if shape:
        parts.append(shape)
    if doc.get("created_at"):
        parts.append(str(doc["created_at"])[:10])
    return " · ".join(parts)


def summary_text(doc: dict[str, Any], n_rows: int, names: list[str]) -> str:
    """One sentence: what the document holds, where and when it was measured, and its status."""
    machine = doc.get("machine") or {}
    origin = doc.get("origin") or {}
    gpu = machine.get("gpu")
    where = f"on {machine.get('gpu_count') or 1} × {gpu}" if gpu else "on the CPU"
    how = "Imported" if origin.get("kind") == "imported" else f"Measured {where}"
    what = f"{n_rows} samples of {', '.join(names[:6])}{' …' if len(names) > 6 else ''}" if n_rows else "no samples"
    when = f" on {str(doc.get('created_at'))[:10]}" if doc.get("created_at") else ""
    version = f"{doc.get('probe')} probe version {doc.get('probe_version')}"
    said = _NOT_MEASURED.get(str(doc.get("probe")))
    if said is not None:  # a campaign's own documents measure nothing: say what they are, not "no samples"
        writer = f"{doc.get('probe')} version {doc.get('probe_version')}"
        return f"{said}, written{when} by {writer}. Status: {doc.get('status')}."
    return f"{how}{when} by the {version}: {what}. Status: {doc.get('status')}."


_NOT_MEASURED = {
    "campaign-audit": "A campaign audit: the verdict of re-deriving a finished campaign's points from their raw "
    "windows and checking its walk, receipts and job limits (its findings are below); it measures nothing",
    "campaign": "A campaign's collected record: which points ran, on which jobs, and the evidence each stored; "
    "it measures nothing itself",
    "campaign-plan": "A campaign's frozen plan: its grid, walk, executor and the hashes of the source every point "
    "runs; it measures nothing",
}
"""Documents that ``probebook campaign`` writes, not a probe: what each one is, said instead of a machine."""


def _fields_table(mapping: dict[str, Any], prefix: str) -> str:
    if not mapping:
        return "*(none recorded)*\n"
    lines = ["| field | value |", "|---|---|"]
    lines += [
        f"| {_with_anchor(field_id(prefix, str(k)), escape_text(fields.label(str(k))))} | "
        f"{fields.value_text(str(k), mapping[k])} |"
        for k in sorted(mapping)
    ]
    return "\n".join(lines) + "\n"


def machine_fields(doc: dict[str, Any]) -> list[tuple[str, Any]]:
    """(label, value) rows of the machine table: the fingerprint, labelled, then the clocks the run recorded."""
    return [(label, value) for label, value, _, _ in _machine_rows(doc)]


def _machine_rows(doc: dict[str, Any]) -> list[tuple[str, Any, str | None, str]]:
    """(label, value, anchor, the key its unit is read from) rows of the machine table."""
    machine = doc.get("machine") or {}
    rows: list[tuple[str, Any, str | None, str]] = [
        (_MACHINE_LABELS.get(str(k), fields.label(str(k))), machine[k], field_id("machine", str(k)), str(k))
        for k in sorted(machine)
    ]
    clocks = (doc.get("data") or {}).get("clocks")
    if isinstance(clocks, dict):
        rows += [
            (RUN_CLOCKS[k], clocks[k], machine_anchor(f"clocks.{k}"), "clock_mhz")
            for k in RUN_CLOCKS
            if clocks.get(k) is not None
        ]
    sampled = [
        r["sm_clock_mhz_median"]
        for r in (doc.get("data") or {}).get("samples") or []
        if isinstance(r, dict) and isinstance(r.get("sm_clock_mhz_median"), (int, float))
    ]
    if sampled:
        label = "SM clock in the timed windows, median of the windows' NVML medians"
        rows.append((label, statistics.median(sampled), None, "clock_mhz"))
    return rows


def _machine_table(doc: dict[str, Any]) -> str:
    rows = _machine_rows(doc)
    if not rows:
        return "*(none recorded)*\n"
    lines = ["| field | value |", "|---|---|"]
    lines += [f"| {_with_anchor(a, escape_text(k))} | {fields.value_text(unit, v)} |" for k, v, a, unit in rows]
    return "\n".join(lines) + "\n"


def _with_anchor(anchor: str | None, text: str) -> str:
    return f'<span id="{anchor}"></span>{text}' if anchor else text


def _samples_table(doc: dict[str, Any]) -> tuple[str, int, list[str]]:
    # plain rows, not samples_frame: a DataFrame per page and itertuples cost ~2 ms a page (bench/render.py)
    names, cells = columns.samples_columns(doc)
    if not names:
        return "*(no samples)*\n", 0, []
    lines = ["| # | " + " | ".join(escape_text(c) for c in names) + " |", "|---:|" + "---|" * len(names)]
    for i, row in enumerate(cells[:MAX_ROWS]):
        anchor = _with_anchor(row_anchor(i), str(i))  # data.samples index: the number links land here
        shown = (readable(None if _missing(v) else v, c) for v, c in zip(row, names, strict=True))
        lines.append(f"| {anchor} | " + " | ".join(shown) + " |")
    if len(cells) > MAX_ROWS:
        lines.append(f"\n*{len(cells) - MAX_ROWS} more rows in the CSV download.*")
    return "\n".join(lines) + "\n", len(cells), names


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def _list_cell(path: str, values: list[Any]) -> str:
    shown = ", ".join(fields.value_text(path, v) for v in values[:MAX_LIST])
    return f"[{shown}{f', … {len(values) - MAX_LIST} more' if len(values) > MAX_LIST else ''}]"


def _other_table(other: dict[str, Any]) -> str:
    rows = flatten(other)
    lines = ["| field | value |", "|---|---|"]
    for path, value in rows[:MAX_OTHER]:
        cell = _list_cell(path, value) if isinstance(value, list) else fields.value_text(path, value)
        lines.append(f"| {_with_anchor(field_id('data', path), escape_text(fields.label(path)))} | {cell} |")
    if len(rows) > MAX_OTHER:
        lines.append(f"\n*{len(rows) - MAX_OTHER} more fields in the JSON download.*")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Prepared:
    """An evidence page made before the pages that cite it are rendered: everything but its "Cited by" list."""

    head: str
    """The page's Markdown up to the list (its heading included)."""
    tail: str
    """The page's Markdown after the list."""
    csv: bytes
    """The samples as CSV (``tables.samples_csv``)."""
    history: str = ""
    """The tree path of the history page of the run's configuration key, "" when its key has none."""


def prepare(ident: str, doc: dict[str, Any]) -> Prepared:
    """The evidence page and its CSV download, less the list of pages that cite it (``page_files`` adds it)."""
    rel, hexpart = evidence_page(ident), ident.split(":", 1)[1]
    origin = doc.get("origin") or {}
    code = doc.get("code") or {}
    envelope = {
        "id": ident,
        "schema": doc.get("schema"),
        "probe": doc.get("probe"),
        "probe_version": doc.get("probe_version"),
        "created_at": doc.get("created_at"),
        "status": doc.get("status"),
        "origin": origin.get("kind"),
    }
    if origin.get("kind") == "imported":
        envelope["source"] = origin.get("source")
    if doc.get("error") is not None:
        envelope["error"] = doc["error"]
    if doc.get("notes") is not None:
        envelope["notes"] = doc["notes"]
    table, n, names = _samples_table(doc)
    head = [f"# {escape_text(nav_title(title_text(doc)))}", ""]  # the engine makes the page's <title> from it
    # the id as a subtitle, full and short: the theme's search splits words at ":" too, so both hex forms are words
    head.append(f"`{ident}` (short: `{short_id(ident)}`)")
    head += ["", escape_text(summary_text(doc, n, names)), ""]
    for mark in marks.marks(doc):  # the harness, options not engaged, a busy device (issue 27)
        kind = "note" if mark.kind == "harness" else "warning"
        head += [f'!!! {kind} "{mark.title}"', "", f"    This run {escape_text(mark.text)}.", ""]
    head.append(
        f"Downloads: [JSON, as archived]({hexpart}.json) · [samples as CSV]({hexpart}.csv) · "
        f"[the whole archive (tar.gz)]({relative_link(rel, TARBALL)}) · "
        f"[the ledger of published numbers]({relative_link(rel, LEDGER)})"
    )
    history = hist.history_page(config_key(doc).ident) if hist.has_history(doc) else ""
    if history:  # every run of this configuration, whichever record cites it (render.evidence.historypage)
        head[-1] += f" · [history of this configuration]({relative_link(rel, history)})"
    head.append("")
    head += ["## Envelope", "", _fields_table(envelope, "envelope")]
    head += ["## Cited by", ""]
    tail = ["", "## Code", "", _fields_table(code, "code")]
    tail += ["## Machine", "", _machine_table(doc)]
    tail += ["## Params", "", _fields_table(doc.get("params") or {}, "params")]
    tail += [f"## Raw samples ({n})", ""]
    note = "Numbers show six significant figures; the JSON download holds the exact values." if n else ""
    tail += [_with_anchor(SAMPLES, note), "", fold(table, "raw samples")]
    other = {k: v for k, v in (doc.get("data") or {}).items() if k != "samples"}
    listed = points.section(doc)  # a campaign's points, one row each, before the field dump that stops at MAX_OTHER
    if listed is not None:
        tail += [fold(listed, "points")]
    view = reproduction.section(ident, doc)  # a reproduction reads as data, not as a field dump (issue 24)
    if view is not None:
        tail += [view]
    elif other:
        tail += ["## Other data", "", fold(_other_table(other), "fields")]
    return Prepared("\n".join(head), "\n".join(tail), columns.samples_csv(doc).encode("utf-8"), history)


Entry = tuple[str, str, str, str, str]
"""A number taken from the evidence (``render.evidence.taken.by_evidence``)."""


def page_markdown(
    ident: str, doc: dict[str, Any], cited_by: list[tuple[str, str]], numbers_taken: list[Entry] | None = None
) -> str:
    """The evidence page; ``cited_by`` lists (tree path, title) of pages that use it, ``numbers_taken`` the ledger
    numbers that cite it (``render.evidence.taken``)."""
    return _page(ident, prepare(ident, doc), cited_by, numbers_taken or [])


_VERSION = re.compile(r"/v([0-9]+)\.md$")


def cited_lines(rel: str, cited_by: list[tuple[str, str]]) -> list[str]:
    """The "Cited by" list of the page ``rel``: one line per title, each version of a record a link of its own
    (``- Title: [version 1](…), [version 2](…)``), nothing repeated, in the order the pages came."""
    by_title: dict[str, list[str]] = {}
    for path, title in cited_by:
        paths = by_title.setdefault(title, [])
        if path not in paths:
            paths.append(path)
    out = []
    for title, paths in by_title.items():
        versions = [(_VERSION.search(p), p) for p in paths]
        if len(paths) == 1:
            m = versions[0][0]
            out.append(
                f"- [{escape_text(title)}]({relative_link(rel, paths[0])})" + (f", version {m.group(1)}" if m else "")
            )
            continue
        versions.sort(key=lambda mp: int(mp[0].group(1)) if mp[0] else 0)
        links = [f"[{f'version {m.group(1)}' if m else 'page'}]({relative_link(rel, p)})" for m, p in versions]
        out.append(f"- {escape_text(title)}: {', '.join(links)}")
    return out


def _page(ident: str, prepared: Prepared, cited_by: list[tuple[str, str]], numbers_taken: list[Entry]) -> str:
    rel = evidence_page(ident)
    cited = cited_lines(rel, cited_by)
    page = "\n".join([prepared.head, *(cited or ["*No page cites this evidence yet.*"]), prepared.tail])
    listed = taken.section(rel, numbers_taken, dict(cited_by), prepared.history)
    return page + ("\n" + fold(listed, "numbers") if listed else "")


def page_files(
    ident: str,
    doc: dict[str, Any],
    raw: bytes,
    cited_by: list[tuple[str, str]],
    prepared: Prepared | None = None,
    numbers_taken: list[Entry] | None = None,
) -> dict[str, bytes]:
    """The page and its two downloads, by tree path; ``prepared``: the page as ``prepare`` made it earlier;
    ``numbers_taken``: the ledger numbers that cite it (``render.evidence.taken``)."""
    hexpart = ident.split(":", 1)[1]
    made = prepared if prepared is not None else prepare(ident, doc)
    return {
        evidence_page(ident): _page(ident, made, cited_by, numbers_taken or []).encode("utf-8"),
        f"evidence/{hexpart}.json": raw,
        f"evidence/{hexpart}.csv": made.csv,
    }


def archive_tarball(raw: dict[str, bytes], published: bytes | None, epoch: int) -> bytes:
    """The archive as one ``.tar.gz``, byte-identical for the same evidence and ``epoch``.

    Members are ``evidence/sha256/<2>/<62>.json`` (and ``published/ledger.json``) in sorted order, each
    with mtime ``epoch`` (the build's SOURCE_DATE_EPOCH), mode 0644, owner 0:0 and no owner names; the
    gzip header carries no file name and the same mtime (reproducible-builds.org's archive advice).
    """
    members = {
        f"evidence/sha256/{i.split(':', 1)[1][:2]}/{i.split(':', 1)[1][2:]}.json": data for i, data in raw.items()
    }
    if published is not None:
        members["published/ledger.json"] = published
    folders = sorted({"/".join(name.split("/")[:k]) for name in members for k in range(1, name.count("/") + 1)})
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=epoch, compresslevel=9) as gz:
        with tarfile.open(fileobj=gz, mode="w", format=tarfile.USTAR_FORMAT) as tar:
            for name in sorted(folders + list(members)):
                info = tarfile.TarInfo(name)
                info.mtime, info.uid, info.gid, info.uname, info.gname = epoch, 0, 0, "", ""
                if name in members:
                    info.size, info.mode = len(members[name]), 0o644
                    tar.addfile(info, io.BytesIO(members[name]))
                else:
                    info.type, info.mode = tarfile.DIRTYPE, 0o755
                    tar.addfile(info)
    return buf.getvalue()
