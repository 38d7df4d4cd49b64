"""``probebook measure <probe>``: run a probe and archive its evidence (definitions in ``measure.cli``)."""

from __future__ import annotations

from typing import Any

from measure import cli as measure_cli
from probebook.cli import command


def register(sub: Any) -> None:
    measure_cli.register(sub, command)
