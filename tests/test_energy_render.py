"""Energy per step and per token on a page (issue 43): the pure derivation with literal joules (the mean of a
quantised counter's readings, the median of power readings), ``energy()`` rendered from an archived run given
windows' ``energy_j`` (its mean, the windows' interval, per token, the source named),
a run without energy showing a note, and the training's kWh beside GPU-hours in ``project()``."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from measure import utilisation
from measure.errors import ProbebookError
from render.derive import energy as energymod
from render.derive import intervals
from render.evidence.archive import load_evidence
from render.functions.derivations import Library
from render.functions.page import Page
from render.pages import sources
from render.pages.sandbox import PageState, make_environment, render_body

ARCHIVE = Path(__file__).resolve().parent.parent / "archive"
ROUNDS = "sha256:8db8990cc803afb5cb2677baad5bb1659a5af56875c11a81dbeb75ec1f41f15d"  # H200 250m ablation, 60 rounds
METERED = "sha256:" + "e1" * 32
BATCH = "sha256:63cc7d4ea38d69bc16d9c3a3a61dd2237108e09c1abe06c3d5bda0b9def85b42"  # fixture site's batch sweep
SITE_ARCHIVE = Path(__file__).resolve().parent / "fixtures" / "site" / "archive"
JOULES = [50.0, 52.0, 51.0, 49.0, 53.0]  # each baseline window's joules per step, in round order


def test_per_step_is_the_median_and_per_token_divides_by_the_tokens() -> None:
    got = energymod.per_step([3.0, 1.0, 2.0, 10.0], tokens_per_step=1000)
    assert (got.per_step_j, got.per_token_j, got.windows) == (2.5, 0.0025, 4)
    assert energymod.per_step([4.0]).per_token_j is None
    with pytest.raises(ProbebookError, match="no window recorded energy_j"):
        energymod.per_step([])
    with pytest.raises(ProbebookError, match="tokens_per_step must be positive"):
        energymod.per_step([1.0], tokens_per_step=0)


def test_counter_readings_take_the_mean_since_a_short_window_reads_whole_counter_steps() -> None:
    # one-call windows of 57 ms against a counter that changes every 100 ms: about half read no step at all
    readings = [0.0, 0.0, 0.0, 50.0, 52.0, 48.0]
    got = energymod.per_step(readings, tokens_per_step=1000, statistic=energymod.MEAN)
    assert (got.per_step_j, got.per_token_j, got.statistic) == (25.0, 0.025, "mean")
    assert energymod.per_step(readings).per_step_j == 24.0  # the median of the same readings
    assert energymod.statistic_for({"source": energymod.COUNTER, "update_interval_s": 0.1}) == energymod.MEAN
    assert energymod.statistic_for({"source": energymod.POWER}) == energymod.MEDIAN
    assert energymod.statistic_for(None) == energymod.MEDIAN


def test_the_mean_interval_is_the_percentile_bootstrap_and_equal_values_are_degenerate() -> None:
    assert intervals.mean_interval([2.0, 2.0, 2.0]) == (2.0, 2.0)
    assert intervals.mean_interval([1.0, 2.0]) is None  # below MIN_SAMPLES
    low, high = intervals.mean_interval([0.0, 0.0, 0.0, 50.0, 52.0, 48.0])  # type: ignore[misc]
    assert 0.0 <= low < 25.0 < high <= 52.0
    recipe = intervals.mean_recipe([0.0, 50.0, 52.0], "k")
    assert recipe == ("mean", (0.0, 50.0, 52.0), "k")
    assert intervals.draws(recipe, 1000).mean() == pytest.approx(34.0, rel=0.05)


def test_only_finite_non_negative_readings_count() -> None:
    rows = [{"energy_j": 1.5}, {"energy_j": None}, {}, {"energy_j": True}, {"energy_j": float("nan")}, {"energy_j": -1}]
    assert energymod.energy_values(rows) == [1.5]


def test_projected_energy_in_joules_and_kwh() -> None:
    assert energymod.projected_energy(5e9, 0.72) == {"joules": 3.6e9, "kwh": 1000.0}


def test_source_names_the_counter_and_its_interval_or_the_fallback() -> None:
    assert energymod.source_text({"source": energymod.COUNTER, "update_interval_s": 0.1}) == (
        "NVML's total-energy counter (mJ), which changed every 100 ms"
    )
    assert "trapezoid" in energymod.source_text({"source": energymod.POWER})
    assert energymod.source_text(None) == "source not recorded"
    # render repeats measure's names (it never imports the NVML module's readers): held equal here
    assert (energymod.COUNTER, energymod.POWER) == (utilisation.ENERGY_COUNTER, utilisation.ENERGY_POWER)


@pytest.fixture(scope="module")
def docs() -> dict[str, dict]:
    """The archive's documents and the fixture site's, plus the ablation run with literal joules on its baseline
    windows (not stored)."""
    found = {**load_evidence(ARCHIVE).docs, **load_evidence(SITE_ARCHIVE).docs}
    doc = copy.deepcopy(found[ROUNDS])
    baseline = [r for r in doc["data"]["samples"] if r["arm"] == "baseline"]
    for row, joules in zip(baseline, JOULES, strict=False):
        row["energy_j"] = joules
    doc["machine"]["energy"] = {"source": energymod.COUNTER, "unit_j": 0.001, "update_interval_s": 0.1}
    found[METERED] = doc
    return found


def shown(docs: dict[str, dict], aliases: dict[str, str], expression: str, tmp_path: Path) -> tuple[str, dict]:
    """The page's Markdown for ``{{ expression }}`` and its ledger rows (key -> Quantity)."""
    rel = "records/x/v1.md"
    page = sources.parse_page(tmp_path / rel, rel, "page", "{{ " + expression + " }}")
    state = PageState(rel)
    body = render_body(
        make_environment({rel: (page.body, str(tmp_path / rel))}), page, Page(Library(docs), aliases).context(), state
    )
    return str(body), dict(state.rows)


def test_energy_per_step_and_per_token_with_the_windows_interval(docs, tmp_path) -> None:
    _, rows = shown(docs, {"ev": METERED}, 'energy(ev, tokens_per_step=8192, arm="baseline").per_step', tmp_path)
    (step,) = rows.values()
    assert step.value == 51.0 and step.unit == "J" and step.evidence == (METERED,)
    assert step.uncertainty == intervals.mean_interval(JOULES)  # a counter's readings: the mean and its interval
    assert "NVML's total-energy counter" in step.derivation and "100 ms" in step.derivation
    assert step.derivation.startswith("mean joules per step of 5 windows")
    text, rows = shown(docs, {"ev": METERED}, 'energy(ev, tokens_per_step=8192, arm="baseline").per_token', tmp_path)
    (token,) = rows.values()
    assert token.value == pytest.approx(51.0 / 8192) and token.unit == "J/tok"
    low, high = intervals.mean_interval(JOULES)  # type: ignore[misc]
    assert token.uncertainty == pytest.approx((low / 8192, high / 8192))
    assert "mJ/tok" in text
    # tokens per step as an exact product of the run's own params, as a record writes it
    expr = 'energy(ev, value(ev, "params.batch") * value(ev, "params.seq_len"), arm="baseline").per_token'
    _, rows = shown(docs, {"ev": METERED}, expr, tmp_path)
    (from_params,) = rows.values()
    params = docs[METERED]["params"]
    assert from_params.value == pytest.approx(51.0 / (params["batch"] * params["seq_len"]))


def test_a_run_without_energy_says_why_in_place_of_each_number(docs, tmp_path) -> None:
    _, rows = shown(docs, {"ev": ROUNDS}, 'energy(ev, arm="baseline").per_step', tmp_path)
    (q,) = rows.values()
    assert q.value is None and "no energy_j" in (q.note or "")
    _, rows = shown(docs, {"ev": METERED}, 'energy(ev, arm="baseline").per_token', tmp_path)
    (q,) = rows.values()
    assert q.value is None and "tokens_per_step" in (q.note or "")  # the rows record no tokens per step


def test_projection_energy_beside_gpu_hours(docs, tmp_path) -> None:
    per_token = 'energy(e, tokens_per_step=8192, arm="baseline").per_token'
    call = f'project(batch_summary(b).fastest_tok_s, "250M", joules_per_token={per_token})'
    _, rows = shown(docs, {"e": METERED, "b": BATCH}, f"{call}.energy", tmp_path)
    (kwh,) = rows.values()
    tokens = 20 * 250e6
    assert kwh.value == pytest.approx(tokens * 51.0 / 8192 / 3.6e6) and kwh.unit == "kWh"
    assert set(kwh.evidence) == {METERED, BATCH}
    low, high = intervals.mean_interval(JOULES)  # type: ignore[misc]
    assert kwh.uncertainty == pytest.approx((tokens * low / 8192 / 3.6e6, tokens * high / 8192 / 3.6e6))
    _, rows = shown(docs, {"b": BATCH}, 'project(batch_summary(b).fastest_tok_s, "250M").energy', tmp_path)
    (none,) = rows.values()
    assert none.value is None and "joules_per_token" in (none.note or "")
