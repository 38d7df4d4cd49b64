"""Where a page's template failed and how to say it in one line: the template's own line in a traceback, whether
the page's expression raised (not code a page function runs), and a reader's words for jinja's errors."""

from __future__ import annotations

import os
import re
from types import TracebackType

import jinja2
from jinja2.sandbox import SecurityError


def template_line(tb: TracebackType | None, filename: str) -> int | None:
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def where(exc: BaseException, filename: str) -> str:
    line = template_line(exc.__traceback__, filename)
    return f"{filename} line {line}" if line else filename


def raised_by_template(tb: TracebackType | None, filename: str) -> bool:
    """Whether an exception came from the page's own expression (``{{ [1][5] }}``, a page function called
    with a wrong argument), not from code a page function runs: its innermost frame is the template's
    or jinja's. Only ``ProbebookError`` and template errors are the author's otherwise (ARCHITECTURE.md §Errors)."""
    last = None
    while tb is not None:
        last, tb = tb.tb_frame.f_code.co_filename, tb.tb_next
    return last is not None and (last == filename or f"{jinja2.__name__}{os.sep}" in last)


def explain(exc: BaseException, names: list[str]) -> str:
    if isinstance(exc, jinja2.UndefinedError):
        m = re.match(r"^'([^']+)' is undefined$", str(exc))
        if m:
            return f"unknown name '{m.group(1)}' (this page knows: {', '.join(sorted(names)) or 'nothing'})"
        return str(exc)
    if isinstance(exc, SecurityError):
        return f"not allowed in a page: {exc}"
    if isinstance(exc, jinja2.TemplateSyntaxError):
        return f"template syntax: {exc.message}"
    return str(exc)


def one_line(exc: BaseException, filename: str, names: list[str], located: str | None = None) -> str:
    """The page error's one line: where (``located`` where the caller knows better, else the template's line) and
    what went wrong in a reader's words."""
    return f"{located or where(exc, filename)}: {explain(exc, names)}"
