"""The methods' own numbers, for the methodology page: ``constant(name)`` (ARCHITECTURE.md §Pages).

Each entry reads the constant the code uses, where the code keeps it (``measure.constants`` for the
timing rules, ``render.derive`` for fits and sweeps), so the page cannot drift from what runs. A
constant is no measurement: its Quantity cites no evidence and its derivation names where it lives.
"""

from __future__ import annotations

from measure import constants as timing
from measure.errors import ProbebookError
from render.derive import fit, fit_numerics, intervals, lossmem, paired, replication
from render.numbers.quantity import Quantity

# name -> (value, unit, format, where the code keeps it)
CONSTANTS: dict[str, tuple[float, str, str, str]] = {
    "cv_threshold": (timing.CV_THRESHOLD, "", ".0%", "measure.constants.CV_THRESHOLD"),
    "overhead_limit": (timing.OVERHEAD_LIMIT, "", ".0%", "measure.constants.OVERHEAD_LIMIT"),
    "extra_windows": (timing.EXTRA_WINDOWS, "", "d", "measure.constants.EXTRA_WINDOWS"),
    "warmup": (timing.WARMUP, "", "d", "measure.constants.WARMUP (default of --warmup)"),
    "windows": (timing.WINDOWS, "", "d", "measure.constants.WINDOWS (default of --windows)"),
    "iters": (timing.ITERS, "", "d", "measure.constants.ITERS (default of --iters)"),
    "ci_level": (fit.CI_LEVEL, "", ".0%", "render.derive.fit.CI_LEVEL"),
    "bootstrap": (fit.BOOTSTRAP, "", "d", "render.derive.fit.BOOTSTRAP"),
    "term_alpha": (fit_numerics.ALPHA, "", ".0%", "render.derive.fit_numerics.ALPHA"),
    "lack_of_fit_alpha": (fit.ALPHA_LACK_OF_FIT, "", ".0%", "render.derive.fit.ALPHA_LACK_OF_FIT"),
    "outlier_factor": (fit_numerics.OUTLIER_FACTOR, "", "g", "render.derive.fit_numerics.OUTLIER_FACTOR"),
    "outlier_share": (fit_numerics.OUTLIER_SHARE, "", ".0%", "render.derive.fit_numerics.OUTLIER_SHARE"),
    "outlier_most": (fit_numerics.OUTLIER_MOST, "", ".0%", "render.derive.fit_numerics.OUTLIER_MOST"),
    "collapse": (lossmem.COLLAPSE, "", ".0%", "render.derive.lossmem.COLLAPSE"),
    "paired_alpha": (paired.ALPHA, "", ".0%", "render.derive.paired.ALPHA"),
    "paired_resamples": (intervals.RESAMPLES, "", ",d", "render.derive.intervals.RESAMPLES"),
    "median_coverage_5": (intervals.median_coverage(5), "", ".2%", "render.derive.intervals.median_coverage(5)"),
    "median_coverage_7": (intervals.median_coverage(7), "", ".2%", "render.derive.intervals.median_coverage(7)"),
    "median_coverage_9": (intervals.median_coverage(9), "", ".2%", "render.derive.intervals.median_coverage(9)"),
    "band_step": (replication.DELTA["step"], "", ".0%", "render.derive.replication.DELTA['step']"),
    "band_kernel": (replication.DELTA["kernel"], "", ".0%", "render.derive.replication.DELTA['kernel']"),
    "own_sessions": (replication.OWN_SESSIONS, "", "d", "render.derive.replication.OWN_SESSIONS"),
    "lease_minutes": (replication.LEASE_S / 60, "", "g", "render.derive.replication.LEASE_S (in minutes)"),
    "throttle": (replication.THROTTLE, "", ".0%", "render.derive.replication.THROTTLE"),
    "sag": (replication.SAG, "", ".0%", "render.derive.replication.SAG"),
    "host_bound": (replication.HOST_BOUND, "", ".0%", "render.derive.replication.HOST_BOUND"),
}


def constant(name: str) -> Quantity:
    """The constant ``name`` of ``CONSTANTS`` as a Quantity with no evidence, its derivation naming its home."""
    if name not in CONSTANTS:
        raise ProbebookError(f"constant({name!r}): no such constant (known: {', '.join(sorted(CONSTANTS))})")
    value, unit, fmt, home = CONSTANTS[name]
    return Quantity(
        value=value, unit=unit, fmt=fmt, derivation=f"the code's constant {home}", key=f"constant({name})", exact=True
    )
