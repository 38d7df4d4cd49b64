"""``probebook measure <probe>``: run a probe and archive its evidence (the probes' commands are ``measure.cli``'s)."""

from __future__ import annotations

from typing import Any

from measure.cli import add_probe_commands, command


def register(sub: Any) -> None:
    top = command(
        sub,
        "measure",
        "Run a probe on this machine and archive its evidence; print the evidence id.",
        "probebook measure step-scaling --preset 90m --device cuda",
    )
    add_probe_commands(top.add_subparsers(dest="probe", metavar="PROBE", required=True))
