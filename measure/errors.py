"""The one exception type a user can cause, shared by measure and render.

The CLI turns a ``ProbebookError`` into a single line on stderr and exit status 2;
anything else is a bug and keeps its traceback.
"""

import re
import sys
from typing import Callable

# C0 and C1 controls (terminal escape codes, newlines), DEL, and the bidirectional overrides that
# reorder what a terminal shows: text from evidence or a ledger is printed with these escaped.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
ERROR_LINE_LIMIT = 600
"""The longest error line printed; a value quoted in full could otherwise fill the screen."""


def printable(text: str, limit: int | None = None) -> str:
    """Text safe to print on a terminal, on one line: control characters shown as escapes (``\\x1b``,
    ``\\n``), cut to ``limit`` characters with an ellipsis."""
    out = _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)
    if limit is not None and len(out) > limit:
        out = out[: limit - 1] + "…"
    return out


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

    Shared by ``probebook`` and ``python -m measure`` so both commands fail the same way. The packages'
    log records go to stderr as ``prog: message`` lines (``measure.progress.configure``).
    """
    from measure.progress import configure

    configure(prog)
    try:
        return int(action() or 0)
    except ProbebookError as exc:
        print(f"{prog}: error: {printable(str(exc), ERROR_LINE_LIMIT)}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
