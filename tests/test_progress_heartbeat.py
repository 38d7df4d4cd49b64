"""A long run off a terminal says it is still running (measure.progress: due, Progress's heartbeat), so a slow CPU
probe on a loaded machine never goes silent for minutes (issue 29)."""

from __future__ import annotations

import logging
import time

import pytest
from conftest import HANG_S

from measure.progress import HEARTBEAT_S, Progress, due


def test_a_heartbeat_is_due_once_its_interval_has_passed() -> None:
    assert HEARTBEAT_S == 30.0
    assert [due(now, 100.0, 30.0) for now in (100.0, 129.9, 130.0, 400.0)] == [False, False, True, True]


def test_a_silent_run_logs_that_it_is_still_running(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("measure.test-heartbeat")
    with caplog.at_level(logging.INFO, logger=logger.name):
        with Progress("step-scaling", logger, heartbeat_s=0.05) as progress:
            progress.step("S=32")
            deadline = time.monotonic() + HANG_S  # only against a hang: the line comes within about a second
            while not any("still running" in r.getMessage() for r in caplog.records) and time.monotonic() < deadline:
                time.sleep(0.02)
        beats = [r.getMessage() for r in caplog.records if "still running" in r.getMessage()]
        count = len(caplog.records)
        time.sleep(0.2)
        assert len(caplog.records) == count  # closed: the heartbeat stopped with the run
    assert beats and beats[0].startswith("step-scaling [") and beats[0].endswith("(1 step(s) done; last: S=32)")
