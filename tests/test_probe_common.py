"""measure/probes/common.py's shared pieces: one BudgetSpent for every probe that stops at its --budget-s, and
the optimizer settings (OptimizerFields) the optimizer and batch-sweep probes declare once and apply the same way."""

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


def test_the_optimizer_settings_are_declared_once_and_both_probes_take_them():
    import dataclasses

    from measure.probes import batch_sweep, optimizer

    names = {f.name for f in dataclasses.fields(common.OptimizerFields)}
    assert names == {"clip", "beta1", "beta2", "weight_decay"}
    for module in (batch_sweep, optimizer):
        assert issubclass(module.Config, common.OptimizerFields)
        assert names <= {f.name for f in dataclasses.fields(module.Config)}
        assert "def apply_hyperparameters" not in importlib.util.find_spec(module.__name__).loader.get_source(
            module.__name__
        )
    # batch-sweep keeps its earlier step (no clip); the optimizer probe keeps the original protocol's clip
    assert (batch_sweep.Config().clip, optimizer.Config().clip) == (0.0, 1.0)


def test_a_bad_optimizer_setting_is_refused_in_one_line_naming_it():
    import re

    import pytest

    from measure.errors import ProbebookError
    from measure.probes import batch_sweep

    for kwargs, said in (
        ({"clip": -1.0}, "--clip must be >= 0"),
        ({"beta1": 1.0}, "--beta1 must be in [0, 1), got 1.0"),
        ({"weight_decay": -0.1}, "--weight-decay must be >= 0, got -0.1"),
    ):
        with pytest.raises(ProbebookError, match=re.escape(said)):
            batch_sweep.Config(**kwargs)


def test_configure_optimizer_sets_the_groups_and_clips_inside_the_step_before_the_update():
    import types

    import pytest

    torch = pytest.importorskip("torch")
    from measure.errors import ProbebookError
    from measure.probes import batch_sweep

    model = torch.nn.Linear(4, 4)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95), weight_decay=0.1)
    config = batch_sweep.Config(clip=0.5, beta1=0.8, weight_decay=0.01)
    settings = common.configure_optimizer(types.SimpleNamespace(optimizer=opt, name="linear"), config, "cpu")
    assert settings == {"betas": [0.8, 0.95], "weight_decay": 0.01, "lr": 1e-3, "clip_max_norm": 0.5}
    norms: list[float] = []  # registered after the clip's hook, so it sees what the update will use

    def seen(*_: object) -> None:
        norms.append(float(torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in model.parameters()]))))

    opt.register_step_pre_hook(seen)
    (model(torch.ones(2, 4)) * 1000).sum().backward()  # a gradient far above the clip
    opt.step()
    assert norms == [pytest.approx(0.5, rel=1e-4)]
    bare = types.SimpleNamespace(optimizer=None, name="no-optimizer")
    assert common.configure_optimizer(bare, batch_sweep.Config(), "cpu") is None
    with pytest.raises(ProbebookError, match="workload no-optimizer does not expose its optimizer"):
        common.configure_optimizer(bare, config, "cpu")
