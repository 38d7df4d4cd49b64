"""Reading one file of the archive safely, and one archived document as render and the CLI read it.

A file is read never through a link, never blocking on a FIFO, never past a size cap (``read_regular``; a path
a command line names, ``read_given``; a stored file for its hash, ``read_hashed``). An archived document is its
bytes checked against the envelope (``parse_archived``, the fast reader of ``measure.evidence.envelope``'s checks)
and, where an older probe version laid its data out otherwise, presented as today's probe lays it out
(``for_reading``): ``read_archived`` does the three, so one module reads a stored document from its bytes to what
render derives from. The archived bytes never change (ARCHITECTURE.md §Invariants, item 1): schema migrations,
which rewrite a document of an older envelope version, are ``measure.evidence.envelope.migrate``'s; writing is
``measure.evidence.files``'.
"""

from __future__ import annotations

import hashlib
import os
import stat
from typing import Any

from measure.errors import EvidenceError, ProbebookError, StoreError
from measure.evidence.envelope import canonical_bytes, parse, validate
from measure.evidence.files import MAX_BYTES_ENV, kind_of, max_bytes

try:  # the archive's fast reader (``parse_archived``); measure runs without it where only torch is installed
    import orjson
except ImportError:  # pragma: no cover - the declared dependencies include it
    orjson = None  # type: ignore[assignment]


def read_archived(path: str | os.PathLike[str], limit: int | None = None) -> tuple[dict[str, Any], bytes]:
    """(the document as today's probe lays it out, its exact bytes) of one stored file: read (``read_regular``),
    checked (``parse_archived``) and brought up to the current probe version (``for_reading``); every refusal is one
    line naming the file."""
    raw = read_regular(path, limit)
    return for_reading(parse_archived(raw, str(path))), raw


def read_regular(path: str | os.PathLike[str], limit: int | None = None) -> bytes:
    """The bytes of a regular file, never following a symbolic link and never past ``limit`` bytes.

    A FIFO would block a reader forever and a link to ``/dev/zero`` never ends, so the file is
    opened without following links and without blocking, and checked to be a regular file of at
    most ``limit`` bytes (default ``max_bytes()``) before one byte is read. Every refusal is one
    ``StoreError`` line naming the file.
    """
    limit = max_bytes() if limit is None else limit
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if os.path.islink(path):
            raise StoreError(f"{path}: cannot read (a symbolic link; only regular files are read)") from None
        raise StoreError(f"{path}: cannot read ({exc.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise StoreError(f"{path}: cannot read ({kind_of(st.st_mode)}, not a regular file)")
        if st.st_size > limit:
            raise StoreError(
                f"{path}: {st.st_size} bytes, over the {limit}-byte cap for one file (set {MAX_BYTES_ENV} to raise it)"
            )
        over = StoreError(f"{path}: over the {limit}-byte cap for one file (set {MAX_BYTES_ENV} to raise it)")
        return _read_capped(fd, limit, over)  # over: it grew while we read
    except OSError as exc:
        raise StoreError(f"{path}: cannot read ({exc.strerror})") from None
    finally:
        os.close(fd)


def given_file(path: str | os.PathLike[str], what: str = "") -> None:
    """Refuse, in one line, a path given on a command line that is there but is not a regular file (a FIFO would
    block its reader forever, a device never end); ``what`` names the option (``--corpus``). Unlike
    ``read_regular`` a link is followed: the user named it. A path that is not there is left to its reader."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    if not stat.S_ISREG(mode):
        raise ProbebookError(
            f"{what}{' ' if what else ''}{path}: {kind_of(mode)}, not a regular file; nothing was read"
        )


def read_given(path: str | os.PathLike[str], limit: int, what: str = "") -> bytes:
    """The bytes of a regular file a command line names (a link is followed), at most ``limit`` bytes; a FIFO, a
    device, a folder or a larger file is refused in one line before a byte is read, and opening never blocks."""
    named = f"{what}{' ' if what else ''}{path}"
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise ProbebookError(f"{named}: cannot read ({exc.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ProbebookError(f"{named}: {kind_of(st.st_mode)}, not a regular file; nothing was read")
        over = ProbebookError(f"{named}: over {limit} bytes, more than such a file holds; nothing was read")
        return _read_capped(fd, limit, over)
    except OSError as exc:
        raise ProbebookError(f"{named}: cannot read ({exc.strerror})") from None
    finally:
        os.close(fd)


def _read_capped(fd: int, limit: int, over: ProbebookError) -> bytes:
    """Every byte of the open file ``fd``, read in 1 MiB chunks; ``over`` raised once more than ``limit`` came (a
    file can grow while it is read, whatever its size said)."""
    chunks, size = [], 0
    while chunk := os.read(fd, 1 << 20):
        size += len(chunk)
        if size > limit:
            raise over
        chunks.append(chunk)
    return b"".join(chunks)


# never follow a link, never block on a FIFO; non-regular files are named by ``Store.strays``
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)


def read_hashed(path: str, limit: int) -> tuple[bytes | None, str] | None:
    """(bytes, ``sha256:<hex>``) of a stored regular file within ``limit`` bytes, or (None, why it was not hashed).

    None for a link or another non-regular file: not evidence, and named by ``Store.strays``.
    """
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError:
        return None  # a link: named by ``strays``
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        if st.st_size > limit:
            return None, f"not hashed ({st.st_size} bytes, over the {limit}-byte cap)"
        # One read call: asking one byte more than fstat said and getting fewer is the end of a regular file.
        raw = os.read(fd, st.st_size + 1)
        while len(raw) < st.st_size and (more := os.read(fd, 1 << 20)):  # a short read: read on to the end
            raw += more
        if len(raw) > limit:
            return None, f"not hashed (over the {limit}-byte cap)"
        return raw, "sha256:" + hashlib.sha256(raw).hexdigest()
    except OSError as exc:
        return None, f"unreadable ({exc.strerror})"
    finally:
        os.close(fd)


def parse_archived(raw: bytes, where: str) -> dict[str, Any]:
    """``parse`` for archived bytes, faster, with the same result and the same refusals.

    orjson reads the bytes, but it keeps the last of two equal keys and turns an integer beyond 64
    bits into a double, where ``loads`` refuses the one and keeps the other exact. So its reading is
    used only when writing it back gives the very bytes read: then no key was dropped and no number
    changed, and the strict reader would have read the same document. The archive holds canonical
    bytes (``canonical_bytes``, which orjson writes alike except for floats in exponent form, checked
    with the standard encoder); anything else (another spelling, a duplicate key, a big integer, bad
    JSON), and any document the checks refuse, goes through ``parse`` and gets its refusal from there.
    """
    if orjson is None:
        return parse(raw, where)
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return parse(raw, where)
    if not isinstance(doc, dict) or not _written_back_alike(doc, raw):
        return parse(raw, where)
    try:
        # raw is the JSON text of doc: each list or object in it is one "[" or "{" (text may hold more)
        validate(doc, where, containers=raw.count(b"{") + raw.count(b"["))
    except EvidenceError:
        return parse(raw, where)  # refused in the strict reader's own words
    return doc


def _written_back_alike(doc: dict[str, Any], raw: bytes) -> bool:
    """Whether orjson or ``canonical_bytes`` writes ``doc`` back as exactly ``raw``."""
    try:
        if orjson.dumps(doc, option=orjson.OPT_SORT_KEYS) == raw:
            return True
        return canonical_bytes(doc) == raw
    except (orjson.JSONEncodeError, EvidenceError, RecursionError):  # nested past either writer's limit
        return False


OBSERVED_IN_PARAMS_UNTIL = {"kernels": 2, "ablate": 1, "step-scaling": 1}
"""Probe -> its last version that kept what it observed at run time in ``params``
(ARCHITECTURE.md §Invariants, item 7)."""
OBSERVED_PARAMS = {
    "sdpa_backend": "sdpa_backend",
    "compile_engaged": "compile_engaged",
    "compiled_regions": "compiled_regions",
    "observed_dtype": "dtype",
    "loss_ops": "loss_ops",
}
"""Old ``params`` key -> its key in ``data["observed"]`` (what ``measure.workload.observe`` reads from a step)."""


COMM_BUCKETS_POSITIONAL_UNTIL = 2
"""The ddp probe's last version that stored ``data.comm_buckets`` as ``[ready_s, done_s, bytes]`` arrays."""
COMM_BUCKET_FIELDS = ("ready_s", "done_s", "bytes")
"""A comm bucket's named fields (version 3 on): ready and all-reduce done, seconds from the step's start; bytes."""


def for_reading(doc: dict[str, Any]) -> dict[str, Any]:
    """The document as the current probe version lays it out, for reading; the archived bytes never change.

    Probe versions up to ``OBSERVED_IN_PARAMS_UNTIL`` stored their run-time observations (SDPA backend,
    compilation, dtype, loss ops) in ``params``, which holds inputs only; here they move to
    ``data["observed"]``. ddp versions up to ``COMM_BUCKETS_POSITIONAL_UNTIL`` stored each comm bucket as
    a positional array; here it gets ``COMM_BUCKET_FIELDS`` as names. kernels version 4 on a GPU read
    its expert GEMM time from the annotation's GPU span, idle gaps included (``_expert_span_withdrawn``).
    A document needing none of these is returned as it is.
    """
    return _optimizer_settings_stated(_expert_span_withdrawn(_named_comm_buckets(_observed_out_of_params(doc))))


OPTIMIZER_SETTINGS_UNSTATED_UNTIL = 2
"""batch-sweep's last version without optimizer settings: it ran the workload's own and never clipped."""
OPTIMIZER_DEFAULTS = {"clip": 0.0, "beta1": None, "beta2": None, "weight_decay": None}
"""What those versions ran, as version 3's options state it (``measure.probes.common.OptimizerFields``)."""


def _optimizer_settings_stated(doc: dict[str, Any]) -> dict[str, Any]:
    """batch-sweep up to ``OPTIMIZER_SETTINGS_UNSTATED_UNTIL``: its params state the settings it ran with, so its
    configuration key is that of a version 3 run with the defaults (one series, not two)."""
    params = doc.get("params")
    if (
        doc.get("probe") != "batch-sweep"
        or doc.get("probe_version", 0) > OPTIMIZER_SETTINGS_UNSTATED_UNTIL
        or not isinstance(params, dict)
    ):
        return doc
    return {**doc, "params": {**OPTIMIZER_DEFAULTS, **params}}


EXPERT_SPAN_UNTIL = 4
"""The last kernels version whose ``data.expert_gemm`` on a GPU may be a span (a share of 1.64 was stored)."""


def _expert_span_withdrawn(doc: dict[str, Any]) -> dict[str, Any]:
    """kernels up to ``EXPERT_SPAN_UNTIL`` on CUDA: the expert time and share are withdrawn, with the reason."""
    data = doc.get("data")
    params = doc.get("params")
    if (
        doc.get("probe") != "kernels"
        or doc.get("probe_version", 0) > EXPERT_SPAN_UNTIL
        or not isinstance(data, dict)
        or not isinstance(data.get("expert_gemm"), dict)
        or not isinstance(params, dict)
        or params.get("device") != "cuda"
    ):
        return doc
    withdrawn = {
        **data["expert_gemm"],
        "time_s": None,
        "share": None,
        "withdrawn": "kernels v4 read the annotation's GPU span (idle gaps included), not its kernels; fixed in v5",
    }
    return {**doc, "data": {**data, "expert_gemm": withdrawn}}


def _named_comm_buckets(doc: dict[str, Any]) -> dict[str, Any]:
    data = doc.get("data")
    if (
        doc.get("probe") != "ddp"
        or doc.get("probe_version", 0) > COMM_BUCKETS_POSITIONAL_UNTIL
        or not isinstance(data, dict)
        or not isinstance(data.get("comm_buckets"), list)
    ):
        return doc
    steps = data["comm_buckets"]
    named = [
        [dict(zip(COMM_BUCKET_FIELDS, b, strict=True)) if isinstance(b, list) and len(b) == 3 else b for b in step]
        if isinstance(step, list)
        else step
        for step in steps
    ]
    return {**doc, "data": {**data, "comm_buckets": named}}


def _observed_out_of_params(doc: dict[str, Any]) -> dict[str, Any]:
    last = OBSERVED_IN_PARAMS_UNTIL.get(doc.get("probe", ""))
    params = doc.get("params")
    if last is None or doc.get("probe_version", 0) > last or not isinstance(params, dict):
        return doc
    moved = {new: params[old] for old, new in OBSERVED_PARAMS.items() if old in params}
    if not moved:
        return doc
    data = dict(doc.get("data") or {})
    data["observed"] = {**moved, **(data.get("observed") or {})}
    kept = {k: v for k, v in params.items() if k not in OBSERVED_PARAMS}
    return {**doc, "params": kept, "data": data}
