"""Throughput from a step's size and time."""

from __future__ import annotations


def tokens_per_second(tokens_per_step: float, step_s: float) -> float:
    """Throughput in tokens/s of a step that processes ``tokens_per_step`` tokens in ``step_s`` seconds."""
    return tokens_per_step / step_s
