"""What commands print for other programs: JSON that any parser reads."""

from __future__ import annotations

import json
import re
from typing import Any

from measure.errors import ProbebookError

# C1 controls and DEL are legal raw inside JSON strings but act on a terminal; written as \u escapes.
_C1 = re.compile("[\x7f-\x9f]")


def json_text(obj: Any, **options: Any) -> str:
    """``json.dumps`` that never writes ``Infinity`` or ``NaN`` (not JSON; refused with one line) nor a raw control."""
    try:
        text = json.dumps(obj, allow_nan=False, **options)
    except ValueError:
        raise ProbebookError(
            "the output holds a number that is not finite (Infinity or NaN), which JSON cannot carry"
        ) from None
    return _C1.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
