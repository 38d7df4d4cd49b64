"""A probe point's child, spawned ahead and waiting for its point, ends quietly on Ctrl-C: exit 130, no traceback."""

from __future__ import annotations

import signal
import subprocess
import sys

CHILD = (
    "from measure.run.isolate import serve; "
    "serve(lambda spec, facts: {}, ['--point', '-'], prepare=lambda: print('ready', flush=True))"
)


def test_a_waiting_child_stopped_by_sigint_exits_130_without_a_traceback() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # SIGINT at its default, as a foreground command has it (a background shell job inherits it ignored)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "ready"  # printed by prepare(), inside serve()
    child.send_signal(signal.SIGINT)
    _out, err = child.communicate(timeout=30)
    assert child.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
