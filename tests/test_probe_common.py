"""measure/probes/common.py's shared pieces: one BudgetSpent for every probe that stops at its --budget-s."""

from __future__ import annotations

import importlib
import importlib.util

from measure.probes import common


def test_budget_spent_is_defined_once_and_used_by_every_budgeted_probe():
    for name in ("batch_sweep", "loss_memory", "hvp"):
        module = importlib.import_module(f"measure.probes.{name}")
        assert module.BudgetSpent is common.BudgetSpent, name
        assert "class BudgetSpent" not in importlib.util.find_spec(module.__name__).loader.get_source(module.__name__)
    assert issubclass(common.BudgetSpent, RuntimeError)  # execute() stores a RuntimeError as partial evidence
