"""The one exception type a user can cause, shared by measure and render.

The CLI turns a ``ProbebookError`` into a single line on stderr and exit status 2;
anything else is a bug and keeps its traceback.
"""


class ProbebookError(Exception):
    """A failure caused by input: the message names the file, row or field and what to do."""


class EvidenceError(ProbebookError):
    """An evidence document is malformed, of the wrong schema, or fails validation."""


class StoreError(ProbebookError):
    """The archive cannot satisfy a request (unknown id, ambiguous prefix, bad id)."""
