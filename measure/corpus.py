"""Read a corpus into document token lengths and roots, and name it by its SHA-256 (the ``padding`` probe's input).

Formats, by what the path is:

* a folder: every file matching ``glob`` and none of ``exclude`` (``fnmatch`` patterns on the
  relative path) is one document (files sorted by relative path);
* ``.jsonl``: one JSON object per line, its text in ``column`` (default ``text``);
* ``.parquet``: one row per document, its text in ``column`` (needs pyarrow);
* ``.csv``: one row per document, its token count in ``column`` (default ``length``), no tokenizer;
* any other file: one document.

Tokenizers: ``bytes`` (the default) is byte-level, one token per UTF-8 byte, so a file's length is
its size; a path to a ``tokenizers`` JSON file (Hugging Face ``tokenizers``) encodes each text.

Roots, for the diversity count: ``document`` (each document its own root), ``folder`` (a folder
corpus: the file's top-level folder), or the name of a field/column holding a root label.

The corpus SHA-256 is the file's SHA-256, or for a folder the SHA-256 of its manifest: one line
``<relative path>\\t<file sha256>\\n`` per document, sorted by path, so renaming a file changes it.
"""

from __future__ import annotations

import csv
import fnmatch
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from measure.errors import MissingPackage, ProbebookError
from measure.evidence.reading import given_file

_CHUNK = 1 << 20


@dataclass
class Corpus:
    """Document lengths in tokens and their roots, with what names the corpus."""

    name: str
    """The corpus's name (``--name``, or the file or folder name)."""
    sha256: str
    """SHA-256 of the file, or of a folder's manifest."""
    format: str
    """``folder``, ``jsonl``, ``parquet``, ``csv`` or ``text``."""
    lengths: np.ndarray
    """Tokens per document (int64)."""
    roots: np.ndarray
    """Root index per document (int64, 0 .. n_roots-1)."""
    n_roots: int
    """Distinct roots."""
    tokenizer: dict[str, Any] = field(default_factory=dict)
    """``{"kind": "bytes"}``, ``{"kind": "tokenizers", "file": ..., "sha256": ...}`` or ``{"kind": "lengths"}``."""


def file_sha256(path: Path) -> str:
    """Hex SHA-256 of a file's bytes, read in 1 MiB pieces."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while piece := fh.read(_CHUNK):
            h.update(piece)
    return h.hexdigest()


def _tokenizer(spec: str) -> tuple[Callable[[list[str]], list[int]], dict[str, Any]]:
    if spec == "bytes":
        return (lambda texts: [len(t.encode("utf-8")) for t in texts]), {"kind": "bytes"}
    path = Path(spec)
    if not path.is_file():
        raise ProbebookError(f"--tokenizer {spec}: not 'bytes' and not a tokenizers JSON file")
    try:
        from tokenizers import Tokenizer  # optional: only for --tokenizer FILE
    except ImportError:
        raise MissingPackage(
            f"--tokenizer {spec}: needs the Python package 'tokenizers' (pip install tokenizers)"
        ) from None
    try:
        tok = Tokenizer.from_file(str(path))
    except Exception as exc:  # the library's own parse error: one line, naming the file
        raise ProbebookError(f"--tokenizer {spec}: not a tokenizers file ({str(exc).splitlines()[0]})") from None

    def encode(texts: list[str]) -> list[int]:
        return [len(e.ids) for e in tok.encode_batch(texts, add_special_tokens=False)]

    return encode, {"kind": "tokenizers", "file": path.name, "sha256": file_sha256(path)}


def _root_ids(labels: list[str]) -> tuple[np.ndarray, int]:
    index: dict[str, int] = {}
    ids = np.fromiter((index.setdefault(label, len(index)) for label in labels), dtype=np.int64, count=len(labels))
    return ids, len(index)


def load(
    path: str | Path,
    glob: str = "**/*",
    tokenizer: str = "bytes",
    column: str | None = None,
    roots: str = "document",
    name: str | None = None,
    exclude: tuple[str, ...] = (),
) -> Corpus:
    """Read the corpus at ``path``; a one-line ``ProbebookError`` names the file or field that is wrong."""
    p = Path(path)
    if not p.exists():
        raise ProbebookError(f"--corpus {path}: no such file or folder")
    label = name or p.resolve().name
    if p.is_dir():
        return _folder(p, glob, exclude, tokenizer, roots, label)
    given_file(p, "--corpus")  # a FIFO would block the read forever, a device never end
    try:
        return _file(p, tokenizer, column, roots, label)
    except UnicodeDecodeError as exc:
        raise ProbebookError(f"--corpus {path}: not UTF-8 text (byte {exc.start}); save it as UTF-8") from None


def _file(p: Path, tokenizer: str, column: str | None, roots: str, label: str) -> Corpus:
    suffix = p.suffix.lower()
    if suffix == ".csv":
        return _csv(p, column or "length", roots, label)
    if suffix == ".jsonl":
        texts, root_labels = _jsonl(p, column or "text", roots)
        fmt = "jsonl"
    elif suffix == ".parquet":
        texts, root_labels = _parquet(p, column or "text", roots)
        fmt = "parquet"
    else:
        if roots not in ("document",):
            raise ProbebookError(f"--roots {roots}: a single text file is one document; use --roots document")
        texts, root_labels, fmt = [p.read_text(encoding="utf-8", errors="replace")], ["0"], "text"
    encode, tok = _tokenizer(tokenizer)
    lengths = np.asarray(encode(texts), dtype=np.int64)
    if roots == "document":
        root_ids, n_roots = np.arange(len(texts), dtype=np.int64), len(texts)
    else:
        root_ids, n_roots = _root_ids(root_labels)
    return Corpus(label, file_sha256(p), fmt, lengths, root_ids, n_roots, tok)


def _folder(p: Path, glob: str, exclude: tuple[str, ...], tokenizer: str, roots: str, label: str) -> Corpus:
    if roots not in ("document", "folder"):
        raise ProbebookError(f"--roots {roots}: a folder corpus takes document or folder")
    files = sorted(
        (
            f
            for f in p.glob(glob)
            if f.is_file()
            and not f.is_symlink()
            and not any(fnmatch.fnmatchcase(f.relative_to(p).as_posix(), pattern) for pattern in exclude)
        ),
        key=lambda f: f.as_posix(),
    )
    if not files:
        raise ProbebookError(f"--corpus {p}: no files match --glob {glob!r}")
    encode, tok = _tokenizer(tokenizer)
    manifest = hashlib.sha256()
    lengths = np.empty(len(files), dtype=np.int64)
    labels = []
    for i, f in enumerate(files):
        rel = f.relative_to(p).as_posix()
        raw = f.read_bytes()
        manifest.update(f"{rel}\t{hashlib.sha256(raw).hexdigest()}\n".encode())
        # byte-level: the length is the byte count, no decoding needed
        lengths[i] = len(raw) if tok["kind"] == "bytes" else encode([raw.decode("utf-8", errors="replace")])[0]
        labels.append(rel.split("/", 1)[0] if "/" in rel else ".")
    if roots == "document":
        root_ids, n_roots = np.arange(len(files), dtype=np.int64), len(files)
    else:
        root_ids, n_roots = _root_ids(labels)
    return Corpus(label, manifest.hexdigest(), "folder", lengths, root_ids, n_roots, tok)


def _jsonl(p: Path, column: str, roots: str) -> tuple[list[str], list[str]]:
    texts, labels = [], []
    with open(p, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                raise ProbebookError(f"{p} line {n}: not valid JSON") from None
            if not isinstance(obj, dict) or not isinstance(obj.get(column), str):
                raise ProbebookError(f"{p} line {n}: no text field {column!r} (choose it with --column)")
            texts.append(obj[column])
            if roots not in ("document", "folder"):
                if roots not in obj:
                    raise ProbebookError(f"{p} line {n}: no root field {roots!r}")
                labels.append(str(obj[roots]))
    if roots == "folder":
        raise ProbebookError("--roots folder needs a folder corpus; name a root field instead")
    if not texts:
        raise ProbebookError(f"{p}: no documents")
    return texts, labels


def _parquet(p: Path, column: str, roots: str) -> tuple[list[str], list[str]]:
    try:
        import pyarrow.parquet as pq  # optional: only for Parquet corpora
    except ImportError:
        raise MissingPackage(f"{p}: reading Parquet needs the Python package 'pyarrow' (pip install pyarrow)") from None
    table = pq.read_table(p)
    if column not in table.column_names:
        raise ProbebookError(f"{p}: no column {column!r} (columns: {', '.join(table.column_names)})")
    texts = [t if isinstance(t, str) else "" for t in table.column(column).to_pylist()]
    labels: list[str] = []
    if roots not in ("document", "folder"):
        if roots not in table.column_names:
            raise ProbebookError(f"{p}: no root column {roots!r}")
        labels = [str(v) for v in table.column(roots).to_pylist()]
    elif roots == "folder":
        raise ProbebookError("--roots folder needs a folder corpus; name a root column instead")
    return texts, labels


def _csv(p: Path, column: str, roots: str, label: str) -> Corpus:
    if roots == "folder":
        raise ProbebookError("--roots folder needs a folder corpus; name a root column instead")
    with open(p, newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        header = next(reader, [])
        if column not in header:
            raise ProbebookError(f"{p}: no column {column!r} of token lengths (columns: {', '.join(header)})")
        if roots != "document" and roots not in header:
            raise ProbebookError(f"{p}: no root column {roots!r}")
        col = header.index(column)
        rcol = header.index(roots) if roots != "document" else None
        lengths: list[int] = []
        labels: list[str] = []
        for n, row in enumerate(reader, 2):
            try:
                lengths.append(int(row[col]))
                if rcol is not None:
                    labels.append(row[rcol])
            except (ValueError, IndexError):
                text = row[col] if col < len(row) else ""
                raise ProbebookError(
                    f"{p} line {n}: column {column!r} is {text!r}, not a whole number of tokens"
                ) from None
            if lengths[-1] < 0:
                raise ProbebookError(f"{p} line {n}: column {column!r} is {lengths[-1]}, a negative length")
    if not lengths:
        raise ProbebookError(f"{p}: no rows")
    arr = np.asarray(lengths, dtype=np.int64)
    if roots == "document":
        root_ids, n_roots = np.arange(len(arr), dtype=np.int64), len(arr)
    else:
        root_ids, n_roots = _root_ids(labels)
    return Corpus(label, file_sha256(p), "csv", arr, root_ids, n_roots, {"kind": "lengths"})


def portable_path(given: str, cwd: Path | None = None, home: Path | None = None) -> str:
    """``given`` as evidence may keep it, naming no folder of this host (issue 40): a relative path as given; an
    absolute one relative to the working directory when under it, ``~/...`` when under the home folder, else only
    its last name after ``.../`` (the corpus itself is named by its SHA-256 in ``data.corpus``). Pure but for the
    defaults of ``cwd`` and ``home``."""
    p = Path(given)
    if not p.is_absolute():
        return given
    for root, shown in ((cwd or Path.cwd(), None), (home or Path.home(), "~")):
        try:
            rel = p.relative_to(root)
        except ValueError:
            continue
        text = rel.as_posix()
        return text if shown is None else f"{shown}/{text}" if text != "." else shown
    return f".../{p.name}"
