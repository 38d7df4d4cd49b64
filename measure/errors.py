"""The one exception type a user can cause, shared by measure and render.

The CLI turns a ``ProbebookError`` into a single line on stderr and exit status 2;
anything else is a bug and keeps its traceback.
"""

import sys
from typing import Callable


def one_line(exc: BaseException) -> str:
    """``Type: first line of the message``, at most 500 characters: how evidence records an error."""
    lines = f"{type(exc).__name__}: {exc}".strip().splitlines()
    return (lines[0] if lines else type(exc).__name__)[:500]


class ProbebookError(Exception):
    """A failure caused by input: the message names the file, row or field and what to do."""


class EvidenceError(ProbebookError):
    """An evidence document is malformed, of the wrong schema, or fails validation."""


class StoreError(ProbebookError):
    """The archive cannot satisfy a request (unknown id, ambiguous prefix, bad id)."""


def run_action(action: Callable[[], int | None], prog: str) -> int:
    """Run one CLI action; an input error becomes one line on stderr and exit status 2, no traceback.

    Shared by ``probebook`` and ``python -m measure`` so both commands fail the same way.
    """
    try:
        return int(action() or 0)
    except ProbebookError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
