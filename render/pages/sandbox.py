"""Templating: Jinja-in-Markdown pages in a sandbox, with ``StrictUndefined`` (ARCHITECTURE.md §Pages).

Every ``{{ }}`` must yield a Quantity (recorded in the ledger and rendered as a link to its
evidence), a block made by a page function (chart, table, evidence link), or text; text is
escaped so it shows as written, and text that looks like a measurement is refused like prose is.
A bare number is refused: numbers reach a page only from evidence. Any failure names the source
file and line: an unknown name, a missing alias, an unsafe attribute, a page function's error.

Prose is made inert too: ``<`` outside code becomes ``&lt;`` (no raw HTML, so no ``<script>`` or
``on*=`` attributes) and a link may only point to http(s), mailto or a relative path.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import re
import string
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import jinja2
import jinja2.ext
from jinja2.lexer import Token, TokenStream
from jinja2.sandbox import ImmutableSandboxedEnvironment

from measure.errors import ProbebookError
from render.derive.reading import MAX_FORMAT_WIDTH, wide_format
from render.numbers import claims, directions, legend, said
from render.numbers.links import escape_text
from render.numbers.quantity import Quantity
from render.pages import bounded, limits, lint, methodology, template_errors
from render.pages.bounded import TemplateLimitError
from render.pages.sources import SourcePage


class PageError(ProbebookError):
    """A page failed to render; the message names the file and line."""


@dataclass(frozen=True)
class Block:
    """Markdown made by a page function (a fit's warnings, a link), inserted as is."""

    markdown: str
    lines: tuple[str, ...] = ()
    """The same content as plain text lines, for the shell (``probebook derive``)."""
    said: tuple[said.Said, ...] = ()
    """Its sentences whose numbers are ledger rows (a fit's warnings: ``render.numbers.said``)."""
    linked: Callable[[str], str] | None = None
    """The Markdown with those numbers linked to their evidence, given the page's path."""


@dataclass(frozen=True)
class Asset:
    """Files a page function made (a chart's SVG, a table's downloads) and the Markdown that shows them.

    The page that shows it saves the files beside itself, as ``<page>-<kind>-<n>.<suffix>``
    numbered in order of use, and gives ``markdown`` the name's last part without the suffix.
    An Asset a page computes but never shows saves nothing.
    """

    TEMPLATE_ATTRS: ClassVar[frozenset[str]] = frozenset()
    kind: str
    """Names the files: ``chart`` kind or ``table`` kind, e.g. ``step-scaling``."""
    files: dict[str, bytes]
    """File suffix (``svg``, ``vl.json``, ``csv``) -> contents."""
    markdown: Callable[[str], str]
    """The Markdown that shows the files, given their name stem (``v2-step-scaling-1``)."""
    evidence: tuple[str, ...] = ()
    """Ids of the evidence the files are made from."""
    linked: Callable[[str, str], str] | None = None
    """The Markdown with each shown number linked to its evidence, given the page's path and the name stem."""
    ledger: Callable[[str], list[dict[str, Any]]] | None = None
    """The ledger rows of the numbers it shows (a table's cells), given the page's path."""


@dataclass
class PageState:
    """What rendering one page produced besides its text."""

    rel: str
    """The page's tree path, e.g. ``records/step-time/v2.md``."""
    rows: list[tuple[str, Quantity]] = field(default_factory=list)
    """(ledger key, quantity) for every number shown, in order of first appearance."""
    files: dict[str, bytes] = field(default_factory=dict)
    """Files the page's functions made (charts, downloads): tree path -> bytes."""
    cited: set[str] = field(default_factory=set)
    """Evidence ids the page shows numbers or blocks from."""
    partial: frozenset[str] = frozenset()
    """Ids of partial evidence: a number derived from one is shown with a "partial" mark."""
    superseded: bool = False
    """A later version replaced the page: a claim today's intervals do not resolve is marked, not refused."""
    claims: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Ledger rows of the page's checked claims, by key (``render.numbers.claims``)."""
    cells: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Ledger rows of numbers that blocks show (a table's cells), by key (``render.tables.cells``)."""
    _keys: dict[str, Quantity] = field(default_factory=dict)

    def record(self, q: Quantity) -> str:
        """Add a quantity to the page's ledger rows; the same number twice is one row."""
        base = q.key or "value"
        key, n = base, 1
        while key in self._keys:
            seen = self._keys[key]
            if (seen.value, seen.text, seen.derivation, seen.evidence) == (q.value, q.text, q.derivation, q.evidence):
                return key
            n += 1
            key = f"{base}#{n}"
        self._keys[key] = q
        self.rows.append((key, q))
        self.cited.update(q.evidence)
        return key

    def save(self, asset: Asset) -> str:
        """Save an asset's files beside the page under the next free ``<page>-<kind>-<n>``; return that name."""
        base = self.rel[:-3] if self.rel.endswith(".md") else self.rel
        n = 1
        while any(p.startswith(f"{base}-{asset.kind}-{n}.") for p in self.files):
            n += 1
        stem = f"{base}-{asset.kind}-{n}"
        for suffix, data in asset.files.items():
            self.files[f"{stem}.{suffix}"] = data
        self.cited.update(asset.evidence)
        return stem.rsplit("/", 1)[-1]


LEVEL = methodology.constant("ci_level")
"""The intervals' level the mark names, a ledger row of each page that shows the mark (issue 23)."""
UNRESOLVED_MARK = f"not resolved by today's {LEVEL.text} intervals: a later version states it otherwise"
"""What a superseded version's verdict or claim carries when the intervals the build computes today do not
resolve it (``render.numbers.directions.unresolved``): the archived words stay (the version is a record of what
was published), marked; on a current version the same sentence fails the build."""


def unresolved_mark(state: PageState) -> str:
    """The Markdown after a superseded version's unresolved verdict or claim (`` *(UNRESOLVED_MARK)*``); the level
    it names becomes a ledger row of the page, once."""
    state.record(LEVEL)  # once: a page that also prints the level itself shows it as the same row
    return " " + legend.sign_markdown(legend.UNRESOLVED)  # the words are the sign's title and the page's legend


ACROSS: contextvars.ContextVar[Callable[[Any], Any]] = contextvars.ContextVar("probebook_across_sessions")
"""While a page renders: what gives a number its across-sessions interval (``render.evidence.series.across``),
set by the build that holds the archive; a number a template reads (an attribute, an item, a call's result) passes
through it once, so claims, Answers and the page all judge and show the interval the methodology page names."""


def _across(value: Any) -> Any:
    apply = ACROSS.get(None)
    return value if apply is None else apply(value)


# The page being rendered, for ``_finalize`` only: Jinja calls it with the template context,
# not with the page, so the page that collects what its placeholders yield is kept here.
_STATE: contextvars.ContextVar[PageState] = contextvars.ContextVar("probebook_page_state")


class TemplateOutputError(ProbebookError):
    """A placeholder yielded something a page may not show."""


INPUT_DERIVATION = "evidence field params."
"""How ``value()`` names a number read from a run's ``params`` (``render.functions.general.value``)."""


def is_input(q: Quantity) -> bool:
    """Whether ``q`` is one of a run's inputs (a ``params`` field: its batch, its sequence length), set before the
    run began: a run that stopped early leaves it as it was, so it takes no "partial" mark ("1024 (partial) tokens"
    reads as if the width were in doubt; issue 28, item 8)."""
    return q.derivation.startswith(INPUT_DERIVATION)


@jinja2.pass_context
def _finalize(context: jinja2.runtime.Context, value: Any) -> str:
    """Turn what a ``{{ }}`` yields into Markdown, recording Quantities in the ledger."""
    state = _STATE.get()
    if isinstance(value, Quantity):
        if state.partial.intersection(value.evidence) and not is_input(value):
            value = replace(value, mark=f"{value.mark}, partial" if value.mark else "partial")
        key = state.record(value)
        return replace(value, cited_as=(state.rel, key)).markdown(state.rel)
    if isinstance(value, Block):
        for sentence in value.said:
            state.cells.update((row["key"], row) for row in said.rows(state.rel, sentence))
            state.cited.update(sentence.evidence)
        return value.linked(state.rel) if value.linked is not None else value.markdown
    if isinstance(value, Asset):
        name = state.save(value)
        if value.ledger is not None:
            state.cells.update((row["key"], row) for row in value.ledger(state.rel))
        return value.linked(state.rel, name) if value.linked is not None else value.markdown(name)
    if isinstance(value, claims.Claim):
        if lint.is_measurement(value.sentence):
            raise TemplateOutputError(
                f"claim sentence {value.sentence!r} holds a hand-typed measurement; show numbers as quantities"
            )
        unresolved = [why for why in map(directions.unresolved, value.comparisons) if why] if claims.checking() else []
        unnamed = [directions.unnamed_difference(c, value.sentence) for c in value.comparisons]
        unnamed = [why for why in unnamed if why] if claims.checking() else []
        if unnamed and not state.superseded:
            raise TemplateOutputError(f"claim {value.sentence!r} does not name a difference: {unnamed[0]}")
        if unresolved and not state.superseded:
            raise TemplateOutputError(f"claim {value.sentence!r} is not resolved: {unresolved[0]}")
        row = claims.ledger_row(state.rel, list(value.comparisons), value.sentence)
        if not claims.checking():  # a reproduction's render: whether the evidence resolves it, three ways
            row["outcome"] = directions.claim_outcome(value.comparisons)
        state.claims[row["key"]] = row
        state.cited.update(value.evidence)
        return escape_text(value.sentence) + (unresolved_mark(state) if unresolved else "")
    markdown = getattr(value, "template_markdown", None)
    if callable(markdown):
        state.cited.update(getattr(value, "evidence", ()))
        return markdown(state.rel)
    if isinstance(value, str):
        if lint.is_measurement(value):
            raise TemplateOutputError(
                f"placeholder yields the text {value!r}, a hand-typed measurement; "
                "numbers must come from evidence through a page function"
            )
        return escape_text(value)
    if isinstance(value, (bool, int, float)):
        raise TemplateOutputError(
            f"placeholder yields the bare number {value!r}; a page shows numbers only as "
            "Quantities from evidence (e.g. {{ fit(sweep).c }})"
        )
    if value is None:
        raise TemplateOutputError("placeholder yields nothing (None)")
    raise TemplateOutputError(f"placeholder yields a {type(value).__name__}, which a page cannot show")


# -- limits: a page is one file, rendered in bounded time, to bounded output ---------------------------

MAX_PAGE_CHARS = limits.PAGE_CHARS
"""The most text one page's template may produce (``render.pages.limits``, where every bound is stated)."""
MAX_TEMPLATE_SECONDS = limits.TEMPLATE_SECONDS
"""The longest one page's template may run, in CPU seconds (``render.pages.limits``)."""
"""The widest field or longest precision a format spec in a page may ask for."""
_LOADING_TAGS = ("include", "import", "from", "extends")
# Filters whose output is bounded by their input; the rest (center, indent, format, replace, ...) can ask for
# gigabytes with one argument, and a page needs none of them.
SAFE_FILTERS = (
    "abs", "capitalize", "count", "d", "default", "e", "escape", "first", "float", "int", "join", "last",
    "length", "list", "lower", "max", "min", "reverse", "round", "sort", "string", "striptags", "sum", "title",
    "trim", "truncate", "unique", "upper", "wordcount",
)  # fmt: skip


class _OneFile(jinja2.ext.Extension):
    """Refuse ``{% include %}``, ``{% import %}``, ``{% from %}`` and ``{% extends %}``: a page is the one file it is.

    Loading another page would let a record render another's text (or itself, forever) under its own name.
    """

    def filter_stream(self, stream: TokenStream) -> Iterable[Token]:
        opened = False
        for token in stream:
            if opened and token.type == "name" and token.value in _LOADING_TAGS:
                raise jinja2.TemplateSyntaxError(
                    f"{{% {token.value} %}} is not allowed: a page is one file "
                    "(write the text here, or link to the page)",
                    token.lineno,
                    stream.name,
                    stream.filename,
                )
            opened = token.type == "block_begin"
            yield token


def check_format_spec(spec: str) -> None:
    """Refuse a format spec that would make a giant string, e.g. ``'999999999.2f'``."""
    if wide_format(spec):
        raise TemplateLimitError(f"format spec {spec[:40]!r} asks for more than {MAX_FORMAT_WIDTH} characters")


class PageEnvironment(ImmutableSandboxedEnvironment):
    """Sandboxed, StrictUndefined; objects from page functions expose only their ``TEMPLATE_ATTRS``.

    Operators that can build huge values (``*``, ``**``, ``+``, ``%``) and format strings are checked
    before they run, so one expression cannot ask for gigabytes.
    """

    intercepted_binops = frozenset({"*", "**", "+", "%"})
    code_generator_class = bounded.Generator
    concat = staticmethod(bounded.concat)

    def call_binop(self, context: jinja2.runtime.Context, operator: str, left: Any, right: Any) -> Any:
        sized = (str, bytes, list, tuple)
        if operator == "*":
            for seq, n in ((left, right), (right, left)):
                if isinstance(seq, sized) and isinstance(n, int) and len(seq) * n > MAX_PAGE_CHARS:
                    raise TemplateLimitError(
                        f"'*' would make {len(seq) * n} items; a page holds at most {MAX_PAGE_CHARS}"
                    )
        elif operator == "**":
            if isinstance(left, int) and isinstance(right, int) and abs(left) > 1:
                if right > limits.POWER_EXPONENT:
                    raise TemplateLimitError(
                        f"'**' with exponent {right} is refused (at most {limits.POWER_EXPONENT} in a page)"
                    )
                if left.bit_length() * right > limits.POWER_BITS:
                    raise TemplateLimitError(
                        f"'**' would make an integer of about {left.bit_length() * right} bits "
                        f"(at most {limits.POWER_BITS})"
                    )
        elif operator == "+":
            if isinstance(left, sized) and isinstance(right, sized) and len(left) + len(right) > MAX_PAGE_CHARS:
                raise TemplateLimitError(f"'+' would make more than {MAX_PAGE_CHARS} items")
        elif operator == "%" and isinstance(left, str):
            for spec in re.findall(r"%(?:\([^)]*\))?([-+ #0-9.*]*)[a-zA-Z%]", left):
                check_format_spec(spec)
        return super().call_binop(context, operator, left, right)

    def getattr(self, obj: Any, attribute: str) -> Any:
        found = super().getattr(obj, attribute)
        return _across(_string_method(obj, attribute, found) if isinstance(obj, str) else found)

    def getitem(self, obj: Any, argument: Any) -> Any:
        found = super().getitem(obj, argument)
        return _across(_string_method(obj, argument, found) if isinstance(obj, str) else found)

    def call(__self, __context: jinja2.runtime.Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        # jinja2's own signature: the dunder names keep a template's keyword arguments from shadowing them
        return _across(super().call(__context, __obj, *args, **kwargs))

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        if isinstance(obj, jinja2.Undefined):
            str(obj)  # an unknown name: StrictUndefined raises, naming it, before any attribute question
        allowed = getattr(type(obj), "TEMPLATE_ATTRS", None)
        if allowed is not None:
            return attr in allowed
        if isinstance(obj, Quantity):
            return attr in ("to", "format", "low", "high")
        return super().is_safe_attribute(obj, attr, value)


def _string_method(obj: str, attribute: Any, value: Any) -> Any:
    """A string's ``attribute`` (``value``), bounded before it runs: a format's field widths and the result's length
    (another object's attribute has neither to check)."""
    return bounded.checked_method(obj, attribute, _checked_format(obj, attribute, value))


def _checked_format(obj: Any, attribute: Any, value: Any) -> Any:
    """``str.format``/``format_map`` that first refuses a field wider than ``MAX_FORMAT_WIDTH``."""
    if not (isinstance(obj, str) and attribute in ("format", "format_map") and callable(value)):
        return value

    def checked(*args: Any, **kwargs: Any) -> Any:
        for _text, name, spec, _conversion in string.Formatter().parse(obj):
            if name is not None and spec:
                check_format_spec(spec)
        return value(*args, **kwargs)

    return checked


def make_environment(sources: dict[str, tuple[str, str]]) -> PageEnvironment:
    """An environment loading page bodies by tree path; ``sources`` maps rel -> (body, filename)."""

    def load(name: str) -> tuple[str, str, Callable[[], bool]] | None:
        if name not in sources:
            return None
        body, filename = sources[name]
        return body, filename, lambda: True

    env = PageEnvironment(
        loader=jinja2.FunctionLoader(load),
        undefined=jinja2.StrictUndefined,
        finalize=_finalize,
        autoescape=False,
        keep_trailing_newline=True,
        extensions=[_OneFile],
    )
    # Only the globals a page needs; Jinja's defaults (range, lipsum, cycler, ...) are not numbers from evidence.
    env.globals.clear()
    env.filters = {name: env.filters[name] for name in SAFE_FILTERS}
    env.filters.update(join=bounded.join_filter(env), sum=bounded.sum_filter(env), string=bounded.string_filter)
    return env


def render_body(env: PageEnvironment, page: SourcePage, context: dict[str, Any], state: PageState) -> str:
    """Render one page's template body; every failure becomes a ``PageError`` naming file and line."""
    filename = str(page.path)
    token = _STATE.set(state)
    try:
        with (
            _page_errors(
                lambda exc: f"{filename} line {exc.lineno}" if isinstance(exc, jinja2.TemplateSyntaxError) else None,
                filename,
                f"{filename}: the template recurses too deeply (a macro that calls itself?)",
                list(context),
            ),
            bounded.time_limit(MAX_TEMPLATE_SECONDS, f"{filename}: the template"),
        ):
            return _bounded(env.get_template(page.rel), context)
    finally:
        _STATE.reset(token)


def _bounded(template: jinja2.Template, context: dict[str, Any]) -> str:
    """The template's text, refused once it passes ``MAX_PAGE_CHARS``."""
    parts, size = [], 0
    for part in template.generate(context):
        size += len(part)
        if size > MAX_PAGE_CHARS:
            raise TemplateLimitError(f"the page's text passes {MAX_PAGE_CHARS} characters")
        parts.append(part)
    return "".join(parts)


def _always(where: str, _exc: BaseException) -> str:
    return where


@contextlib.contextmanager
def _page_errors(
    locate: Callable[[BaseException], str | None], template: str, recursion: str, names: list[str]
) -> Iterator[None]:
    """Turn what a page's template or expression raised into one ``PageError`` line; let probebook's bugs through.

    ``locate(exc)`` says where (file, line, entry), or None for the line in ``template`` the traceback
    names; ``recursion`` is the whole message for a template that recursed too deeply.
    """
    try:
        yield
    except RecursionError:
        raise PageError(recursion) from None
    except SyntaxError as exc:  # Python's compiler on Jinja's code: 25 nested {% for %}, a 300-term '+' chain
        raise PageError(
            f"{template}: the template nests too deeply for Python to compile ({exc.msg}); "
            "use fewer nested blocks (Python allows 20) or shorter expressions"
        ) from None
    except (jinja2.TemplateError, ProbebookError) as exc:
        raise PageError(template_errors.one_line(exc, template, names, locate(exc))) from None
    except (TypeError, ValueError, ArithmeticError, LookupError) as exc:
        if not template_errors.raised_by_template(exc.__traceback__, template):
            raise  # raised inside probebook's code: a bug, which keeps its traceback (measure/errors.py)
        raise PageError(template_errors.one_line(exc, template, names, locate(exc))) from None


def evaluate_expression(env: PageEnvironment, expr: str, where: str, context: dict[str, Any]) -> Any:
    """One page expression from front matter (no braces), in the page's sandbox and context; failures name ``where``."""
    with (
        _page_errors(
            functools.partial(_always, where), "<template>", f"{where}: the expression recurses deeply", list(context)
        ),
        bounded.time_limit(MAX_TEMPLATE_SECONDS, f"{where}: the expression"),
    ):
        return env.compile_expression(expr, undefined_to_none=False)(**context)


def render_text(env: PageEnvironment, text: str, where: str, context: dict[str, Any], state: PageState) -> str:
    """A sentence from front matter rendered like the body (its numbers become ledger rows of ``state``)."""
    token = _STATE.set(state)
    try:
        with (
            _page_errors(
                functools.partial(_always, where), "<template>", f"{where}: the text recurses too deeply", list(context)
            ),
            bounded.time_limit(MAX_TEMPLATE_SECONDS, f"{where}: the text"),
        ):
            return _bounded(env.from_string(text), context)
    finally:
        _STATE.reset(token)


def evaluate_summary(
    env: PageEnvironment, page: SourcePage, context: dict[str, Any], state: PageState
) -> list[tuple[str, Quantity]]:
    """A record's headline results (front matter ``summary``): (label, Quantity) each, recorded in the page's ledger.

    Each value is a page expression evaluated in the same sandbox and context as the page body, so a
    headline is a number from evidence like any other; one that yields anything but a Quantity fails
    the build naming the file, line and entry.
    """
    out = []
    for i, headline in enumerate(page.summary):
        where = f"{page.where('summary')} (summary[{i}])"
        value = evaluate_expression(env, headline.expr, where, context)
        if not isinstance(value, Quantity):
            raise PageError(
                f"{where}: a headline must be a number from evidence (a Quantity), got {type(value).__name__}"
            )
        try:
            directions.check_label(headline.label, value, where)
        except ProbebookError as exc:
            raise PageError(str(exc)) from None
        marks = [value.mark] if value.mark else []  # a fit's own mark stays (lack of fit)
        marks += ["partial"] if state.partial.intersection(value.evidence) and not is_input(value) else []
        marks += [m for m in (directions.headline_mark(value),) if m]
        if marks:
            value = replace(value, mark=", ".join(marks))
        key = state.record(value)
        out.append((headline.label, replace(value, cited_as=(state.rel, key))))
    return out
