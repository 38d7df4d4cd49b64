"""Simulated measurements with known within- and between-session effects, for the coverage tests (issue 38).

A configuration's true step time is ``mu``; each session (a fresh process on a new lease) moves it by a factor
``exp(b)``, ``b ~ N(0, between)``; each window moves it again by ``exp(w)``, ``w ~ N(0, within)``. A session's
figure is the median of its windows, as a probe reports it. Fixed seeds: the tests' figures are the same at
every run.
"""

from __future__ import annotations

import numpy as np


def sessions(rng: np.random.Generator, count: int, windows: int, between: float, within: float) -> np.ndarray:
    """``count`` sessions' figures (medians of ``windows`` windows) of one configuration whose true time is 1."""
    shift = rng.normal(0.0, between, size=(count, 1))
    noise = rng.normal(0.0, within, size=(count, windows))
    return np.median(np.exp(shift + noise), axis=1)


def archive(
    rng: np.random.Generator, configurations: int, per: int, windows: int, between: float, within: float
) -> list[list[float]]:
    """An archive's repeated configurations: ``configurations`` groups of ``per`` session figures each, every
    configuration with its own true time (the spread is relative, so the scale must not matter)."""
    scales = np.exp(rng.uniform(-3.0, 1.0, size=configurations))
    return [list(scale * sessions(rng, per, windows, between, within)) for scale in scales]


def paired_rounds(rng: np.random.Generator, rounds: int, drift: float, within: float, effect: float) -> np.ndarray:
    """Per-round savings ``1 − arm/baseline`` of interleaved arms whose true saving is ``effect``: both arms share
    each round's drift, and each window has its own noise."""
    shared = rng.normal(0.0, drift, size=rounds)
    base = np.exp(shared + rng.normal(0.0, within, size=rounds))
    arm = (1.0 - effect) * np.exp(shared + rng.normal(0.0, within, size=rounds))
    return np.asarray(1.0 - arm / base)
