"""A reproduction's runs as a campaign (ARCHITECTURE.md §Campaigns): one job per cited run, resumable.

The folder is planned like any campaign (``probebook.campaign.plan``): a frozen ``source/`` snapshot, a
manifest stored as ``campaign-plan`` evidence (``data.kind`` ``reproduction``, one point and one curve per
cited run, ``parallel``), receipts only the runner writes, and a write-once ``archive/`` the jobs store
into. The same command run again finds the folder, checks that it plans the same commands, and resumes:
every receipt is settled first and a run that finished is never run again. ``--budget-s`` stops submitting
once spent (exit 3); the next call resumes.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from pathlib import Path
from typing import Any

from measure.errors import EXIT, ProbebookError
from probebook.campaign import receipts
from probebook.campaign.plan import PROBE, VERSION, frozen, load_manifest, snapshot
from probebook.campaign.runner import Runner
from probebook.campaign.spec import Executor
from probebook.reproduce.commands import Run

KIND = "reproduction"
log = logging.getLogger(__name__)


def points(runs: list[Run]) -> list[dict[str, Any]]:
    """One campaign point per run (its key is the alias: a record's aliases are unique names)."""
    return [
        {
            "key": r.alias,
            "curve": r.alias,
            "index": 0,
            "batch": None,
            "probe": r.probe,
            "config": r.config,
            "command": r.command,
            "original": r.original,
        }
        for r in runs
    ]


def _same(planned: list[dict[str, Any]], runs: list[Run]) -> bool:
    return [(p["key"], p["command"]) for p in planned] == [(r.alias, r.command) for r in runs]


def plan(folder: Path, name: str, runs: list[Run], executor: Executor) -> str:
    """The manifest id of ``folder``: planned now when it is new, else checked to plan these same runs."""
    from measure.evidence.envelope import Evidence
    from measure.evidence.store import Store
    from measure.machine import code_fingerprint, fingerprint

    folder = Path(folder)
    if (folder / "manifest.id").exists():
        ident, manifest = load_manifest(folder)
        if manifest["data"].get("kind") != KIND or not _same(manifest["data"]["points"], runs):
            raise ProbebookError(
                f"{folder}: holds another campaign than this reproduction's runs; give --folder a new folder"
            )
        return ident
    if folder.exists() and any(folder.iterdir()):
        raise ProbebookError(f"{folder}: not empty and not a reproduction's folder; give --folder a new folder")
    (folder / "receipts").mkdir(parents=True)
    source = snapshot(folder)
    planned = points(runs)
    evidence = Evidence(
        probe=PROBE,
        probe_version=VERSION,
        params={"name": name, "probe": KIND, "executor": dataclasses.asdict(executor)},
        data={
            "kind": KIND,
            "parallel": True,
            "points": planned,
            "curves": [{"curve": p["curve"], "points": [p["key"]]} for p in planned],
            **frozen(source),
        },
        machine=fingerprint(),
        code=code_fingerprint(None),
    )
    ident = Store(folder / "archive").put(evidence)
    (folder / "manifest.id").write_text(ident + "\n", encoding="utf-8")
    return ident


class _Shown(Runner):
    """The campaign runner, with a progress bar of runs done and the time left (rich, on stderr)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self.bar = Progress(
            TextColumn("reproduce: runs"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("time left"),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=False,
        )
        done = sum(1 for r in self.receipts.values() if r["state"] not in receipts.IN_FLIGHT)
        self.task = self.bar.add_task("runs", total=len(self.points), completed=done)

    def _settle(self, key: str, handle: Any, state: str | None = None, error: str | None = None) -> None:
        super()._settle(key, handle, state, error)
        self.bar.advance(self.task)


def run(
    folder: Path, kind: str, budget_s: float | None, retry_failed: bool, max_concurrent: int | None = None
) -> tuple[int, float]:
    """Run (or resume) the folder's jobs: (the runner's exit status, the seconds it took)."""
    from filelock import FileLock, Timeout

    started = time.perf_counter()
    runner = _Shown(folder, kind, max_concurrent, budget_s)
    try:
        with FileLock(str(runner.folder / "runner.lock"), timeout=0), runner.bar:
            runner.reconcile()
            if retry_failed:
                runner.retry_failed()
            code = runner.run()
    except Timeout:
        raise ProbebookError(f"{folder}: another reproduce holds this folder (runner.lock)") from None
    return code, time.perf_counter() - started


def results(folder: Path) -> tuple[dict[str, str], dict[str, str]]:
    """(alias -> new evidence id of each run that measured, alias -> why each other run has none)."""
    _ident, manifest = load_manifest(folder)
    got = receipts.load_all(folder)
    done, not_done = {}, {}
    for point in manifest["data"]["points"]:
        receipt = got.get(point["key"])
        if receipt is None:
            not_done[point["key"]] = "not run yet"
        elif receipt["state"] == "ok" and receipt.get("evidence"):
            done[point["key"]] = receipt["evidence"]
        else:
            attempt = (receipt.get("attempts") or [{}])[-1]
            not_done[point["key"]] = f"{receipt['state']}" + (f": {attempt['error']}" if attempt.get("error") else "")
    return done, not_done


def status_line(code: int, folder: Path) -> str | None:
    """What to do after a runner that did not finish every run."""
    if code == EXIT["budget spent"]:
        return f"reproduce: stopped at the budget; run the same command again to resume ({folder})"
    if code != 0:
        return f"reproduce: some runs failed; add --retry-failed to run them again ({folder})"
    return None


def say(text: str) -> None:
    """One line on stderr (the packages' log handler: ``probebook: reproduce: ...``)."""
    log.warning("%s", text)
