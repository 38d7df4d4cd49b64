"""probebook reproduce's rules on literal inputs: number and claim verdicts, param migrations, --with's matching."""

from __future__ import annotations

import math

import pytest

from measure.evidence.reruns import DROP, MIGRATIONS, migrate
from probebook.reproduce import match, verdict

# -- numbers ------------------------------------------------------------------------------------


def test_intervals_on_both_runs_combine_in_quadrature_on_the_facing_sides() -> None:
    # old 10 [9, 12], new 13 [12.5, 14]: facing halves 2 (old's upper) and 0.5 (new's lower); bound sqrt(4.25)
    assert verdict.number_verdict(10.0, 12.0, (9.0, 12.0), (11.5, 14.0), False) == "within"  # 2 <= sqrt(4+0.25)
    assert verdict.number_verdict(10.0, 13.0, (9.0, 12.0), (12.5, 14.0), False) == "outside"  # 3 > 2.0616
    # the same move downward uses the other halves: old's lower 1, new's upper 1 -> bound sqrt(2) = 1.414
    assert verdict.number_verdict(10.0, 8.5, (9.0, 12.0), (7.5, 9.5), False) == "outside"  # 1.5 > 1.414
    assert verdict.number_verdict(10.0, 8.6, (9.0, 12.0), (7.6, 9.6), False) == "within"  # 1.4 <= 1.414


def test_overlapping_intervals_are_not_enough() -> None:
    # [9, 11] and [10.6, 12.6] overlap, yet |1.6| > sqrt(1 + 1): outside, as the rule says
    assert verdict.number_verdict(10.0, 11.6, (9.0, 11.0), (10.6, 12.6), False) == "outside"


def test_a_number_without_intervals_is_compared_only_when_exact_by_nature() -> None:
    assert verdict.number_verdict(0.5, 0.6, None, None, False) == "not comparable"
    assert verdict.number_verdict(0.5, 0.6, (0.4, 0.6), None, False) == "not comparable"
    assert verdict.number_verdict(4.0, 4.0, None, None, True) == "within"
    assert verdict.number_verdict(2.5e8, 2.5e8 * (1 + 1e-12), None, None, True) == "within"
    assert verdict.number_verdict(4.0, 8.0, None, None, True) == "outside"


def test_a_measured_number_without_intervals_reproduced_to_the_bit_is_within() -> None:
    # a seeded numerical error computed again gives the same double: nothing to compare an interval with
    assert verdict.number_verdict(0.0155, 0.0155, None, None, False) == "within"
    assert verdict.number_verdict(0.0155, 0.0155 * (1 + 1e-12), None, None, False) == "within"
    assert verdict.number_verdict(0.0155, 0.0156, None, None, False) == "not comparable"


def test_missing_and_unusable_values() -> None:
    assert verdict.number_verdict(1.0, None, (0.9, 1.1), None, False) == "missing"
    assert verdict.number_verdict(1.0, 1.0, (0.9, 1.1), (0.9, 1.1), False, new_present=False) == "missing"
    assert verdict.number_verdict(None, 1.0, None, (0.9, 1.1), False) == "not comparable"
    assert verdict.number_verdict(1.0, math.inf, (0.9, 1.1), (0.9, 1.1), False) == "not comparable"


def test_exact_by_nature_reads_the_derivation() -> None:
    assert verdict.exact_by_nature({"derivation": "evidence field params.batch"})
    assert verdict.exact_by_nature({"derivation": "the code's constant measure.constants.WARMUP"})
    assert not verdict.exact_by_nature({"derivation": "evidence field data.clocks.sm_mhz_after"})
    assert not verdict.exact_by_nature({"derivation": "median of 5 samples of step_s"})


def test_claim_verdicts() -> None:
    assert verdict.claim_verdict(True, True) == "held"
    assert verdict.claim_verdict(True, False) == "flipped"
    assert verdict.claim_verdict(True, None) == "not comparable"
    assert verdict.relative_change(2.0, 1.5) == -0.25
    assert verdict.relative_change(0.0, 1.5) is None


# -- migrations ---------------------------------------------------------------------------------


def test_ablate_baseline_arm_is_dropped_from_arms() -> None:
    params = {"arms": ["baseline", "no-input-copy", "no-optimizer"], "batch": 4}
    out, notes = migrate("ablate", params)
    assert out == {"arms": ["no-input-copy", "no-optimizer"], "batch": 4}
    assert len(notes) == 1 and "baseline" in notes[0]
    assert params["arms"][0] == "baseline"  # the recorded params are not changed


def test_ablate_arms_of_baseline_alone_fall_back_to_the_default() -> None:
    out, notes = migrate("ablate", {"arms": ["baseline"], "batch": 4})
    assert out == {"batch": 4} and notes


def test_params_that_need_no_migration_are_left_alone() -> None:
    assert migrate("ablate", {"arms": ["no-optimizer"]}) == ({"arms": ["no-optimizer"]}, [])
    assert migrate("ablate", {"arms": None}) == ({"arms": None}, [])
    assert migrate("step-scaling", {"arms": ["baseline"]}) == ({"arms": ["baseline"]}, [])
    assert MIGRATIONS["ablate"][0].apply(["baseline"]) is DROP


# -- --with's matching rule ---------------------------------------------------------------------

DEFAULTS = {"batch": None, "seq_lens": None, "warmup": 3, "new_option": False}
DECLARED = {"step-scaling": {"version": 2, "options": {k: {"default": v} for k, v in DEFAULTS.items()}}}


def doc(params: dict, gpu: str | None = "NVIDIA H200", **extra: object) -> dict:
    return {
        "probe": "step-scaling",
        "probe_version": 1,
        "params": params,
        "machine": {"gpu": gpu},
        "status": "complete",
        "origin": {"kind": "measured"},
        **extra,
    }


ORIGINAL = doc({"batch": 4, "seq_lens": [512, 1024, 2048], "warmup": 2})


def found(others: dict) -> match.Matches:
    return match.match({"sweep": "sha256:orig"}, {"sha256:orig": ORIGINAL}, others, DECLARED)


def test_same_probe_same_params_same_gpu_is_a_reproduction() -> None:
    got = found({"sha256:a": doc({"batch": 4, "seq_lens": [512, 1024, 2048], "warmup": 2})})
    assert got.found == {"sweep": "sha256:a"} and got.mode == "reproduction" and not got.problems()


def test_a_later_probe_version_matches_when_the_options_it_added_are_at_their_defaults() -> None:
    later = {"batch": 4, "seq_lens": [512, 1024, 2048], "warmup": 2, "new_option": False}
    assert found({"sha256:b": doc(later, probe_version=2)}).found == {"sweep": "sha256:b"}
    changed = {**later, "new_option": True}
    assert found({"sha256:c": doc(changed, probe_version=2)}).missing == ["sweep"]
    fact = {**later, "n_params_total": 1}  # no option of today's probe: a fact the run recorded, not compared
    assert found({"sha256:d": doc(fact, probe_version=2)}).found == {"sweep": "sha256:d"}


def test_a_different_param_value_or_probe_does_not_match() -> None:
    got = found(
        {
            "sha256:e": doc({"batch": 8, "seq_lens": [512, 1024, 2048], "warmup": 2}),
            "sha256:f": {**doc(ORIGINAL["params"]), "probe": "kernels"},
            "sha256:g": doc(ORIGINAL["params"], status="partial"),
            "sha256:h": doc(ORIGINAL["params"], origin={"kind": "imported", "source": "x"}),
            "sha256:orig": ORIGINAL,  # itself, in the other archive too
        }
    )
    assert got.missing == ["sweep"] and got.problems() == ["sweep: no match"]


def test_several_matches_are_ambiguous_and_listed() -> None:
    got = found({"sha256:a": doc(dict(ORIGINAL["params"])), "sha256:b": doc(dict(ORIGINAL["params"]))})
    assert got.ambiguous == {"sweep": ["sha256:a", "sha256:b"]}
    assert got.problems() == ["sweep: 2 matches (sha256:a, sha256:b)"]


def test_another_gpu_model_is_a_comparison_across_machines() -> None:
    got = found({"sha256:a": doc(dict(ORIGINAL["params"]), gpu="NVIDIA H100 80GB HBM3")})
    assert got.found == {"sweep": "sha256:a"}
    assert got.across == {"sweep": "NVIDIA H100 80GB HBM3"} and got.mode == "cross-machine"


def test_a_match_on_the_same_gpu_is_preferred_over_others() -> None:
    got = found(
        {"sha256:a": doc(dict(ORIGINAL["params"]), gpu="NVIDIA H100"), "sha256:b": doc(dict(ORIGINAL["params"]))}
    )
    assert got.found == {"sweep": "sha256:b"} and got.mode == "reproduction"


@pytest.mark.parametrize(
    ("recorded", "other", "agree"),
    [
        ({"arms": ["baseline", "no-optimizer"]}, {"arms": ["no-optimizer"]}, True),  # migrated alike
        ({"arms": ["no-optimizer"]}, {"arms": ["no-attention"]}, False),
        ({"batch": 1}, {"batch": 1.0}, True),
        ({"compile": True}, {"compile": 1}, False),
        ({"flops": {"1024": 1747589760.0}}, {"flops": {"1024": 1747589760}}, True),  # as JSON writes them
        ({"flops": {"1024": 1.0}}, {"flops": {"1024": 1.0, "2048": 2.0}}, False),
    ],
)
def test_params_agree_after_migration(recorded: dict, other: dict, agree: bool) -> None:
    assert match.params_agree("ablate", recorded, other, {}) is agree


@pytest.mark.parametrize(
    ("recorded", "other", "agree"),
    [
        ({"batch": 4}, {"batch": 4, "n_params_total": 251943360}, True),  # a fact the later run recorded
        ({"batch": 4}, {"batch": 4, "clip": None}, True),  # an option the original lacked, at its default
        ({"batch": 4}, {"batch": 4, "clip": 1.0}, False),  # ... not at its default
    ],
)
def test_a_param_only_one_run_recorded_counts_only_when_it_is_an_option(
    recorded: dict, other: dict, agree: bool
) -> None:
    assert match.params_agree("optimizer", recorded, other, {"batch": 1, "clip": None}) is agree


# -- claims rendered aside from a build ---------------------------------------------------------


def test_a_false_claim_is_recorded_false_only_inside_unchecked() -> None:
    from render.numbers import claims, directions
    from render.numbers.quantity import ClaimError, Quantity

    slow = Quantity(value=0.01, unit="s", key="fit(sweep).c", evidence=("sha256:a",), derivation="x")
    fast = Quantity(value=0.03, unit="s", key="fit(reference).c", evidence=("sha256:b",), derivation="y")
    with pytest.raises(ClaimError, match="is false"):
        claims.make((slow > fast,), "the sleeping step takes longer")
    with claims.unchecked():
        made = claims.make((slow > fast,), "the sleeping step takes longer")
        row = claims.ledger_row("p.md", list(made.comparisons), made.sentence)
        directions.check_label("speed-up", Quantity(value=0.5, unit="", key="r"), "here")  # not refused here
    assert (row["value"], row["text"]) == (0, "false")
    true = claims.make((fast > slow,), "the reference is longer")
    assert claims.ledger_row("p.md", list(true.comparisons), true.sentence)["value"] == 1
    assert claims.checking()
    with pytest.raises(ClaimError):
        directions.check_label("speed-up", Quantity(value=0.5, unit="", key="r"), "here")


def test_a_reproduction_names_the_machine_that_measured_its_runs_not_the_one_that_compared() -> None:
    from probebook.reproduce.session import measured_on

    cool = {"gpu": "NVIDIA H200", "gpu_count": 1, "temperature_c": 31}
    warm = {"gpu": "NVIDIA H200", "gpu_count": 1, "temperature_c": 44}
    here = {"gpu": None, "gpu_count": 0}
    runs = {"sha256:a": {"machine": cool, "created_at": "2026-12-02T05:30:00Z"},
            "sha256:b": {"machine": warm, "created_at": "2026-12-02T05:31:00Z"}}  # fmt: skip
    assert measured_on(runs, here) == warm  # one model and count: the newest run's fingerprint
    assert measured_on({**runs, "sha256:c": {"machine": here, "created_at": "2026-12-02T06:00:00Z"}}, here) == here
    assert measured_on({}, here) == here
