"""The hand-written sources under ``docs/``: pages, their front matter, and record versions.

Every ``.md`` file is a Jinja-in-Markdown page. Records live at ``records/<slug>/v<N>.md``; the
newest version of a slug is current, older ones render under *Archive*. Front matter is YAML
between ``---`` lines; each problem is reported as one line naming the file, line and field.
Other files under ``docs/`` (images, say) are copied into the tree unchanged.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from measure.errors import ProbebookError
from render.pages import lessons
from render.pages.frontmatter import SourceError, date_field, field_lines, first_heading, split_front_matter, text_field

_SLUG = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
_VERSION_FILE = re.compile(r"^v([1-9][0-9]{0,3})\.md$")
_ALIAS = re.compile(r"^[a-z_][a-z0-9_]{0,39}$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
# Tree paths render generates; a source may not claim them.
RESERVED = ("evidence/", "archive/", "bench.md", "changes.md", "ledger.json", "records/index.md", "assets/probebook/")
# Files other than pages are copied into the site byte for byte, past the sanitizer, so only inert kinds
# pass: HTML, SVG, scripts or stylesheets could carry script or restyle the theme.
COPIED_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".avif", ".ico", ".csv", ".json", ".txt", ".pdf")
PAGE_FIELDS = {"title", "evidence"}
LESSON_FIELDS = {"title", "records", "history"}
"""A lesson (``playbook/*.md`` other than its index) takes its evidence from the records it names, never its own:
each renders against its record's current version (``render.pages.lessons``)."""
RECORD_FIELDS = {"title", "version", "date", "supersedes", "evidence", "errata", "summary", "answer", "changes"}
ANSWER_SIZE = (1, 2)
"""How many verdicts a record's ``answer`` holds: one or two sentences, one per question (issue 28)."""
REQUIRED_SECTIONS = ("Follow-ups", "Not measured")
"""The ``## `` sections a current record that publishes results (a ``summary``) must have, besides its ``answer``:
what the record earns next, and what it did not measure, item by item (issue 28, item 6)."""
SUMMARY_SIZE = (1, 5)
"""How many headline results a record's ``summary`` may hold; docs/ records hold three to five (issue 14),
which ``tests/test_records_structure.py`` checks."""


@dataclass(frozen=True)
class Erratum:
    """A correction listed on a record's page."""

    date: str
    """When the correction was made, YYYY-MM-DD."""
    text: str
    """What was corrected (plain text)."""
    versions: tuple[int, ...] = ()
    """The versions of the record it applies to (front matter ``versions: [2, 3]``, each at most the version it
    is written on); empty: only that version. It is shown on each of them (issue 23)."""


@dataclass(frozen=True)
class Headline:
    """One headline result of a record: a label and the page expression that gives its Quantity."""

    label: str
    """What the number is, in words (plain text; linted like prose)."""
    expr: str
    """A page expression without braces, e.g. ``fit(sweep).c``; it must yield a Quantity."""


@dataclass(frozen=True)
class Verdict:
    """One sentence of a record's Answer: Markdown text (``{{ }}`` numbers allowed) and the comparisons behind it."""

    text: str
    """The sentence, a template like the body's prose; shown only while every comparison in ``holds`` holds."""
    holds: tuple[str, ...]
    """Page expressions without braces, each a comparison (``paired(abl, "x").saving > 0``), checked like ``claim()``;
    a sentence that states a direction also needs each one resolved by its 95% intervals
    (``render.numbers.directions.unresolved``)."""


@dataclass(frozen=True)
class SourcePage:
    """One hand-written page."""

    path: Path
    """The source file."""
    rel: str
    """Its POSIX path under ``docs/``, which is also its path in the rendered tree."""
    kind: str
    """``home`` (index.md), ``playbook``, ``record`` or ``page``."""
    body: str
    """The Jinja-in-Markdown text; front matter lines are blanked so line numbers match the file."""
    title: str | None = None
    """Front matter ``title``, or the text of the body's first ``# `` heading."""
    evidence: dict[str, str] = field(default_factory=dict)
    """Evidence aliases: name -> id (or unique prefix) as written."""
    lines: dict[str, int] = field(default_factory=dict)
    """File line of each front matter field (``evidence.<alias>`` for aliases)."""
    slug: str | None = None
    """A record's slug (its folder under ``records/``)."""
    version: int | None = None
    """A record's version number."""
    date: str | None = None
    """A record version's date, YYYY-MM-DD."""
    supersedes: int | None = None
    """The version this one replaces."""
    errata: tuple[Erratum, ...] = ()
    """Corrections shown on the page."""
    title_in_front_matter: bool = False
    """Whether the title came from front matter (then render writes the page's heading)."""
    summary: tuple[Headline, ...] = ()
    """A record's headline results, shown in a box at its top and in the records index."""
    answer: tuple[Verdict, ...] = ()
    """A record's Answer: the verdict on each question, first under its title, on the index and the home page."""
    changes: str | None = None
    """What this version changed against the one before (required from version 2 on); the Versions list and the
    superseded version's banner say it."""
    records: tuple[str, ...] = ()
    """A lesson's records, by slug: it renders against each one's current version (``render.pages.lessons``)."""
    history: tuple[Any, ...] = ()
    """A lesson's superseded record versions it shows as history, each a ``lessons.History``."""

    def where(self, fieldname: str | None = None) -> str:
        """``docs/x.md line N`` for a front matter field (or the file when unknown)."""
        line = self.lines.get(fieldname) if fieldname else None
        return f"{self.path} line {line}" if line else str(self.path)


@dataclass(frozen=True)
class Record:
    """All versions of one record, oldest first."""

    slug: str
    versions: tuple[SourcePage, ...]

    @property
    def current(self) -> SourcePage:
        return self.versions[-1]

    @property
    def archived(self) -> tuple[SourcePage, ...]:
        return self.versions[:-1]

    def errata_for(self, version: int | None) -> list[tuple[Erratum, int | None]]:
        """The errata shown on ``version``: its own and those of other versions that name it in ``versions``,
        each with the version it is written on, in version order."""
        return [
            (e, p.version)
            for p in self.versions
            for e in p.errata
            if (version in e.versions if e.versions else p.version == version)
        ]


@dataclass(frozen=True)
class Sources:
    """Everything under ``docs/``."""

    root: Path
    pages: tuple[SourcePage, ...]
    """Every page, sorted by ``rel``."""
    records: tuple[Record, ...]
    """Records sorted by slug."""
    files: tuple[tuple[str, Path], ...]
    """Non-page files to copy: (tree path, source file)."""


def parse_page(path: Path, rel: str, kind: str, text: str) -> SourcePage:
    """Parse and validate one source page's front matter."""
    meta, body, fm_lines = split_front_matter(text, path)
    lines = field_lines(fm_lines)

    def where(name: str) -> str:
        return f"{path} line {lines[name]}" if name in lines else str(path)

    lesson = kind == "playbook" and rel != "playbook/index.md"
    allowed = RECORD_FIELDS if kind == "record" else LESSON_FIELDS if lesson else PAGE_FIELDS
    for name in meta:
        if lesson and name == "evidence":
            raise SourceError(
                f"{where('evidence')}: a lesson takes no evidence of its own; name the records it stands on "
                "(records: [slug]) and it renders against their current versions' evidence"
            )
        if name not in allowed:
            raise SourceError(
                f"{where(str(name))}: unknown front matter field {name!r} "
                f"(a {kind} page takes {', '.join(sorted(allowed))})"
            )
    title = text_field(meta["title"], where("title"), "title") if "title" in meta else None
    evidence = meta.get("evidence", {})
    if evidence is None:
        evidence = {}
    if not isinstance(evidence, dict):
        raise SourceError(f"{where('evidence')}: field 'evidence' must map alias names to evidence ids")
    aliases: dict[str, str] = {}
    for alias, ident in evidence.items():
        spot = where(f"evidence.{alias}")
        if not isinstance(alias, str) or not _ALIAS.match(alias):
            raise SourceError(f"{spot}: evidence alias {alias!r} must be a lower-case name like 'sweep'")
        if not isinstance(ident, str) or not ident.strip():
            raise SourceError(f"{spot}: evidence alias {alias!r} must name an id like sha256:4be1c0ffee12")
        aliases[alias] = ident.strip()
    fields: dict[str, Any] = {}
    if lesson:
        fields = lessons.fields(meta, where)
    if kind == "record":
        for required in ("title", "version", "date"):
            if required not in meta:
                raise SourceError(f"{path}: record front matter lacks field '{required}'")
        version = meta["version"]
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise SourceError(f"{where('version')}: field 'version' must be a whole number >= 1, got {version!r}")
        file_version = int(_VERSION_FILE.match(path.name).group(1))  # type: ignore[union-attr]
        if version != file_version:
            raise SourceError(
                f"{where('version')}: field 'version' is {version} but the file is named v{file_version}.md"
            )
        supersedes = meta.get("supersedes")
        if supersedes is not None and (
            isinstance(supersedes, bool) or not isinstance(supersedes, int) or not 1 <= supersedes < version
        ):
            raise SourceError(
                f"{where('supersedes')}: field 'supersedes' must be an older version number "
                f"(1..{version - 1}), got {supersedes!r}"
            )
        errata = meta.get("errata") or []
        if not isinstance(errata, list):
            raise SourceError(f"{where('errata')}: field 'errata' must be a list of {{date, text}} entries")
        items = []
        for i, entry in enumerate(errata):
            spot = f"{where('errata')} (errata[{i}])"
            if not isinstance(entry, dict) or not {"date", "text"} <= set(entry) <= {"date", "text", "versions"}:
                raise SourceError(
                    f"{spot}: each erratum needs exactly the fields 'date' and 'text' (and may name 'versions')"
                )
            applies = entry.get("versions", [])
            if "versions" in entry and (
                not isinstance(applies, list)
                or not applies
                or any(isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= version for v in applies)
            ):
                raise SourceError(
                    f"{spot}: field 'versions' must be a non-empty list of version numbers 1..{version}, "
                    f"got {applies!r}"
                )
            items.append(
                Erratum(
                    date_field(entry["date"], spot, "date"),
                    text_field(entry["text"], spot, "text"),
                    tuple(sorted(set(applies))),
                )
            )
        fields = {
            "summary": _summary(meta.get("summary"), where("summary")),
            "answer": _answer(meta.get("answer"), where("answer")),
            "changes": text_field(meta["changes"], where("changes"), "changes") if "changes" in meta else None,
            "slug": path.parent.name,
            "version": version,
            "date": date_field(meta["date"], where("date"), "date"),
            "supersedes": supersedes,
            "errata": tuple(items),
        }
    return SourcePage(
        path=path,
        rel=rel,
        kind=kind,
        body=body,
        title=title or first_heading(body),
        evidence=aliases,
        lines=lines,
        title_in_front_matter=title is not None,
        **fields,
    )


def _summary(value: Any, where: str) -> tuple[Headline, ...]:
    """Front matter ``summary``: a list of {label, value} entries, the value a page expression (no braces)."""
    if value is None:
        return ()
    low, high = SUMMARY_SIZE
    if not isinstance(value, list) or not low <= len(value) <= high:
        raise SourceError(f"{where}: field 'summary' must list {low} to {high} headline results, each {{label, value}}")
    out = []
    for i, entry in enumerate(value):
        spot = f"{where} (summary[{i}])"
        if not isinstance(entry, dict) or set(entry) != {"label", "value"}:
            raise SourceError(f"{spot}: each headline needs exactly the fields 'label' and 'value'")
        expr = text_field(entry["value"], spot, "value")
        if "{{" in expr or "}}" in expr or "{%" in expr:
            raise SourceError(f"{spot}: 'value' is a page expression without braces, e.g. fit(sweep).c")
        out.append(Headline(text_field(entry["label"], spot, "label"), expr))
    return tuple(out)


def _answer(value: Any, where: str) -> tuple[Verdict, ...]:
    """Front matter ``answer``: a list of {text, holds} entries; ``holds`` one page expression or a list of them."""
    if value is None:
        return ()
    low, high = ANSWER_SIZE
    if not isinstance(value, list) or not low <= len(value) <= high:
        raise SourceError(f"{where}: field 'answer' must list {low} to {high} verdicts, each {{text, holds}}")
    out = []
    for i, entry in enumerate(value):
        spot = f"{where} (answer[{i}])"
        if not isinstance(entry, dict) or set(entry) != {"text", "holds"}:
            raise SourceError(
                f"{spot}: each verdict needs exactly the fields 'text' (the sentence) and 'holds' (the comparisons "
                "behind it): an answer is a checked claim or it is not written"
            )
        holds = entry["holds"] if isinstance(entry["holds"], list) else [entry["holds"]]
        if not holds:
            raise SourceError(f"{spot}: 'holds' must name at least one comparison, e.g. paired(abl, \"x\").saving > 0")
        exprs = tuple(text_field(h, spot, "holds") for h in holds)
        if any("{{" in e or "}}" in e or "{%" in e for e in exprs):
            raise SourceError(f"{spot}: 'holds' takes page expressions without braces, e.g. fit(a).c < fit(b).c")
        out.append(Verdict(text_field(entry["text"], spot, "text"), exprs))
    return tuple(out)


_HEADING = re.compile(r"^## +(.+?) *$", re.MULTILINE)


def check_record(record: Record) -> None:
    """What a record's versions must say (issue 28, items 5 and 6), each problem one line naming the file.

    Every version after the first says what it ``changes``. The current version, when it publishes results (a
    ``summary``), also states its ``answer`` and has the ``REQUIRED_SECTIONS``, "Not measured" as a list;
    superseded versions are exempt (they are kept as they were published).
    """
    for page in record.versions[1:]:
        if page.changes is None:
            raise SourceError(
                f"{page.path}: version {page.version} needs a front matter field 'changes': one line saying what it "
                "changed against the version before"
            )
    page = record.current
    if not page.summary:
        return
    if not page.answer:
        raise SourceError(
            f"{page.path}: a current record needs a front matter field 'answer' (its verdicts, each a sentence "
            "and the comparisons behind it), shown first under its title"
        )
    body = _fenced_blank(page.body)
    sections = {m.group(1): m.end() for m in _HEADING.finditer(body)}
    for name in REQUIRED_SECTIONS:
        if name not in sections:
            raise SourceError(f"{page.path}: a current record needs a '## {name}' section")
    after = body[sections["Not measured"] :]
    nxt = _HEADING.search(after)
    if not re.search(r"^- ", after[: nxt.start() if nxt else None], re.MULTILINE):
        raise SourceError(f"{page.path}: the '## Not measured' section must be a list, one '- ' item per thing")


def _fenced_blank(body: str) -> str:
    """``body`` with fenced code blanked, so a heading inside an example does not count."""
    out, fence = [], False
    for line in body.split("\n"):
        if re.match(r"^\s*(```|~~~)", line):
            fence = not fence
            out.append("")
        else:
            out.append("" if fence else line)
    return "\n".join(out)


def _kind(rel: str) -> str:
    if rel == "index.md":
        return "home"
    if rel.startswith("playbook/"):
        return "playbook"
    if rel.startswith("records/"):
        return "record"
    return "page"


def _files(root: Path) -> list[Path]:
    """Every regular file under ``root``, sorted; a symbolic link that leaves ``root`` is refused by name.

    A link out of the sources would copy a host file (``/etc/passwd``, a key) into the public site.
    Links inside the tree are read like the files they point to; FIFOs and devices are skipped. ``root``
    itself a link, and a file with more than one name (a hard link, which may be a host file's other name),
    are refused the same way (issue 25, item 8): neither can be told apart from a copy by its path.
    """
    if root.is_symlink():
        raise SourceError(f"{root}: the sources folder is a symbolic link; give the folder itself as --docs")
    real_root = root.resolve()
    found = []
    for dirpath, dirnames, filenames in os.walk(root):  # does not descend into linked folders
        for name in sorted(dirnames + filenames):
            path = Path(dirpath) / name
            if path.is_symlink():
                try:
                    target = path.resolve()
                except (OSError, RuntimeError):  # a loop of links
                    raise SourceError(f"{path}: a symbolic link that never reaches a file (a loop)") from None
                if not target.is_relative_to(real_root):
                    raise SourceError(
                        f"{path}: a symbolic link to {_clip(str(target))}, outside {root}; copy the file in instead"
                    )
            if name in filenames and path.is_file():
                names = path.stat().st_nlink
                if names > 1:
                    raise SourceError(
                        f"{path}: a hard link ({names} names for one file), which may be a file from outside "
                        f"{root}; copy the file in instead"
                    )
                found.append(path)
    return sorted(found)


GENERATED = re.compile(r"-[a-z][a-z0-9-]*-[0-9]+\.[a-z0-9.]+")
"""The tail of a file a page function makes beside its page, ``<page>-<kind>-<n>.<suffix>``
(``sandbox.PageState.save``): a chart's ``.svg`` and ``.vl.json``, a table's ``.csv`` and ``.json``."""


def shadows_generated(rel: str, stems: set[str]) -> str | None:
    """The page (its path without ``.md``, one of ``stems``) beside which copied file ``rel`` is named like a file
    render makes, or None: copied over it, it would replace a chart spec or a table download without a word
    (issue 25, item 7). Every ``-`` is tried, since a page's own name may hold one (``playbook/my-notes``)."""
    for i, c in enumerate(rel):
        if c == "-" and rel[:i] in stems and GENERATED.fullmatch(rel, i):
            return rel[:i]
    return None


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def load(root: Path) -> Sources:
    """Read every source under ``root`` (the ``docs/`` folder), in a stable order."""
    root = Path(root)
    if not root.is_dir():
        raise SourceError(f"{root}: no such sources folder (give --docs the folder holding index.md)")
    pages, files = [], []
    for path in _files(root):
        rel = path.relative_to(root).as_posix()
        if any(part.startswith(".") for part in rel.split("/")):
            continue  # editor swap files, .DS_Store
        if any(rel == r or rel.startswith(r) for r in RESERVED):
            raise SourceError(f"{path}: {rel} is generated by render; move the file elsewhere")
        if not rel.endswith(".md"):
            if not rel.lower().endswith(COPIED_SUFFIXES):
                raise SourceError(
                    f"{path}: only pages (.md) and {', '.join(COPIED_SUFFIXES)} files may sit under the sources "
                    "(other files would reach the site unsanitized)"
                )
            files.append((rel, path))
            continue
        kind = _kind(rel)
        if kind == "record":
            parts = rel.split("/")
            if len(parts) != 3 or not _SLUG.match(parts[1]) or not _VERSION_FILE.match(parts[2]):
                raise SourceError(
                    f"{path}: a record version must be records/<slug>/v<N>.md with a lower-case slug like step-time"
                )
        try:
            text = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SourceError(f"{path}: not UTF-8 text (byte {exc.start})") from None
        text = text.removeprefix("\ufeff")  # a byte-order mark some editors write: not part of the page
        pages.append(parse_page(path, rel, kind, text))
    by_slug: dict[str, list[SourcePage]] = {}
    for page in pages:
        if page.kind == "record":
            by_slug.setdefault(page.slug, []).append(page)  # type: ignore[arg-type]
    records = []
    for slug in sorted(by_slug):
        versions = sorted(by_slug[slug], key=lambda p: p.version)  # type: ignore[arg-type, return-value]
        numbers = {p.version for p in versions}
        for p in versions:
            if p.supersedes is not None and p.supersedes not in numbers:
                raise SourceError(
                    f"{p.where('supersedes')}: supersedes version {p.supersedes}, but "
                    f"records/{slug}/v{p.supersedes}.md does not exist"
                )
        records.append(Record(slug, tuple(versions)))
        check_record(records[-1])
    pages = lessons.bind(pages, records)
    stems = {p.rel[:-3] for p in pages}
    for rel, path in files:
        if (beside := shadows_generated(rel, stems)) is not None:
            raise SourceError(f"{path}: named like a chart or table file render makes beside {beside}.md; rename it")
    return Sources(root=root, pages=tuple(pages), records=tuple(records), files=tuple(files))


def resolve_evidence(page: SourcePage, resolve: Callable[[str], str]) -> dict[str, str]:
    """Alias -> full evidence id for one page; a missing or malformed id names the file, line and alias."""
    out = {}
    for alias, ident in page.evidence.items():
        try:
            out[alias] = resolve(ident)
        except ProbebookError as exc:
            raise SourceError(f"{page.where('evidence.' + alias)}: evidence alias '{alias}': {exc}") from None
    return out
