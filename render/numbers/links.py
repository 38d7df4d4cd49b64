"""Text a number's page needs around it: Markdown-inert data text, link titles, evidence page paths, short ids."""

from __future__ import annotations

import hashlib
import posixpath
import re
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

_UNSAFE_TITLE = re.compile(r"[\\<>`]")


def title_text(text: str) -> str:
    """Text safe inside a Markdown link title: one line, either quote as ``’``, no backslashes, angle brackets or
    backticks. Python-Markdown ends a title at a quote followed by ``)`` whichever quote opened it, so
    ``shape='square-8192')`` inside a title would cut the link's address there."""
    return " ".join(_UNSAFE_TITLE.sub("", text.replace('"', "’").replace("'", "’")).split())


# What Markdown (with the extensions mkdocs.yml enables) or HTML could act on anywhere in a line: HTML's
# three specials become entities, Markdown's inline specials a backslash escape (Python-Markdown's
# ESCAPED_CHARS), so the generated source still reads as text ("step's", "0.00814").
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


_BACKSLASHED = set("\\`*[]|{}#")


# What acts only at the start of a line: a list item ("- ", "+ ", "12. "), a rule or setext underline ("---",
# "==="), a fence ("~~~") or an admonition ("!!!"); "+20%" or "2.11.0" are left as they read.
_LINE_START = re.compile(r"[-+](?=[\s-]|$)|[0-9]+[.)](?=\s|$)|=+\s*$|~~~|!!!")


def escape_text(text: Any) -> str:
    """Any data text -> inert Markdown that reads as the text: only what Markdown or HTML could act on is escaped.

    ``&``, ``<``, ``>`` become entities; ``\\ ` * [ ] | { } #`` and an ``_`` not inside a word get a backslash;
    a leading list, quote or ordered-list marker is escaped. Newlines become spaces, so the text stays inside
    the paragraph or table cell it was put in. The sanitizer after the engine is the boundary (ARCHITECTURE.md
    §Invariants, item 8); this keeps data from becoming markup in the first place.
    """
    s = " ".join(str(text).split())
    out = []
    for i, c in enumerate(s):
        if c in _ENTITIES:
            out.append(_ENTITIES[c])
        elif c in _BACKSLASHED or (c == "(" and i > 0 and s[i - 1] == "]"):
            out.append("\\" + c)  # "](" would open a link target (and render.pages.prose.check_links refuses it early)
        elif c == "_" and not (0 < i < len(s) - 1 and s[i - 1].isalnum() and s[i + 1].isalnum()):
            out.append("\\_")  # an underscore inside a word (created_at) never emphasises
        else:
            out.append(c)
    escaped = "".join(out)
    m = _LINE_START.match(escaped)
    if m:
        end = m.end() - 1
        escaped = escaped[:end] + f"&#{ord(escaped[end])};" + escaped[end + 1 :]
    return escaped


def evidence_page(ident: str) -> str:
    """The tree path of an evidence id's generated page, e.g. ``evidence/4be1c0ff....md``."""
    return f"evidence/{ident.split(':', 1)[-1]}.md"


def relative_link(page: str, target: str) -> str:
    """A relative link from the tree page ``page`` to the tree file ``target`` (both POSIX paths)."""
    return posixpath.relpath(target, posixpath.dirname(page) or ".")


def short_id(ident: str) -> str:
    """``sha256:`` and the first 12 hex digits: enough to name an id in prose and titles."""
    hexpart = ident.split(":", 1)[-1]
    return f"sha256:{hexpart[:12]}"


SAMPLES = "samples"
"""The anchor of an evidence page's raw samples table: where a number derived from all of its rows lands."""
MAX_ROWS = 500
"""Raw rows an evidence page shows (``render.evidence.pages``); a row past them is only in the CSV download."""


def rows_anchor(indices: Any) -> str:
    """Where a number computed from the samples rows ``indices`` (``data.samples`` positions) lands.

    One row is ``row-12`` (its own element); several are ``samples-r95-99`` (a run) or ``samples-r3-5_9_12``
    (runs joined by ``_``), which ``anchor_href`` turns into a link to the first row that names them all. No rows,
    or a row the page does not show, is the whole table, ``samples``.
    """
    rows = sorted({int(i) for i in indices})
    if not rows or rows[0] < 0 or rows[-1] >= MAX_ROWS:
        return SAMPLES
    if len(rows) == 1:
        return f"row-{rows[0]}"
    runs: list[list[int]] = []
    for i in rows:
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return "samples-r" + "_".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs)


_ID_SAFE = re.compile(r"[A-Za-z0-9_.-]{1,80}")
_ROWS = re.compile(r"(?:samples-r([0-9_-]+)|row-([0-9]+))(?:~([A-Za-z0-9_.-]+))?")


def with_column(anchor: str, column: str) -> str:
    """A rows anchor that also names the samples column holding the value (``samples-r95-99~time_s``), so the
    landing scrolls that column into view; an anchor that names no rows, or a column name that is not id-safe
    (letters, digits, ``_ . -``), is returned as it was."""
    if not anchor.startswith(("row-", "samples-r")) or not _ID_SAFE.fullmatch(column):
        return anchor
    return f"{anchor}~{column}"


def anchor_href(anchor: str) -> str:
    """The tail of a link to an evidence page that lands on ``anchor``: ``#params-batch``; for rows,
    ``?rows=95-99&col=time_s#row-95``: the fragment is the first row's own element (so the engine's link check
    and a browser without scripts land on it), the query names every row and the value's column, which
    ``numbers.js`` highlights and scrolls into view."""
    m = _ROWS.fullmatch(anchor or "")
    if not m:
        return "#" + (anchor or SAMPLES)
    spec, one, column = m.groups()
    if one is not None and column is None:
        return f"#row-{one}"
    spec = spec if spec is not None else one
    first = re.match(r"[0-9]+", spec)
    if first is None:
        return "#" + SAMPLES
    query = f"rows={spec}" + (f"&col={column}" if column else "")
    return f"?{query}#row-{first.group(0)}"


# An absolute path where a word starts (after a space, quote, '=', '(', '[' or ','): POSIX ("/home/u/runs/x"),
# home ("~/x") or Windows ("C:\\x").
_ABS_PATH = re.compile(r"""(?<![^\s'"=(\[,])(?:~|[A-Za-z]:\\|/)(?:[^\s'"`,;:]*[/\\])?[^\s'"`,;:]*""")
PLACEHOLDER = "<dir>"
"""What a path from the measuring machine reads as on a public page."""


def scrub_paths(text: str) -> str:
    """``text`` with every absolute path (``/home/u/runs/x``, ``~/data``, ``C:\\runs``) replaced by ``<dir>``.

    A reproduce command or a param recorded on the measuring host names that host's folders (a user name, a
    scratch mount); a public page shows where a reader puts their own. A lone ``/`` and relative paths stay.
    """

    def one(m: re.Match[str]) -> str:
        word = m.group(0)
        return word if word in ("/", "~") or len(word) < 2 else PLACEHOLDER

    return _ABS_PATH.sub(one, text)


def number_links(
    page: str,
    text: str,
    title: str,
    evidence: tuple[str, ...],
    anchors: tuple[str, ...],
    cited_as: tuple[str, str] | None = None,
) -> str:
    """Markdown of a number linked to each evidence document it is derived from: the text to the first, then one
    small numbered link per further document (``[2]``, ``[3]``, after a space), each to the rows it used there
    (``anchors``, position by position; a document without one lands on its samples table).

    ``cited_as``: the (page, ledger key) of the number's ledger row. With it, a number that the place its rows are
    does not show as the page shows it (a median, a share, a count, a value in another unit) lands on its own entry
    in that evidence page's "Numbers taken from this evidence" (``entry_anchor``), its rows still highlighted; one
    that place shows (a raw cell or field) lands there (``landing_place``)."""
    if not evidence:
        return text

    def target(i: int) -> str:
        anchor = anchors[i] if i < len(anchors) and anchors[i] else SAMPLES
        here = relative_link(page, evidence_page(evidence[i]))
        if cited_as is None:
            return here + anchor_href(anchor)
        place = landing_place(evidence[i], anchor, text)
        return here + (anchor_href(place) if place else entry_href(entry_anchor(*cited_as), anchor))

    out = f'[{text}]({target(0)} "{title}")'
    # plain Markdown, "[2]" as the link's text: raw HTML such as <sup> is escaped at the page's boundary
    more = [
        f'[\\[{i + 1}\\]]({target(i)} "{title_text(f"evidence {i + 1} of {len(evidence)}: {short_id(evidence[i])}")}")'
        for i in range(1, len(evidence))
    ]
    return out + ("".join(f" {m}" for m in more) if more else "")


def landing_fields(shown: str, text: str, anchors: tuple[str, ...], evidence: tuple[str, ...]) -> dict[str, Any]:
    """What a ledger row adds for its entries on evidence pages (``render.evidence.taken``): ``shown``, the number as
    its link reads when that is more than ``text`` (an interval, a mark), and ``anchors``, where on each evidence
    page its rows are, position by position ("" for the samples table), when any document names a place."""
    out: dict[str, Any] = {}
    if shown != text:
        out["shown"] = shown
    named = [a for a, _ in zip(anchors, evidence, strict=False)]
    if any(named):
        out["anchors"] = named + [""] * (len(evidence) - len(named))
    return out


def entry_anchor(page: str, key: str) -> str:
    """The element id of the entry, on an evidence page, of the ledger number ``key`` of ``page``: ``n-`` and 16 hex
    digits of the SHA-256 of both, so it is the same whichever way the build ran (ARCHITECTURE.md §Invariants, 5)
    and id-safe whatever the key holds."""
    return "n-" + hashlib.sha256(f"{page}\0{key}".encode()).hexdigest()[:16]


def entry_href(entry: str, anchor: str) -> str:
    """The tail of a link that lands on the entry ``entry`` and still names the rows ``anchor`` names, for
    ``numbers.js`` to highlight: ``?rows=95-99&col=time_s#n-…``; ``#n-…`` when the anchor names no rows."""
    m = _ROWS.fullmatch(anchor or "")
    if not m:
        return "#" + entry
    spec, one, column = m.groups()
    query = f"rows={spec if spec is not None else one}" + (f"&col={column}" if column else "")
    return f"?{query}#{entry}"


Landing = Callable[[str, str], str | None]
"""(evidence id, anchor) -> the text of the element a link to that anchor lands on, None when not known."""
LANDING: ContextVar[Landing | None] = ContextVar("probebook_landing", default=None)
"""What the build knows of the evidence pages while a page renders (``render.evidence.landing.landing_texts``)."""


COLUMNS = "~columns"
"""The key under which ``LANDING`` gives an evidence page's samples columns, one a line, for ``landing_place``."""


def landing_place(ident: str, anchor: str, text: str) -> str:
    """Where a number shown as ``text`` (its link's Markdown) lands on ``ident``'s page: ``anchor`` when the place it
    names shows the number as ``holds`` reads it, "" when it does not (the number then lands on its own entry).

    The raw samples table, or a section (``params``), shows no value: "". Rows land on the first one (its cell in
    the anchor's column); rows named without a column get the column of the first cell that holds the number, so
    ``numbers.js`` scrolls it into view, or "" when no cell does. A field lands on its row when the row holds it.
    What each place shows comes from ``LANDING``; a place it does not know (or none set) keeps ``anchor``."""
    if not anchor or anchor == SAMPLES:
        return ""
    known = LANDING.get()
    if known is None:
        return anchor
    plain = plain_text(text)
    m = _ROWS.fullmatch(anchor)
    if m is None:
        shown = known(ident, anchor)
        return anchor if shown is None or holds(plain, shown) else ""
    spec, one, column = m.groups()
    first = re.match(r"[0-9]+", spec if spec is not None else one)
    row = f"row-{first.group(0) if first else one}"
    if column:
        shown = known(ident, f"{row}~{column}")
        return anchor if shown is None or holds(plain, shown) else ""
    if known(ident, row) is None:
        return anchor
    for name in (known(ident, COLUMNS) or "").split("\n"):
        cell = known(ident, f"{row}~{name}") if name else None
        if cell is not None and holds(plain, cell):
            return with_column(anchor, name)
    return ""


_ESCAPED = re.compile(r"\\(.)")
_ENTITY = re.compile(r"&(amp|lt|gt|#[0-9]+);")


def plain_text(markdown: str) -> str:
    """The text a reader sees of inline Markdown made by ``escape_text`` and ``Quantity.markdown``: backslash
    escapes and ``*`` emphasis dropped, the entities read (``1.2\u202fms *(partial)*`` -> ``1.2\u202fms (partial)``)."""

    def entity(m: re.Match[str]) -> str:
        name = m.group(1)
        return chr(int(name[1:])) if name.startswith("#") else _ENTITIES_BACK[name]

    marked = re.sub(r"(?<!\\)\*", "", markdown)
    return _ESCAPED.sub(r"\1", _ENTITY.sub(entity, marked))


_ENTITIES_BACK = {"amp": "&", "lt": "<", "gt": ">"}
_SCALE = {"%": 0.01, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_GROUPED = re.compile(r"([0-9]),(?=[0-9]{3})")


def _squash(s: str) -> str:
    return _GROUPED.sub(r"\1", re.sub(r"\s+", "", s))


def _sig(x: float, digits: int) -> float:
    return 0.0 if x == 0 else float(f"{x:.{min(max(digits, 1), 21)}g}")


def holds(shown: str, where: str) -> bool:
    """Whether the text ``where`` holds the number shown as ``shown``, as the browser tour reads it
    (``tests/tour_checks.py``): ``shown`` in it, spaces and thousands commas aside, or a number in it that, rounded
    to ``shown``'s significant figures (or decimals), is ``shown``'s number, read plain, as a percent or with its
    SI prefix (``70.2743`` holds ``70.3``; ``0.00190934`` holds ``0.19%``; ``148.5`` does not hold ``148,480``)."""
    if _squash(shown) in _squash(where):
        return True
    flat = re.sub(r"[\s\u202f\u2009]", "", shown.replace("\u2212", "-"))
    m = re.match(r"(-?[0-9]+(?:\.[0-9]+)?)(%|k|M|G|T)?", _GROUPED.sub(r"\1", flat))
    if not m:
        return False
    want, scale = float(m.group(1)), _SCALE.get(m.group(2) or "", 1.0)
    digits = len(re.sub(r"^-?0*\.?0*", "", m.group(1)).replace(".", "")) or 1
    point = re.match(r"-?[0-9]+\.([0-9]+)", shown.replace("\u2212", "-"))
    decimals = len(point.group(1)) if point else 0
    for found in re.findall(r"-?[0-9]+(?:\.[0-9]+)?(?:e-?[0-9]+)?", _GROUPED.sub(r"\1", where.replace("\u2212", "-"))):
        x = float(found)
        for k in (1.0, scale, 1 / scale):
            if _sig(x / k, digits) == _sig(want, digits) or (decimals > 0 and round(x / k, decimals) == want):
                return True
    return False


POINTS = "points"
"""The anchor of a campaign page's points table (the sentence that counts them): where a count of points lands."""


def point_anchor(index: int, field: str = "") -> str:
    """The element id of a campaign point's row on its evidence page (``point-12``), or of one result field in that
    row (``point-12-tok_s``; ``render.evidence.points``); a field that is not id-safe is the row."""
    return f"point-{index}-{field}" if field and _ID_SAFE.fullmatch(field) else f"point-{index}"


def machine_anchor(field: str) -> str:
    """The element id of a machine fact's row on its evidence page: ``machine-power_limit_w`` for the fingerprint's
    ``machine.power_limit_w``, ``machine-clocks.sm_mhz_before`` for a clock the run recorded (``data.clocks``), which
    the machine table shows beside the fingerprint; ``machine`` (the section) for a field that is not id-safe."""
    return f"machine-{field}" if re.fullmatch(r"[A-Za-z0-9_.-]{1,120}", field) else "machine"


# --- where a stored field shows on its evidence page (``render.evidence.pages`` gives its rows these ids) ---

MAX_OTHER = 400
"""Fields of "Other data" shown on a page; the JSON download always holds all of them."""
# Clocks the run recorded itself (data.clocks), as the machine table labels them; their values are in MHz.
RUN_CLOCKS = {
    "sm_mhz_before": "SM clock in the run, before the timed windows",
    "sm_mhz_after": "SM clock in the run, after the timed windows",
}

_SAFE_ID = re.compile(r"[A-Za-z0-9_.-]{1,120}")


def row_anchor(index: int) -> str:
    """The anchor of ``data.samples[index]`` on its evidence page: ``row-12``; the table's for a row not shown."""
    return rows_anchor([index])


def field_id(prefix: str, key: str) -> str | None:
    """``params-batch``: an element id for a field row, or None when the key holds more than id-safe characters."""
    return f"{prefix}-{key}" if _SAFE_ID.fullmatch(key) else None


def flatten(value: Any, path: str = "") -> list[tuple[str, Any]]:
    """Nested data as (dotted path, value) rows; a list of plain values stays one row."""
    if isinstance(value, dict):
        if not value:
            return [(path, value)]
        return [row for k in sorted(value) for row in flatten(value[k], f"{path}.{k}" if path else str(k))]
    if isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
        return [row for i, v in enumerate(value) for row in flatten(v, f"{path}.{i}")]
    return [(path, value)]


def field_anchor(doc: dict[str, Any], path: str) -> str:
    """Where on its evidence page the value at a dotted ``path`` shows: a row, a field, or "" when nowhere."""
    head, _, rest = path.partition(".")
    if head == "data" and rest.startswith("samples."):
        index = rest.split(".")[1]
        return row_anchor(int(index)) if index.isdigit() else SAMPLES
    if head in ("params", "machine", "code") and isinstance(doc.get(head), dict) and rest in doc[head]:
        return field_id(head, rest) or (head if head == "machine" else "")
    top = rest.split(".", 1)[0]
    if head in ("params", "code") and isinstance(doc.get(head), dict) and isinstance(doc[head].get(top), dict):
        return field_id(head, top) or ""  # a dict param (FLOPs per context) is one row, its entries side by side
    clocks = (doc.get("data") or {}).get("clocks")
    if head == "data" and rest.startswith("clocks.") and isinstance(clocks, dict) and rest[7:] in RUN_CLOCKS:
        return machine_anchor(rest)  # a run's own clock shows in the machine table, beside the fingerprint's
    if head == "data":
        other = {k: v for k, v in (doc.get("data") or {}).items() if k != "samples"}
        for shown, _value in flatten(other)[:MAX_OTHER]:
            if rest == shown or rest.startswith(shown + "."):
                return field_id("data", shown) or ""
    return ""
