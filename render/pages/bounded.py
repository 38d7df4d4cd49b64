"""What a page's template may build is bounded before it is built (issue 25, item 10).

``render.pages.sandbox.PageEnvironment`` checks ``*``, ``**``, ``+`` and ``%`` before they run. Three more ways
asked for a gigabyte in one expression, and are checked here, each against ``render.pages.limits.PAGE_CHARS``:

- ``~`` (Jinja's concatenation, compiled to a plain ``str`` join no operator hook sees): ``Generator`` compiles
  it to ``PageEnvironment.concat``, which adds up the parts' lengths first; doubling ``{% set s = s ~ s %}``
  stops at the bound;
- string methods whose result can be far longer than the string (``ljust``, ``rjust``, ``center``, ``zfill``,
  ``expandtabs``, ``replace``, ``join``): ``checked_method`` computes the result's length from the arguments;
- the ``join`` and ``sum`` filters, over a list of one long string repeated (``['x' * 8000000] * 8000000``).

A constant that is not a finite number (``{{ 1e400 }}``, ``{{ 'nan'|float }}``, which Jinja folds at compile time
and then printed as an unknown name ``inf``) is refused when the page compiles, and ``string`` refuses what has no
text of its own (``{{ fit|string }}`` printed a memory address, so two builds differed).
"""

from __future__ import annotations

import contextlib
import math
import signal
import threading
from collections.abc import Callable, Iterable, Iterator
from types import FrameType
from typing import Any

import jinja2
from jinja2 import nodes
from jinja2.compiler import CodeGenerator, Frame

from measure.errors import ProbebookError
from render.pages import limits


class TemplateLimitError(ProbebookError):
    """A template ran too long, produced too much, or asked for an operation too large."""


def check_length(what: str, n: int) -> None:
    """Refuse an operation that would make a string (or list) of ``n`` items, over ``limits.PAGE_CHARS``."""
    if n > limits.PAGE_CHARS:
        raise TemplateLimitError(f"{what} would make {n} characters; a page holds at most {limits.PAGE_CHARS}")


def concat(parts: Iterable[Any]) -> str:
    """``a ~ b ~ c``: the parts as text, joined, once their lengths add up to no more than the bound."""
    texts = [str(p) for p in parts]
    check_length("'~'", sum(len(t) for t in texts))
    return "".join(texts)


def _padded(s: str, width: Any, *_: Any) -> int:
    return max(len(s), width if isinstance(width, int) else 0)


_LENGTH: dict[str, Callable[..., int]] = {
    "ljust": _padded,
    "rjust": _padded,
    "center": _padded,
    "zfill": _padded,
    "expandtabs": lambda s, tabsize=8: len(s) + s.count("\t") * max(tabsize if isinstance(tabsize, int) else 8, 0),
    "replace": lambda s, old, new, count=-1: (
        len(s)
        + max(len(new) - len(old), 0)
        * (s.count(old) if old else len(s) + 1 if count is None or count < 0 else min(count, len(s) + 1))
    ),
}
"""Each sized string method's result length, from the string and the call's arguments (an upper bound)."""


def checked_method(obj: Any, attribute: Any, value: Any) -> Any:
    """``value`` (``obj.attribute``), wrapped for a ``str`` method that can make a much longer string."""
    if not isinstance(obj, str) or not callable(value):
        return value
    if attribute == "join":

        def join(items: Iterable[Any]) -> str:
            listed = list(items)
            check_length("join", sum(len(str(i)) for i in listed) + len(obj) * max(len(listed) - 1, 0))
            return value(listed)

        return join
    if attribute in _LENGTH:
        length = _LENGTH[attribute]

        def sized(*args: Any, **kwargs: Any) -> Any:
            try:
                check_length(f"'.{attribute}()'", length(obj, *args, **kwargs))
            except TypeError:
                pass  # wrong arguments: the method itself says so
            return value(*args, **kwargs)

        return sized
    return value


def _listed(value: Any, what: str) -> list[Any]:
    try:
        return list(value)
    except TypeError:
        raise TemplateLimitError(f"the {what} filter needs a list, got a {type(value).__name__}") from None


def join_filter(env: jinja2.Environment) -> Callable[..., str]:
    """The ``join`` filter, refusing a result over the bound before it is made."""
    original = env.filters["join"]

    def join(eval_ctx: Any, value: Iterable[Any], d: str = "", attribute: Any = None) -> str:
        listed = _listed(value, "join")
        texts = [str(env.getattr(i, attribute) if attribute is not None else i) for i in listed]
        check_length("join", sum(len(t) for t in texts) + len(str(d)) * max(len(texts) - 1, 0))
        return original(eval_ctx, listed, d, attribute)

    join.jinja_pass_arg = original.jinja_pass_arg  # type: ignore[attr-defined]
    return join


def sum_filter(env: jinja2.Environment) -> Callable[..., Any]:
    """The ``sum`` filter over numbers only: over lists or strings it is concatenation, unbounded."""
    original = env.filters["sum"]

    def total(environment: Any, iterable: Iterable[Any], attribute: Any = None, start: Any = 0) -> Any:
        listed = _listed(iterable, "sum")
        values = [environment.getattr(i, attribute) if attribute is not None else i for i in listed]
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in [*values, start]):
            raise TemplateLimitError("the sum filter adds numbers only")
        return original(environment, listed, attribute, start)

    total.jinja_pass_arg = original.jinja_pass_arg  # type: ignore[attr-defined]
    return total


def string_filter(value: Any) -> str:
    """The ``string`` filter for what has text of its own (text, numbers, Quantities, Markup); never an object's
    default ``repr``, which holds its memory address (``<bound method ... at 0x7f...>``)."""
    kind = type(value)
    default = kind.__str__ is object.__str__ and kind.__repr__ is object.__repr__
    if default or (callable(value) and not isinstance(value, str)):
        raise TemplateLimitError(f"the string filter has no text for a {kind.__name__}")
    return str(value)


def bracket_depth(text: str) -> int:
    """How deep ``[`` brackets nest in Markdown ``text`` (a ``\\[`` is text, not a bracket): Python-Markdown's
    time grows with the square of it, and 20,000 took about 13 minutes."""
    depth = deepest = 0
    escaped = False
    for c in text:
        if escaped:
            escaped = False
        elif c == "\\":
            escaped = True
        elif c == "[":
            depth += 1
            deepest = max(deepest, depth)
        elif c == "]" and depth:
            depth -= 1
    return deepest


def check_markdown(text: str, where: str) -> None:
    """Refuse a page whose Markdown nests brackets deeper than ``limits.MARKDOWN_NESTING``, naming it."""
    if text.count("[") <= limits.MARKDOWN_NESTING:
        return  # cannot nest deeper than it has brackets: no walk over a long page
    depth = bracket_depth(text)
    if depth > limits.MARKDOWN_NESTING:
        raise TemplateLimitError(
            f"{where}: brackets nest {depth} deep; a page may nest them at most {limits.MARKDOWN_NESTING} deep"
        )


class Generator(CodeGenerator):
    """Jinja's code generator with ``~`` through ``environment.concat`` and non-finite constants refused."""

    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        self.write("environment.concat((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")

    def visit_Const(self, node: nodes.Const, frame: Frame) -> None:
        value = node.as_const(frame.eval_ctx)
        if isinstance(value, float) and not math.isfinite(value):
            raise jinja2.TemplateSyntaxError(
                f"{value!r} is not a finite number (a page shows numbers only as Quantities from evidence)",
                node.lineno,
                self.name,
                self.filename,
            )
        super().visit_Const(node, frame)


@contextlib.contextmanager
def time_limit(seconds: float, what: str) -> Iterator[None]:
    """Stop the block with ``TemplateLimitError`` after ``seconds`` of this process's CPU time.

    The limit is CPU time (``ITIMER_PROF``: user and system time of every thread, the chart renderer's
    included), not wall time, so a page that is slow only because the machine is shared is not
    refused, while a runaway template, which burns CPU, still is. SIGPROF interrupts even a loop that
    calls nothing; signals reach only the main thread, so elsewhere (a page rendered from a worker
    thread) the block runs without a time limit.
    """
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def expire(_signum: int, _frame: FrameType | None) -> None:
        raise TemplateLimitError(
            f"{what} used more than {seconds:g} s of CPU time; a page renders in well under a second"
        )

    previous = signal.signal(signal.SIGPROF, expire)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


@contextlib.contextmanager
def untimed() -> Iterator[None]:
    """Stop ``time_limit``'s clock for the block, then give the page the CPU time it had left.

    For importing a library and starting vl-convert's runtime when a page is the first to need them
    (``render.functions.derivations.load_libraries``): a page is timed for its own work, not for that.
    """
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return
    left, interval = signal.getitimer(signal.ITIMER_PROF)
    signal.setitimer(signal.ITIMER_PROF, 0)
    try:
        yield
    finally:
        if left > 0:
            signal.setitimer(signal.ITIMER_PROF, left, interval)
