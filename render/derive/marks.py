"""What a run says about itself that a reader of its numbers must see (issue 27): the plug-in harness it timed,
by name and source hash; options requested but not engaged, and what it could not record (issue 40); a device
that was busy before timing.

Evidence records the harness as ``params.workload`` (its ``package.module:factory`` spec) and
``code.workload_source`` (the module's and its package's SHA-256, ``measure.machine``); engagement marks as
``data.engagement_warnings`` (``measure.probes.common.mark_engagement``); the idle check as
``data.device_check`` (``busy``, ``reason``). The evidence page shows these marks (``render.evidence.pages``) and
a record citing the evidence shows them as notices (``render.pages.notices``). Pure: text from one document.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Mark:
    """One mark: ``kind`` is ``harness`` (information) or ``engagement`` / ``busy`` (warnings)."""

    kind: str
    title: str
    text: str
    """Plain text (the caller escapes it for Markdown)."""


LOST_TITLES = {
    "flops-unknown": "Not recorded",
    "option-ignored": "Option not taken",
    "dtype-not-honoured": "Requested but not honoured",
    "arm-skipped": "Arm skipped",
}
"""The notice title of each kind of ``data.engagement_warnings`` entry that is not an engagement (issue 40)."""


def harness(doc: dict[str, Any]) -> Mark | None:
    """The plug-in harness the run timed and its source hashes; None for the reference decoder."""
    spec = (doc.get("params") or {}).get("workload")
    if not spec:
        return None
    source = (doc.get("code") or {}).get("workload_source") or {}
    if not source:
        return Mark("harness", "Plug-in harness", f"ran the plug-in harness {spec}; its source was not fingerprinted")
    package = source.get("package")
    text = f"ran the plug-in harness {spec}: module {source.get('module')} sha256 {source.get('module_sha256')}"
    if package:
        text += f", package {package} ({source.get('package_files')} files) sha256 {source.get('package_sha256')}"
    return Mark("harness", "Plug-in harness", text)


def warnings(doc: dict[str, Any]) -> list[Mark]:
    """Requested-but-not-engaged options and a busy device, as the run recorded them; [] when there are none."""
    data = doc.get("data") or {}
    out = []
    for entry in data.get("engagement_warnings") or []:
        message = entry.get("message") if isinstance(entry, dict) else entry
        kind = entry.get("kind") if isinstance(entry, dict) else None
        out.append(Mark("engagement", LOST_TITLES.get(str(kind), "Requested but not engaged"), f"{message}"))
    check = data.get("device_check") or {}
    if isinstance(check, dict) and check.get("busy"):
        reason = check.get("reason") or "the idle check found it busy"
        out.append(Mark("busy", "Device busy before timing", f"{reason}"))
    return out


def marks(doc: dict[str, Any]) -> list[Mark]:
    """Every mark of ``doc``: its harness first, then its warnings."""
    first = harness(doc)
    return ([first] if first else []) + warnings(doc)
