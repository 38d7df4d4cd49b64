"""The one exception type a user can cause, shared by measure and render.

The CLI turns a ``ProbebookError`` into a single line on stderr and exit status 2;
anything else is a bug and keeps its traceback (exit status 70). Each exit status has one meaning (``EXIT``,
listed in the README's "Exit status").
"""

import re
import signal
import sys
import threading
import traceback
from collections.abc import Callable
from typing import Any

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


class MissingPackage(ProbebookError):
    """An optional Python package the request needs is not installed (pyarrow for a Parquet corpus): exit 69, not 2.

    The message names the package and how to install it; ``run_action`` prints it as one line.
    """


EXIT = {
    "ok": 0,
    "check failed": 1,  # a condition the command checks did not hold: diff --fail-on-change, verify, audit findings
    "bad input": 2,  # a ProbebookError or an argparse usage error: one line naming the file, field or option
    "budget spent": 3,  # campaign run --budget-s: nothing new submitted; resume later
    "missing package": 69,  # a package the command needs is not installed (BSD sysexits' EX_UNAVAILABLE)
    "bug": 70,  # an exception no input should cause (BSD sysexits' EX_SOFTWARE): the traceback is printed
    "interrupted": 130,  # Ctrl-C or SIGTERM (128 + SIGINT, as shells report it); a probe stores what it measured
}
"""Every exit status of ``probebook`` and ``python -m measure``, by meaning; nothing else exits with 1."""


OWN_PACKAGES = ("measure", "render", "probebook")
"""This project's packages: one of them missing is a broken checkout, a bug, not a package to install."""


def missing_package(exc: ModuleNotFoundError) -> str | None:
    """The top-level package an import could not find (``nh3`` for ``nh3.clean``); None for one of this project's."""
    top = (exc.name or "").partition(".")[0]
    return top if top and top not in OWN_PACKAGES else None


def run_action(action: Callable[[], int | None], prog: str) -> int:
    """Run one CLI action; an input error becomes one line on stderr and exit status 2, no traceback.

    Shared by ``probebook`` and ``python -m measure`` so both commands fail the same way. The packages'
    log records go to stderr as ``prog: message`` lines (``measure.progress.configure``).
    """
    from measure.progress import configure

    configure(prog)
    previous = _term_as_interrupt()
    try:
        return int(action() or 0)
    except MissingPackage as exc:
        print(f"{prog}: error: {printable(str(exc), ERROR_LINE_LIMIT)}", file=sys.stderr)
        return EXIT["missing package"]
    except ProbebookError as exc:
        print(f"{prog}: error: {printable(str(exc), ERROR_LINE_LIMIT)}", file=sys.stderr)
        return EXIT["bad input"]
    except BrokenPipeError:
        return EXIT["ok"]
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return EXIT["interrupted"]
    except ModuleNotFoundError as exc:
        package = missing_package(exc)
        if package is None:
            return _bug(prog)
        print(
            f"{prog}: error: this command needs the Python package {package!r}, which is not installed here "
            f"(`pip install -e .` from the repository installs what probebook needs)",
            file=sys.stderr,
        )
        return EXIT["missing package"]
    except Exception:
        return _bug(prog)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


IMPORT_RETRY_S = 0.05
"""How long a SIGTERM that lands inside an import waits before it is raised again, seconds."""


def _interrupt(signum: int, frame: Any) -> None:
    """Raise KeyboardInterrupt, unless the signal landed inside an import: an exception raised while an extension
    module initialises can crash the process instead of unwinding it (orjson's import segfaulted so under load, a
    SIGTERM sent to ``campaign status --watch`` as it loaded its modules: exit -11, not 130). Then the signal is
    sent again once ``IMPORT_RETRY_S`` has passed, until it lands outside every import."""
    if importing(frame):
        import os

        retry = threading.Timer(IMPORT_RETRY_S, os.kill, (os.getpid(), signum))
        retry.daemon = True
        retry.start()
        return
    raise KeyboardInterrupt(f"stopped by signal {signum}")


def importing(frame: Any) -> bool:
    """Whether ``frame`` or one of its callers runs the import machinery (``<frozen importlib._bootstrap...>``)."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def _term_as_interrupt() -> Any:
    """SIGTERM (``timeout``, a scheduler, ``kill``) raises KeyboardInterrupt as Ctrl-C does, so every command ends as
    ``interrupted`` (exit 130) after its own clean-up; returns the handler it replaced (None off the main thread,
    where Python lets no handler be set)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, _interrupt)


def _bug(prog: str) -> int:
    traceback.print_exc()
    print(f"{prog}: internal error (a bug; please report it with the traceback above)", file=sys.stderr)
    return EXIT["bug"]


def hard_exit(code: int) -> None:
    """Flush the logs and the output, then end the process at once (``os._exit``), without the interpreter's
    teardown: what an entry point does once everything is written and every child waited for."""
    import logging
    import os

    logging.shutdown()  # flushes every handler
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:  # the reader went away (``probebook ls | head``): nothing left to say
        pass
    os._exit(code)
