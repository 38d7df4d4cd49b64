"""``python -m measure <probe> [options]``: the probes of ``probebook measure``, sharing ``measure.cli``."""

import sys

from measure.cli import main

sys.exit(main())
