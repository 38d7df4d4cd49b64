"""Old params a later probe version renamed or refuses, migrated so a recorded run can be run again today.

A record's Reproduce block (``render.pages.provenance.command``) and ``probebook reproduce`` rebuild each
cited run's command from the params its evidence recorded, with today's probe. Where a later version of a
probe renamed an option or refuses a value it once took, the recorded params are migrated here, in one table
per probe (``MIGRATIONS``), each entry a pure function of the recorded value with the reason it exists. The
evidence itself is never changed (ARCHITECTURE.md §Invariants): only the command written back from it.

Torch-free and probe-free, so render may read it (the Reproduce block) without importing a probe.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

DROP = object()
"""What a migration returns to leave the option out of the command (today's default applies)."""


@dataclass(frozen=True)
class Migration:
    """One recorded param of one probe, rewritten for today's probe."""

    field: str
    """The param as the evidence recorded it."""
    apply: Callable[[Any], Any]
    """Recorded value -> today's value (``DROP``: leave the option out); the value itself when it needs no change."""
    why: str
    """The note the command carries when this migration changed something."""
    rename: str | None = None
    """Today's name of the param, when a later version renamed it."""


def _arms_without_baseline(value: Any) -> Any:
    """ablate ``--arms``: version 1 listed ``baseline``; today it always runs and the option refuses it."""
    if not isinstance(value, list) or "baseline" not in value:
        return value
    rest = [arm for arm in value if arm != "baseline"]
    return rest if rest else DROP


MIGRATIONS: dict[str, tuple[Migration, ...]] = {
    "ablate": (
        Migration(
            "arms",
            _arms_without_baseline,
            "--arms no longer lists baseline: today's ablate probe always runs it and refuses the name",
        ),
    ),
}
"""Probe name -> its migrations, applied in order (``tests/test_reproduce_commands.py`` tests each)."""


def migrate(probe: str, params: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """(the params today's ``probe`` takes for a run recorded with ``params``, a note per migration applied)."""
    out = dict(params)
    notes = []
    for m in MIGRATIONS.get(probe, ()):
        if m.field not in out:
            continue
        value = m.apply(out[m.field])
        if value is out[m.field] and m.rename is None:
            continue
        del out[m.field]
        if value is not DROP:
            out[m.rename or m.field] = value
        notes.append(f"migrated: {m.why}")
    return out, notes
