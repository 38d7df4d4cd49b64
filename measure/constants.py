"""The timing rules' numbers, in one torch-free module that render may import (ARCHITECTURE.md §Invariants, §Timing).

The probes time with them (``measure.timing``), render's derivations judge stability with them
(``render.derive.lossmem``), and the methodology page prints them through the ``constant()`` page
function, so the page and the code cannot disagree.
"""

CV_THRESHOLD = 0.05
"""A point whose windows' coefficient of variation is above this gets extra windows once, then is flagged
unstable (issue 4: "A CV above 5% adds five more windows")."""
EXTRA_WINDOWS = 5
"""Windows (or interleaved rounds) added once when the CV is above ``CV_THRESHOLD``."""
WARMUP = 3
"""Untimed calls before timing each point or arm, by default."""
WINDOWS = 5
"""Timed windows (or interleaved rounds) per point, by default; the point's value is their median."""
ITERS = 3
"""Calls per timed window, by default; a window's time is their mean."""
