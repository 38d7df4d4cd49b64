"""batch-sweep evidence from before it took optimizer settings (versions 1 and 2) read as the settings it ran with
(measure.evidence.reading): the workload's own betas and weight decay and no clip, so its configuration key is that of
a version 3 run with the defaults."""

from __future__ import annotations

from measure.evidence.configkey import config_key
from measure.evidence.reading import for_reading

BASE = {"preset": "20m", "contexts": [512], "dtype": "bf16", "device": "cuda", "windows": 5}
MACHINE = {"gpu": {"name": "NVIDIA H200"}}


def _doc(version: int, **params: object) -> dict[str, object]:
    return {
        "probe": "batch-sweep",
        "probe_version": version,
        "machine": MACHINE,
        "params": {**BASE, **params},
        "data": {},
    }


def test_a_version_2_run_states_the_defaults_it_ran_with_and_joins_version_3s_series() -> None:
    old = for_reading(_doc(2))
    assert old["params"] == {**BASE, "clip": 0.0, "beta1": None, "beta2": None, "weight_decay": None}
    new = _doc(3, clip=0.0, beta1=None, beta2=None, weight_decay=None)
    assert config_key(old).ident == config_key(for_reading(new)).ident


def test_a_version_3_run_with_other_settings_is_its_own_series_and_is_read_as_stored() -> None:
    new = _doc(3, clip=1.0, beta1=0.9, beta2=0.95, weight_decay=0.1)
    assert for_reading(new) is new
    assert config_key(new).ident != config_key(for_reading(_doc(2))).ident
    other = {**_doc(2), "probe": "step-scaling"}
    assert for_reading(other) is other  # other probes: untouched
