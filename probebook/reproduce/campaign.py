"""A reproduction's runs as a campaign (ARCHITECTURE.md §Campaigns): one job per cited run, resumable.

The folder is planned like any campaign (``probebook.campaign.plan``): a frozen ``source/`` snapshot, a
manifest stored as ``campaign-plan`` evidence (``data.kind`` ``reproduction``, one point and one curve per
cited run, ``parallel``), receipts only the runner writes, and a write-once ``archive/`` the jobs store
into. The same command run again finds the folder, checks that it plans the same commands, and resumes:
every receipt is settled first and a run that finished is never run again. ``--budget-s`` stops submitting
once spent (exit 3); the next call resumes.

Unlike ``campaign run``, whose jobs outlive their runner to be adopted later, no job outlives ``reproduce``:
Ctrl-C or SIGTERM cancels every live job and waits for it to end (its receipt says ``cancelled``), and a local
job follows the runner's life itself (``job.RUNNER_ENV``), so even a runner killed by SIGKILL leaves none.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import signal
import time
from pathlib import Path
from typing import Any

from measure.errors import EXIT, ProbebookError
from probebook.campaign import receipts
from probebook.campaign.plan import PROBE, VERSION, frozen, load_manifest, snapshot
from probebook.campaign.runner import Runner
from probebook.campaign.spec import Executor
from probebook.reproduce.commands import CampaignPart, Run
from probebook.reproduce.job import RUNNER_ENV

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


CANCEL_WAIT_S = 30.0
"""How long an interrupted job may take to end (its probe stores what it has) before it is killed."""


def _interrupt(signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt(f"stopped by signal {signum}")


def cancel_live(runner: Runner, why: str) -> list[str]:
    """Cancel every job the runner has in flight, wait for each to end (killed after ``CANCEL_WAIT_S``), and settle
    its receipt failed, ``cancelled: ...`` (the next run's ``--retry-failed`` runs it again); the keys cancelled."""
    from probebook.campaign import executors

    cancelled = []
    for key, handle in sorted(runner.live.items()):
        kind = runner.receipts[key]["attempts"][-1]["executor"]
        executors.cancel(kind, handle)
        process = getattr(handle, "_process", None)
        if process is not None:  # a local job's shell, started by this runner: it ends when the job has
            try:
                process.wait(timeout=CANCEL_WAIT_S)
            except Exception:  # the job did not end when interrupted: it goes now
                executors.cancel(kind, handle, force=True)
                process.wait()
        runner._settle(key, handle, "failed", f"cancelled: {why}")
        cancelled.append(key)
    return cancelled


def run(
    folder: Path, kind: str, budget_s: float | None, retry_failed: bool, max_concurrent: int | None = None
) -> tuple[int, float]:
    """Run (or resume) the folder's jobs: (the runner's exit status, the seconds it took). Ctrl-C or SIGTERM
    cancels the jobs in flight before the KeyboardInterrupt goes on (exit 130)."""
    from filelock import FileLock, Timeout

    from measure.lifetime import process_token

    started = time.perf_counter()
    runner = _Shown(folder, kind, max_concurrent, budget_s)
    token = process_token(os.getpid()) if kind == "local" else None
    before = signal.signal(signal.SIGTERM, _interrupt)
    if token:
        os.environ[RUNNER_ENV] = token  # each local job's environment is this process's, copied at submission
    try:
        with FileLock(str(runner.folder / "runner.lock"), timeout=0), runner.bar:
            try:
                runner.reconcile()
                if retry_failed:
                    runner.retry_failed()
                code = runner.run()
            except KeyboardInterrupt as exc:
                signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut the cancelling short
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                try:
                    gone = cancel_live(runner, f"reproduce was stopped ({exc or 'Ctrl-C'})")
                finally:
                    signal.signal(signal.SIGINT, signal.default_int_handler)
                say(
                    f"reproduce: stopped; {len(gone)} job(s) cancelled and ended; run the same command with "
                    f"--retry-failed to resume ({folder})"
                )
                raise
    except Timeout:
        raise ProbebookError(f"{folder}: another reproduce holds this folder (runner.lock)") from None
    finally:
        signal.signal(signal.SIGTERM, before)
        os.environ.pop(RUNNER_ENV, None)
    return code, time.perf_counter() - started


def write_specs(parts: list[CampaignPart]) -> None:
    """Write each campaign part's spec (the one its manifest froze) where its command names it; an existing file is
    left as it is (written by an earlier call: the same manifest, the same spec)."""
    import yaml

    for part in parts:
        if part.spec is None:
            continue
        path = Path(part.spec_path)
        if path.exists():
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(part.spec, sort_keys=True), encoding="utf-8")
        say(f"reproduce: wrote {path}: the spec campaign {part.name!r} ran with")


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
