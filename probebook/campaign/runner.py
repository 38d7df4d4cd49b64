"""``campaign run``: submit each curve's next point, watch the jobs, write receipts, resume and retry.

Along a curve the batch doubles one point at a time (the next point is submitted only after the
previous one fit); independent curves run in parallel up to ``max_concurrent`` jobs. A manifest
that says ``parallel`` (a grid, whose every point is a curve of its own; a follow-up) submits any
point not yet run. Resume first
settles every receipt whose job may exist (by the job id in the receipt, or for an unresolved
submission by the ids submitit left in the attempt folder and, on Slurm, by job name), then
submits; a point with a job that ran or runs is never submitted again. A failed point blocks its
curve until ``--retry-failed``, which submits that point alone as a new attempt.
"""

from __future__ import annotations

import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from measure.errors import EXIT, ProbebookError
from probebook.campaign import executors, receipts, slurm
from probebook.campaign.plan import SOURCE, load_manifest
from probebook.campaign.spec import Executor, Slurm

POLL_S = 0.2  # how often the loop looks for result files (a stat each); Slurm is asked every poll_s
EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)\b.*:")
JOBS: dict[str | None, tuple[str, str]] = {
    None: ("probebook.campaign.job", "run_point"),  # a batch sweep's point
    "grid": ("probebook.campaign.job", "run_probe"),  # one point of any probe's grid
    "optimizer-timing": ("probebook.campaign.followup", "run_pair"),
    "reproduction": ("probebook.reproduce.job", "run_one"),  # one cited run of a record (``probebook reproduce``)
}
"""A manifest's ``data.kind`` -> the module and function each of its points' jobs runs."""
RESULT_GRACE_S = 15.0  # a job Slurm calls COMPLETED may show its result file this much later (a network file system)


def _settings(manifest: dict[str, Any], max_concurrent: int | None) -> Executor:
    raw = dict(manifest["params"]["executor"])
    raw["slurm"] = Slurm(**raw["slurm"])
    if max_concurrent is not None:
        if max_concurrent < 1:
            raise ProbebookError(f"--max-concurrent must be >= 1, got {max_concurrent}")
        raw["max_concurrent"] = max_concurrent
    return Executor(**raw)


def device(point: dict[str, Any]) -> str:
    """The device a point's job runs on: its config's, or the CPU for a probe that takes no ``--device``
    (``padding`` reads a corpus on the CPU; a reproduction of it has no device to ask the executor for)."""
    return str(point["config"].get("device") or "cpu")


def _setup(point: dict[str, Any], source: Path | None) -> list[str]:
    """Shell lines run before the job's process starts: the frozen source first on the import path, and
    the CPU allocator settings a CPU memory limit needs."""
    import shlex

    from measure import peakmem

    # `python -m` puts the working directory first on the import path: a job started in the working tree
    # would import it, not the snapshot, so it starts in the snapshot
    quoted = shlex.quote(str(source)) if source else ""
    lines = [f"cd {quoted}", f"export PYTHONPATH={quoted}${{PYTHONPATH:+:$PYTHONPATH}}"] if source else []
    if device(point) != "cpu" or point["config"].get("cpu_memory_limit_bytes") is None:
        return lines
    return lines + [f"export {k}={v}" for k, v in sorted(peakmem.cpu_env(limited=True).items())]


def _cause(text: str) -> str | None:
    """The line of a job's error that says why: the last exception line of its trace, not submitit's log paths."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    causes = [ln for ln in lines if EXCEPTION_LINE.match(ln)]
    picked = causes or lines
    return picked[-1][:500] if picked else None


class Runner:
    """One run (or resume) of a campaign folder."""

    def __init__(self, folder: Path, kind: str, max_concurrent: int | None = None, budget_s: float | None = None):
        if kind not in executors.KINDS:
            raise ProbebookError(f"--executor must be one of {', '.join(executors.KINDS)}, got {kind!r}")
        self.folder = Path(folder).resolve()
        self.kind = kind
        self.manifest_id, manifest = load_manifest(self.folder)
        self.name = manifest["params"]["name"]
        self.settings = _settings(manifest, max_concurrent)
        self.points = {p["key"]: p for p in manifest["data"]["points"]}
        # a manifest that froze a snapshot: every job imports it (one planned before snapshots runs the tree)
        frozen = "measure_source_sha256" in manifest["data"]
        self.source = self.folder / SOURCE if frozen else None
        if self.source is not None and not (self.source / "measure").is_dir():
            raise ProbebookError(f"{self.source}: the campaign's frozen source is missing; plan the campaign again")
        self.curves = {c["curve"]: c["points"] for c in manifest["data"]["curves"]}
        # a follow-up's points all fit once already: a curve's points need not wait for one another
        self.parallel = bool(manifest["data"].get("parallel"))
        self.job = JOBS.get(manifest["data"].get("kind"), JOBS[None])  # what each point's job runs
        self.unit = "point" if manifest["data"].get("kind") == "grid" else "curve"  # what the closing lines count
        self.receipts = receipts.load_all(self.folder)
        self.budget_s = budget_s
        self.live: dict[str, Any] = {}  # point key -> submitit job handle
        self.info: dict[str, slurm.JobInfo] = {}  # point key -> its live Slurm job as the last sacct call saw it
        self.ended_seen: dict[str, float] = {}  # point key -> when sacct first said its job ended
        self.polled = 0.0  # when sacct was last asked
        self.sacct_calls = [0]
        self.tested = False  # whether sbatch --test-only accepted this run's resource request
        # where and when this runner call submits: a local job id is a pid of that machine's boot, and
        # the distinct start times count the runner calls (the first run and its resumes)
        self.machine = {**executors.runner_machine(), "run_started_unix": time.time()}
        self.log: list[str] = []

    # -- submissions ---------------------------------------------------------------------
    def _attempt_folder(self, key: str, n: int) -> Path:
        return self.folder / "jobs" / key / f"a{n}"

    def _params(self, key: str, n: int) -> dict[str, Any]:
        name = executors.job_name(self.name, self.manifest_id, key, n)
        point = self.points[key]
        return executors.parameters(self.kind, self.settings, name, _setup(point, self.source), device(point))

    def _submit(self, key: str) -> None:
        import importlib

        module, name = self.job
        job = getattr(importlib.import_module(module), name)
        point = self.points[key]
        receipt = self.receipts.get(key) or receipts.new(point)
        n = len(receipt["attempts"]) + 1
        folder = self._attempt_folder(key, n)
        attempt = {
            "n": n,
            "executor": self.kind,
            "job_id": None,
            **self.machine,
            "submitted_unix": time.time(),
            "state": "submitting",
        }
        receipt.update({"state": "submitting", "retry": False, "evidence": None, "result": None})
        receipt["attempts"].append(attempt)
        receipts.write(self.folder, receipt)  # the intent is on disk before the scheduler hears of it
        self.receipts[key] = receipt
        params = self._params(key, n)
        if self.kind == "slurm" and not self.tested:
            self._test_only(key, folder, params)
        executor = executors.make(self.kind, folder, params)
        lock = self.settings.gpu_lock and self.kind == "local"
        try:
            handle = executor.submit(job, point, str(self.folder), lock)
        except Exception as exc:  # sbatch refused the job (its message is the last line) or could not run
            self._unsubmitted(key, attempt)
            lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip() and not ln.startswith("Command ")]
            raise ProbebookError(f"{key}: the job was not submitted: {lines[-1] if lines else exc!r}") from None
        attempt.update({"job_id": str(handle.job_id), "state": "submitted"})
        receipt["state"] = "submitted"
        receipts.write(self.folder, receipt)
        self.live[key] = handle
        self._say(f"{key}: submitted as job {handle.job_id} (attempt {n})")

    def _test_only(self, key: str, folder: Path, params: dict[str, Any]) -> None:
        """Refuse (one line) a resource request Slurm cannot meet before any job goes out: it would pend forever."""
        with tempfile.TemporaryDirectory() as tmp:
            script = Path(tmp) / "submission.sh"
            script.write_text(executors.submission_text("slurm", folder, params), encoding="utf-8")
            try:
                refused = slurm.test_only(script)
            except FileNotFoundError:
                refused = "no sbatch on PATH: run the Slurm executor where Slurm's commands are"
        if refused:
            self._unsubmitted(key, self.receipts[key]["attempts"][-1])
            raise ProbebookError(
                f"{self.folder}: Slurm would not run this campaign's jobs ({refused}); "
                "fix executor.slurm in the spec (partition, gpus, cpus, mem_gb, time_min) and plan again"
            )
        self.tested = True

    def _unsubmitted(self, key: str, attempt: dict[str, Any]) -> None:
        """Take back an attempt that never reached the scheduler: its receipt is as it was before."""
        receipt = self.receipts[key]
        receipt["attempts"].remove(attempt)
        if receipt["attempts"]:
            receipt.update({"state": receipt["attempts"][-1]["state"], "retry": True})
            receipts.write(self.folder, receipt)
        else:
            receipts.path(self.folder, key).unlink(missing_ok=True)
            del self.receipts[key]

    def _say(self, text: str) -> None:
        self.log.append(text)
        print(f"probebook: campaign: {text}", file=sys.stderr, flush=True)

    # -- outcomes ------------------------------------------------------------------------
    def _settle(self, key: str, handle: Any, state: str | None = None, error: str | None = None) -> None:
        """Record how a point's job ended (its result, its failure, a timeout, or its disappearance)."""
        receipt = self.receipts[key]
        attempt = receipt["attempts"][-1]
        info = self.info.pop(key, None)
        self.ended_seen.pop(key, None)
        result = None
        if state is None and info is not None and info.ended and not handle.paths.result_pickle.exists():
            # ended without a result: Slurm's State is the cause (submitit would wait 15 s, then say less)
            state, error = "failed", f"Slurm: {info.state} (exit code {info.exit_code})"
        if state is None:
            try:
                result = handle.result()
            except Exception as exc:  # the job raised or died: its error, last line first
                error = _cause(str(exc)) or type(exc).__name__
            if result is None:
                state = "failed"
            else:
                state = result["status"] if result["status"] in receipts.MEASURED else "failed"
                error = result.get("error") if state == "failed" else None
        # the job's own start and end (Slurm's, else the job's): queue time and a late look are not run time
        now = time.time()
        res = result or {}
        started = (info.start_unix if info else None) or res.get("job_started_unix") or attempt["submitted_unix"]
        ended = (info.end_unix if info and info.ended else None) or res.get("job_ended_unix") or now
        attempt.update(
            {
                "state": state,
                "started_unix": started,
                "ended_unix": max(ended, started),
                "queued_s": max(0.0, started - attempt["submitted_unix"]),
                "wall_s": max(0.0, ended - started),
                "error": error,
            }
        )
        if info is not None and info.ended:  # a result can arrive before sacct says the job ended: not waited for
            attempt["slurm_state"] = info.state
        if result is not None:
            attempt["evidence"] = result["evidence"]
            attempt["result"] = result
        receipt.update({"state": state, "evidence": attempt.get("evidence"), "result": result})
        receipt["wall_s"] = attempt["wall_s"]
        receipts.write(self.folder, receipt)
        self.live.pop(key, None)
        self._say(f"{key}: {state}" + (f" ({error})" if error else ""))

    def reconcile(self) -> None:
        """Before any submission: find out what became of every job a receipt says may exist."""
        for key, receipt in sorted(self.receipts.items()):
            if receipt["state"] not in receipts.IN_FLIGHT:
                continue
            attempt = receipt["attempts"][-1]
            folder = self._attempt_folder(key, attempt["n"])
            ids = [attempt["job_id"]] if attempt.get("job_id") else executors.submitted_ids(folder)
            if not ids and attempt["executor"] == "slurm":
                name = executors.job_name(self.name, self.manifest_id, key, attempt["n"])
                ids = slurm.by_name(name, attempt["submitted_unix"])
                for renamed in executors.adopt_submission(folder, ids[0]) if len(ids) == 1 else []:
                    self._say(f"{key}: job {ids[0]} found by name; its file {renamed} now carries the id")
            if not ids:  # the runner stopped before the scheduler heard of it: nothing ran
                receipt["attempts"].pop()
                if receipt["attempts"]:
                    receipt.update({"state": receipt["attempts"][-1]["state"], "retry": True})
                    receipts.write(self.folder, receipt)
                else:
                    receipts.path(self.folder, key).unlink()
                    del self.receipts[key]
                self._say(f"{key}: attempt {attempt['n']} was never submitted; it will be")
                continue
            if len(ids) > 1:
                raise ProbebookError(f"{key}: attempt {attempt['n']} has several jobs {ids}; settle it by hand")
            attempt.update({"job_id": ids[0], "state": "submitted"})
            receipt["state"] = "submitted"
            receipts.write(self.folder, receipt)
            handle = executors.job(attempt["executor"], folder, ids[0])
            if attempt["executor"] == "slurm":
                self.live[key] = handle  # the loop's first sacct call says how it stands
                self._say(f"{key}: job {ids[0]} from an earlier run is adopted")
                continue
            done = executors.finished_local(handle)
            if done is None:
                self._settle(key, handle, "lost", "the job's process is gone and left no result")
            else:
                self.live[key] = handle  # finished or running: the loop collects it
                self._say(f"{key}: job {ids[0]} from an earlier run is {'done' if done else 'running'}")

    def retry_failed(self) -> list[str]:
        """Mark every failed point that blocks a curve for one more attempt."""
        marked = []
        for keys in self.curves.values():
            state, key = receipts.curve_state(keys, self.receipts)
            if state == "blocked" and key is not None:
                self.receipts[key]["retry"] = True
                receipts.write(self.folder, self.receipts[key])
                marked.append(key)
        return marked

    # -- the loop ------------------------------------------------------------------------
    def ready(self) -> list[str]:
        """Next points of the curves that can advance now, curve order."""
        out = []
        for keys in self.curves.values():
            state, key = receipts.curve_state(keys, self.receipts)
            failed = any(self.receipts.get(k, {}).get("state") in receipts.FAILED for k in keys)
            if self.parallel and state in ("ready", "running") and not failed:  # every point not yet run
                out += [
                    k for k in keys if k not in self.live and (k not in self.receipts or self.receipts[k].get("retry"))
                ]
            elif state == "ready" and key is not None and key not in self.live:
                out.append(key)
        return out

    def run(self) -> int:
        """Run until every curve is done or blocked (0 when all done, 1 when some are blocked, 3 at the budget)."""
        started = time.perf_counter()
        while True:
            spent = self.budget_s is not None and time.perf_counter() - started > self.budget_s
            if not spent:
                for key in self.ready():
                    if len(self.live) >= self.settings.max_concurrent:
                        break
                    self._submit(key)
            if not self.live:
                break
            time.sleep(POLL_S)
            self._poll_slurm()
            now = time.time()
            for key, handle in list(self.live.items()):
                attempt = self.receipts[key]["attempts"][-1]
                kind = attempt["executor"]  # a job adopted on resume keeps the executor it was submitted with
                done, running_since = self._state(key, kind, handle, now)
                if done:
                    self._settle(key, handle)
                elif done is None:
                    self._settle(key, handle, "lost", "the job's process is gone and left no result")
                elif running_since is not None and now - running_since > self.settings.point_timeout_s:
                    executors.cancel(kind, handle)  # the job's own limit is grace_s later: the receipt comes first
                    self._settle(key, handle, "timeout", f"cancelled after {self.settings.point_timeout_s:g} s")
        states = [receipts.curve_state(keys, self.receipts)[0] for keys in self.curves.values()]
        if any(s == "ready" for s in states):
            left = sum(s == "ready" for s in states)
            print(
                f"probebook: campaign: stopped at the {self.budget_s:g} s budget with {left} {self.unit}(s) to go; "
                f"resume with: probebook campaign run {self.folder} --resume",
                file=sys.stderr,
            )
            return EXIT["budget spent"]
        blocked = [c for c, keys in self.curves.items() if receipts.curve_state(keys, self.receipts)[0] == "blocked"]
        if blocked:
            print(
                f"probebook: campaign: {len(blocked)} {self.unit}(s) blocked by a failed point ({', '.join(blocked)}); "
                f"see `probebook campaign status {self.folder}`, then run --resume --retry-failed",
                file=sys.stderr,
            )
            return 1
        return 0

    def _poll_slurm(self) -> None:
        """One batched sacct call for every live Slurm job, at most once per ``poll_s``."""
        live = {k: h for k, h in self.live.items() if self.receipts[k]["attempts"][-1]["executor"] == "slurm"}
        if not live or time.time() - self.polled < self.settings.poll_s:
            return
        since = min(self.receipts[k]["attempts"][-1]["submitted_unix"] for k in live)
        answer = slurm.query([str(h.job_id) for h in live.values()], since, self.sacct_calls)
        self.polled = time.time()
        for key, handle in live.items():
            if str(handle.job_id) in answer:
                self.info[key] = answer[str(handle.job_id)]
                if self.info[key].ended:
                    self.ended_seen.setdefault(key, self.polled)

    def _state(self, key: str, kind: str, handle: Any, now: float) -> tuple[bool | None, float | None]:
        """Whether a live job ended (None: gone without a trace), and since when it runs (the watchdog's zero).

        A Slurm job's watchdog starts when the job does: time waiting in the queue is not run time.
        A job Slurm calls COMPLETED is given ``RESULT_GRACE_S`` for its result file to appear.
        """
        if kind == "local":
            return executors.finished_local(handle), self.receipts[key]["attempts"][-1]["submitted_unix"]
        if handle.paths.result_pickle.exists():
            return True, None
        info = self.info.get(key)
        if info is None:
            return False, None
        if info.ended:
            completed = info.state.startswith("COMPLETED")
            return (not completed or now - self.ended_seen.get(key, now) > RESULT_GRACE_S), None
        return False, info.start_unix

    def dry_run(self) -> str:
        """The exact submission of every point that would be submitted now; touches nothing."""
        out = []
        for key in self.ready()[: self.settings.max_concurrent]:
            n = len((self.receipts.get(key) or {"attempts": []})["attempts"]) + 1
            folder = self._attempt_folder(key, n)
            out.append(f"# point {key}, attempt {n}, executor {self.kind}, folder {folder}")
            if self.points[key].get("command"):  # a grid's point: the probe run its job makes
                out.append(f"# runs: {self.points[key]['command']}")
            text = executors.submission_text(self.kind, folder, self._params(key, n))
            if self.kind == "slurm":  # Slurm judges the request as it would the real one
                try:
                    with tempfile.TemporaryDirectory() as tmp:
                        (Path(tmp) / "submission.sh").write_text(text, encoding="utf-8")
                        refused = slurm.test_only(Path(tmp) / "submission.sh")
                except FileNotFoundError:  # no Slurm here: the scripts are still worth reading
                    out.append("# sbatch --test-only: not run (no sbatch on PATH)")
                    refused = None
                if refused:
                    raise ProbebookError(
                        f"{self.folder}: point {key}: sbatch --test-only refused the job ({refused}); "
                        "fix executor.slurm in the spec (partition, gpus, cpus, mem_gb, time_min) and plan again"
                    )
                if not out[-1].startswith("# sbatch --test-only"):
                    out.append("# sbatch --test-only: accepted")
            out.append(text)
        return "\n".join(out) if out else "# nothing to submit: every curve is done, blocked or running"


def run(
    folder: Path,
    kind: str = "local",
    max_concurrent: int | None = None,
    dry_run: bool = False,
    resume: bool = False,
    retry_failed: bool = False,
    budget_s: float | None = None,
) -> int:
    """``campaign run``; see the module docstring."""
    from filelock import FileLock, Timeout

    runner = Runner(folder, kind, max_concurrent, budget_s)
    if dry_run:
        print(runner.dry_run())
        return 0
    if runner.receipts and not resume:
        raise ProbebookError(f"{folder}: this campaign has already run; add --resume to continue it")
    if retry_failed and not resume:
        raise ProbebookError("--retry-failed continues a campaign: add --resume")
    try:
        with FileLock(str(runner.folder / "runner.lock"), timeout=0):
            runner.reconcile()
            if retry_failed:
                marked = runner.retry_failed()
                runner._say(f"retrying {', '.join(marked) or 'nothing: no curve is blocked'}")
            return runner.run()
    except Timeout:
        raise ProbebookError(f"{folder}: another runner holds this campaign (runner.lock)") from None
