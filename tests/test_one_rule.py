"""One rule per reported quantity (issue 40): ``campaign status`` takes a curve's largest batch by
``batch_summary``'s rule; ``fit`` and ``derive fit`` give the same intervals; ``derive --json`` carries each
number's interval."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import REPO, run_cli

from measure.evidence.envelope import Evidence
from measure.evidence.store import Store
from probebook.campaign.report import largest_batch
from render.derive.batchsweep import summarize

SITE = REPO / "tests" / "fixtures" / "site" / "archive"
SWEEP = "sha256:1c7ccb387242"  # the site fixture's step-scaling sweep


def _row(batch: int, tok_s: float | None, status: str = "ok") -> dict:
    return {
        "model": "tiny", "params": 1000, "context": 32, "batch": batch, "status": status, "tok_s": tok_s,
        "peak_bytes": 1000 * batch if status == "ok" else None, "cv": 0.01, "windows": 5,
    }  # fmt: skip


def test_campaign_status_takes_batch_summary_s_largest_batch(tmp_path):
    # batch 2's throughput collapses below half of batch 1's: batch_summary's curve ends at 1, though 4 ran ok
    rows = [_row(1, 1000.0), _row(2, 400.0), _row(4, 900.0), _row(8, None, "oom")]
    store = Store(tmp_path / "archive")
    done = []
    for row in rows:
        ident = store.put(Evidence(probe="batch-sweep", probe_version=3, params={}, data={"samples": [row]}))
        done.append({"state": row["status"], "evidence": ident})
    (summary,) = summarize(rows)
    assert largest_batch(store, done) == summary.largest_fitting_batch == 1
    assert largest_batch(store, done[:1]) == 1 and largest_batch(store, []) is None


@pytest.fixture(scope="module")
def derived() -> dict[str, Any]:
    """``derive fit SWEEP --json``, run once as a real process for both tests that read what it printed (each ran
    the same command, about 1 s of CPU a process)."""
    got: dict[str, Any] = json.loads(run_cli("--archive", str(SITE), "derive", "fit", SWEEP, "--json").stdout)
    return got


def test_fit_and_derive_fit_give_the_same_intervals(cli_here, derived):
    # fit in this process (conftest.run_cli_here): its real process's exit status and output are test_derive_cli's
    fit = json.loads(cli_here("--archive", str(SITE), "fit", "step-scaling", SWEEP, "--json").stdout)
    pairs = {"c_s": "c", "a_s_per_token": "a", "b_s_per_token2": "b"}
    for left, right in pairs.items():
        assert fit[left] == derived[right]["value"]
        assert fit["ci"]["intervals"][left] == derived[right]["interval"], left
        low, high = derived[right]["interval"]["low"], derived[right]["interval"]["high"]
        assert low < derived[right]["value"] < high


def test_derive_json_carries_the_interval_or_says_why_none(derived):
    got = derived
    for name in ("c", "max_residual"):
        assert {"value", "unit", "interval", "basis", "derivation", "evidence"} == set(got[name])
    assert set(got["c"]["interval"]) == {"low", "high"} and got["c"]["basis"] is None
    assert got["max_residual"]["interval"] is None and got["max_residual"]["basis"] == "observed"
