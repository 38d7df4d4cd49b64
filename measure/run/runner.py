"""Run a probe body, journal every point, and turn the outcome into ONE evidence document.

Why a journal and not a ``partial`` evidence per point: the archive is write-once and
content-addressed, so storing a growing document after each point would leave one stale
document per point behind for ever. Instead each point is appended (and fsynced) to
``<archive>/journal/<probe>-<time>-<pid>.jsonl``, outside ``evidence/`` (``verify`` and ``ls``
never see it). When the body finishes the probe returns one ``complete`` evidence; when it
raises (a crash, an OOM, Ctrl-C) it returns ``partial`` evidence holding every point measured so
far, with ``error`` (``failed`` if nothing was measured). The CLI stores it and deletes the
journal. If the process itself dies (SIGKILL, a hard CUDA fault), the journal survives and
``probebook measure recover JOURNAL`` archives what it holds as ``partial``.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from measure.constants import CV_THRESHOLD
from measure.errors import ProbebookError, one_line
from measure.evidence.envelope import Evidence, utc_now
from measure.evidence.files import max_bytes
from measure.evidence.reading import read_given
from measure.machine import code_fingerprint, fingerprint
from measure.progress import HEARTBEAT_S, Progress

log = logging.getLogger(__name__)


class Recorder:
    """Collects a probe's samples and points; appends each point to the journal as it lands."""

    def __init__(self, probe: str, params: dict[str, Any], journal: Path | None = None, progress: bool = False):
        self.probe = probe
        self.params = dict(params)
        self.samples: list[dict[str, Any]] = []
        self.points: list[dict[str, Any]] = []
        self.data: dict[str, Any] = {}
        self.code: dict[str, Any] = {}
        self.status = "complete"
        self.error: str | None = None
        self.warned = 0
        """How many of ``data.engagement_warnings`` have been said on stderr (``mark``, ``say_marks``)."""
        self.journal = journal
        self.progress = Progress(probe, log, enabled=progress, heartbeat_s=HEARTBEAT_S)

    def _append(self, record: dict[str, Any]) -> None:
        if self.journal is None:
            return
        with open(self.journal, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record, sort_keys=True, allow_nan=False) + "\n")
            fh.flush()
            os.fsync(fh.fileno())

    def header(self, version: int, machine: dict[str, Any], code: dict[str, Any]) -> None:
        self._append(
            {
                "header": {
                    "probe": self.probe,
                    "probe_version": version,
                    "params": self.params,
                    "machine": machine,
                    "code": code,
                    "created_at": utc_now(),
                }
            }
        )

    def add_code(self, key: str, value: Any) -> None:
        """Add a code fingerprint known only once the body runs (a plug-in's source); journalled too."""
        self.code[key] = value
        self._append({"code": {key: value}})

    def point(self, rows: list[dict[str, Any]], summary: dict[str, Any] | None = None, label: str = "") -> None:
        """Record one measured point: its raw rows (samples) and an optional aggregate."""
        self.samples.extend(rows)
        if summary is not None:
            self.points.append(summary)
        self._append({"rows": rows, "point": summary})
        self.progress.step(label)

    def journal_rows(self, rows: list[dict[str, Any]], points: list[dict[str, Any]]) -> None:
        """Journal rows and point summaries measured elsewhere (another session's process), without keeping them."""
        self._append({"rows": rows, "point": None})
        for p in points:
            self._append({"rows": [], "point": p})

    def mark(self, marks: list[dict[str, Any]]) -> None:
        """Add each mark not already there to ``data.engagement_warnings``, the one place a run records what it
        could not record or did not honour (README "Measure your own model"); say it on stderr as a warning once
        the run has measured (before that, a refusal of bad input must stay one line: ``execute`` says the rest)."""
        kept = self.data.setdefault("engagement_warnings", [])
        kept.extend(m for i, m in enumerate(marks) if m not in kept and m not in marks[:i])
        if not kept:
            del self.data["engagement_warnings"]
        elif self.samples:
            self.say_marks()

    def say_marks(self) -> None:
        """Log each mark not yet said as ``warning: MESSAGE`` (``probebook: warning: ...`` on stderr)."""
        kept = self.data.get("engagement_warnings") or []
        for mark in kept[self.warned :]:
            log.warning("warning: %s", mark.get("message"))
        self.warned = len(kept)

    def check_device(self) -> None:
        """Record whether the card is idle and ours (``measure.device_check``), on the device ``params`` name."""
        from measure import device_check

        self.data["device_check"] = device_check.check(self.params.get("device"))

    def fail(self, error: str) -> None:
        """Mark the run failed (e.g. a profiler trace that dropped events): it is stored, never published."""
        self.status, self.error = "failed", error


def unstable_points(samples: list[dict[str, Any]], points: list[dict[str, Any]]) -> int:
    """How many point summaries, or rows when no summary says, carry a true ``unstable`` flag (``measure.timing``'s:
    the CV of the windows still above the threshold after the extra windows); a flag per arm counts once."""

    def flagged(record: dict[str, Any]) -> bool:
        value = record.get("unstable")
        return any(v is True for v in value.values()) if isinstance(value, dict) else value is True

    said = [p for p in points if isinstance(p, dict) and "unstable" in p]
    return sum(map(flagged, said or [r for r in samples if isinstance(r, dict)]))


def execute(
    probe: str,
    version: int,
    params: dict[str, Any],
    source_file: str,
    body: Callable[[Recorder], None],
    journal: Path | None = None,
    progress: bool = False,
    check_device: bool = True,
) -> Evidence:
    """Run ``body(recorder)``; return complete, partial (with error) or failed evidence.

    The device is checked before the body (``measure.device_check``), unless ``check_device`` is False:
    then the body calls ``rec.check_device()`` once it holds the device (a campaign job, after its lock).

    A ``ProbebookError`` raised before any point was measured is re-raised (it is bad input,
    shown as one line); any other exception, or one after points exist, becomes the evidence's error.
    """
    rec = Recorder(probe, params, journal, progress)
    machine = fingerprint()
    code = code_fingerprint(source_file)
    rec.header(version, machine, code)
    rec.code = code
    from measure import host_load

    if check_device:  # before the body: an idle, exclusive card is the premise of every timing (issue 27)
        rec.check_device()
    rec.data["host_load"] = {"before": host_load.sample()}
    try:
        with rec.progress:
            body(rec)
    except ProbebookError as exc:
        if not rec.samples:
            raise
        rec.status, rec.error = "partial", one_line(exc)
    except (Exception, KeyboardInterrupt) as exc:  # keep what was measured; say why it stopped
        rec.status = "partial" if rec.samples else "failed"
        rec.error = one_line(exc)
    if rec.status == "complete":
        flagged = unstable_points(rec.samples, rec.points)
        if flagged:  # issue 29: a run whose windows stayed noisy is not stored as complete
            rec.status = "unstable"
            rec.error = (
                f"{flagged} point(s) with a CV of their windows above {CV_THRESHOLD:.0%} after the extra windows "
                "(rows flagged unstable): the times are noisy; rerun on a quiet device"
            )
    rec.say_marks()  # what the run could not record, said before its result
    rec.data["host_load"]["after"] = host_load.sample()
    before = rec.data["host_load"]["before"]
    rec.data["host_load"]["steal_share"] = host_load.steal_share(
        before.get("cpu_times"), rec.data["host_load"]["after"].get("cpu_times")
    )
    if before["busy"]:  # said once the run has measured, so that bad input stays one line (it is raised above)
        log.warning(
            "warning: the host was busy (load %.2f on %d core(s) at the start): other work shared the CPU, so the "
            "times may be slow and noisy; the load is recorded with the evidence (data.host_load)",
            before["load_1min"],
            before["cores"],
        )
    data = {"samples": rec.samples, "points": rec.points, **rec.data}
    return Evidence(
        probe=probe,
        probe_version=version,
        params=rec.params,
        data=data,
        machine=machine,
        code=code,
        status=rec.status,
        error=rec.error,
    )


def journal_path(archive: Path, probe: str) -> Path:
    """A fresh journal file name under ``<archive>/journal/``."""
    folder = Path(archive) / "journal"
    folder.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    return folder / f"{probe}-{stamp}-{os.getpid()}.jsonl"


def recover(path: Path) -> Evidence:
    """Evidence (``partial``) from a journal left by a process that died before storing its result."""
    # a FIFO or device given as a journal is refused in one line, never waited on or read forever
    raw = read_given(path, max_bytes(), "journal")
    try:
        lines = raw.decode("utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise ProbebookError(f"{path}: not a journal (not UTF-8 at byte {exc.start})") from None
    records = []
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            if i == len(lines):  # a torn last line: the process died mid-write
                break
            raise ProbebookError(f"{path} line {i}: not valid JSON") from None
    if not records or "header" not in records[0]:
        raise ProbebookError(f"{path}: not a probe journal (no header line)")
    head = records[0]["header"]
    samples = [row for r in records[1:] for row in r.get("rows", [])]
    points = [r["point"] for r in records[1:] if r.get("point") is not None]
    code = dict(head["code"])
    for r in records[1:]:
        code.update(r.get("code") or {})
    status = "partial" if samples else "failed"
    return Evidence(
        probe=head["probe"],
        probe_version=head["probe_version"],
        params=head["params"],
        data={"samples": samples, "points": points},
        machine=head["machine"],
        code=code,
        status=status,
        error="recovered from a journal: the probe process stopped before storing its result",
        created_at=head["created_at"],
    )
