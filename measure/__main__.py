"""``python -m measure <probe> [options]``: the probes of ``probebook measure``, sharing ``measure.cli``."""

import sys

from measure.cli import main
from measure.errors import EXIT, hard_exit

code = main()
if code == EXIT["interrupted"]:
    # Interrupted (Ctrl-C, or SIGTERM turned into KeyboardInterrupt): the partial evidence is stored and fsynced and
    # its id printed, so leave without the interpreter's teardown. An interrupt raised inside a torch profiler
    # region can leave torch's callbacks half removed, and its teardown then crashed the process (SIGSEGV, exit -11
    # instead of 130, after "record_function.cpp: Requested callback is not found"; seen in CI's SIGTERM test).
    hard_exit(code)
sys.exit(code)
