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


def test_three_way_across_sessions_judges_by_the_originals_interval_alone() -> None:
    # old 1.00 s published across sessions as [0.80, 1.25]; new 1.30 s: new/old - 1 = +30%, its interval
    # 1.30/1.25 - 1 = +4% to 1.30/0.80 - 1 = +62.5% excludes zero and the effect is past the 5% band: resolved
    got = verdict.three_way(1.0, 1.3, (0.8, 1.25), (1.2, 1.4), verdict.ACROSS, 0.05)
    assert got is not None and got.outcome == "resolved"
    assert (
        math.isclose(got.effect, 0.3) and math.isclose(got.interval[0], 0.04) and math.isclose(got.interval[1], 0.625)
    )
    # new 1.10 s lands inside the across-sessions interval: not resolved (never "no difference")
    assert verdict.three_way(1.0, 1.1, (0.8, 1.25), (1.0, 1.2), verdict.ACROSS, 0.05).outcome == "not resolved"
    # a tight kernel interval, a new value 0.5% off: equivalent within the 2% band
    kernel = verdict.three_way(1.0, 1.005, (0.995, 1.005), None, verdict.ACROSS, 0.02)
    assert kernel.outcome == "equivalent"


def test_three_way_by_this_runs_windows_combines_both_intervals() -> None:
    # ratio 2.0 [1.9, 2.1] against 2.3 [2.2, 2.4]: log halves ~0.0513 and ~0.0445 in quadrature: resolved
    got = verdict.three_way(2.0, 2.3, (1.9, 2.1), (2.2, 2.4), verdict.WINDOWS, 0.05)
    assert got.outcome == "resolved" and math.isclose(got.effect, 0.15)
    assert got.interval[0] > 0.05  # the new run's interval made it wider than the old's alone would be
    alone = verdict.three_way(2.0, 2.3, (1.9, 2.1), None, verdict.ACROSS, 0.05)
    assert alone.interval[0] > got.interval[0]
    # a saving compares by amount: 0.10 [0.05, 0.15] against 0.12 [0.07, 0.17], half-widths 0.05 in quadrature
    saving = verdict.three_way(0.10, 0.12, (0.05, 0.15), (0.07, 0.17), verdict.WINDOWS, 0.05, change=True)
    assert saving.outcome == "not resolved" and math.isclose(saving.effect, 0.02)
    assert math.isclose(saving.interval[0], 0.02 - math.hypot(0.05, 0.05))
    as_ratio = verdict.three_way(0.10, 0.12, (0.05, 0.15), (0.07, 0.17), verdict.WINDOWS, 0.05)
    assert math.isclose(as_ratio.effect, 0.2)  # the same two numbers as positive amounts: their ratio
    signed = verdict.three_way(-0.02, 0.03, (-0.04, 0.0), (0.01, 0.05), verdict.WINDOWS, 0.02)
    assert signed.outcome == "resolved" and math.isclose(signed.effect, 0.05)


def test_three_way_without_intervals() -> None:
    assert verdict.three_way(4.0, 4.0, None, None, verdict.EXACT, 0.05, exact=True).outcome == "equivalent"
    assert verdict.three_way(4.0, 8.0, None, None, verdict.EXACT, 0.05, exact=True).outcome == "resolved"
    assert verdict.three_way(0.5, 0.5, None, None, verdict.EXACT, 0.05).outcome == "equivalent"  # to the bit
    unjudged = verdict.three_way(0.5, 0.6, None, None, verdict.EXACT, 0.05)
    assert unjudged.outcome == "not resolved" and unjudged.interval == (-math.inf, math.inf)
    assert verdict.three_way(1.0, None, (0.9, 1.1), None, verdict.ACROSS, 0.05) is None


def test_judged_by_and_band_read_the_ledger_row_and_the_probes() -> None:
    assert verdict.judged_by({"uncertainty": [0.8, 1.2], "within": [0.95, 1.05]}) == verdict.ACROSS
    assert verdict.judged_by({"uncertainty": [0.8, 1.2]}) == verdict.WINDOWS
    assert verdict.judged_by({"uncertainty": None}) == verdict.EXACT
    assert verdict.band(["gemm"]) == 0.02 and verdict.band(["gemm", "ablate"]) == 0.05 and verdict.band([]) == 0.05


def test_claim_verdicts() -> None:
    assert verdict.claim_verdict(True, True) == "held"
    assert verdict.claim_verdict(True, False) == "flipped"
    assert verdict.claim_outcome(True, True, "resolved") == "held"
    assert verdict.claim_outcome(True, True, "not resolved") == "not resolved"  # true, but not by its interval
    assert verdict.claim_outcome(True, False, "not resolved") == "not resolved"  # false, but within noise
    assert verdict.claim_outcome(True, False, "against") == "flipped"
    assert verdict.claim_outcome(True, None, "against") == "not comparable"
    assert verdict.claim_outcome(True, False, None) == "flipped"  # a render that did not judge it: its truth
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


def test_several_runs_of_a_key_cited_once_pair_with_the_newest() -> None:
    newer = doc(dict(ORIGINAL["params"]), created_at="2026-12-02T06:00:00Z")
    older = doc(dict(ORIGINAL["params"]), created_at="2026-12-01T06:00:00Z")
    got = found({"sha256:a": newer, "sha256:b": older})
    assert got.found == {"sweep": "sha256:a"} and not got.problems()


def test_a_key_matches_whatever_effort_the_re_measurement_spent() -> None:
    # other warm-up, sweep points walked, sessions: effort, not the configuration (measure.evidence.configkey)
    effort = {"batch": 4, "seq_lens": [512], "warmup": 5, "sessions": 3, "windows": 9}
    assert found({"sha256:a": doc(effort)}).found == {"sweep": "sha256:a"}
    assert found({"sha256:a": doc({**effort, "batch": 8})}).missing == ["sweep"]  # a shaping param differs


def test_a_key_cited_twice_with_several_runs_is_ambiguous_and_listed() -> None:
    cited = {"sweep": "sha256:orig", "sweep_again": "sha256:orig2"}
    docs = {"sha256:orig": ORIGINAL, "sha256:orig2": doc(dict(ORIGINAL["params"]))}
    others = {"sha256:a": doc(dict(ORIGINAL["params"])), "sha256:b": doc(dict(ORIGINAL["params"]))}
    got = match.match(cited, docs, others, DECLARED)
    assert got.ambiguous == {"sweep": ["sha256:a", "sha256:b"], "sweep_again": ["sha256:a", "sha256:b"]}
    assert got.problems()[0] == "sweep: 2 matches (sha256:a, sha256:b)"
    one = match.match(cited, docs, {"sha256:a": others["sha256:a"]}, DECLARED)
    assert one.found == {"sweep": "sha256:a", "sweep_again": "sha256:a"}


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


def test_a_claim_is_judged_three_ways_by_the_rule_of_claims() -> None:
    from render.numbers import directions
    from render.numbers.quantity import Quantity

    def step(value: float, low: float, high: float, ident: str) -> Quantity:
        return Quantity(value=value, unit="s", key=ident, evidence=(ident,), uncertainty=(low, high), band=0.05)

    slow, fast = step(2.0, 1.9, 2.1, "sha256:a"), step(1.0, 0.95, 1.05, "sha256:b")
    assert directions.claim_outcome([slow > fast]) == "resolved"
    assert directions.claim_outcome([fast > slow]) == "against"  # the evidence says the opposite
    near = step(1.02, 0.9, 1.15, "sha256:c")
    assert directions.claim_outcome([near > fast]) == "not resolved"  # true, within noise
    assert directions.claim_outcome([fast > near]) == "not resolved"  # false, within noise: no flip


def test_compare_counts_three_way_outcomes_and_names_the_interval_judged_by() -> None:
    from probebook.reproduce import compare

    def row(key: str, value: float, unc: list | None, within: list | None = None, **extra: object) -> dict:
        out = {"key": key, "value": value, "unit": "s", "text": f"{value} s", "uncertainty": unc,
               "evidence": ["sha256:old"], "derivation": "median of windows", **extra}  # fmt: skip
        return out | ({"within": within} if within else {})

    old = [
        row("step", 1.0, [0.8, 1.25], within=[0.98, 1.02]),  # published across sessions
        row("ratio", 2.0, [1.9, 2.1], unit=""),  # this run's windows
        row("kernel", 1.0, [0.999, 1.001]),
        {"key": "claim: faster", "value": 1, "unit": "claim", "claim": {"sentence": "faster"}},
    ]
    new = [
        row("step", 1.1, [0.9, 1.35], within=[1.08, 1.12]),
        row("ratio", 2.3, [2.2, 2.4], unit=""),
        row("kernel", 1.001, [1.0, 1.002]),
        {"key": "claim: faster", "value": 0, "unit": "claim", "outcome": "not resolved"},
    ]
    nums = compare.numbers(old, new, {}, {"sha256:old": "gemm"})
    by = {n["key"]: n for n in nums}
    assert (by["step"]["judged_by"], by["step"]["outcome"]) == ("across sessions", "not resolved")
    assert (by["ratio"]["judged_by"], by["ratio"]["outcome"]) == ("this run's windows", "resolved")
    assert (by["kernel"]["outcome"], by["kernel"]["delta"]) == ("equivalent", 0.02)  # a gemm's band
    claims = compare.claim_rows(old, new)
    assert [c["verdict"] for c in claims] == ["not resolved"]
    s = compare.summary(nums, claims)
    assert (s["different"], s["equivalent"], s["not_resolved"]) == (1, 1, 1)
    assert (s["held"], s["flipped"], s["claims_not_resolved"]) == (0, 0, 1)


def test_numbers_a_generated_sentence_states_are_not_compared() -> None:
    from probebook.reproduce import compare
    from render.pages import caveats

    def doc(flags: list[bool]) -> dict:
        return {"probe": "gemm", "data": {"points": [{"point": f"p{i}", "unstable": f} for i, f in enumerate(flags)]}}

    estimate = {"key": "gemm(g)", "value": 2.0, "unit": "s", "text": "2.00 s", "uncertainty": [1.9, 2.1],
                "evidence": ["sha256:a"], "derivation": "median of windows"}  # fmt: skip
    said = caveats.ledger_rows("records/a/v1.md", {"g": "sha256:a"}, {"sha256:a": doc([True, True, False])})
    assert [(r["key"], r["value"], r["basis"]) for r in said] == [
        ("caveat(g).unstable[0]", 2.0, "in words"),  # "2 of its 3 measured points were flagged unstable"
        ("caveat(g).unstable[1]", 3.0, "in words"),
    ]
    assert [verdict.compared(r) for r in [estimate, *said]] == [True, False, False]
    assert not verdict.compared({"key": "claim: faster", "value": 1, "unit": "claim"})
    # the new runs flag no point: their Answer has no caveats, which is no missing number
    fresh = caveats.ledger_rows("records/a/v1.md", {"g": "sha256:b"}, {"sha256:b": doc([False, False, False])})
    assert fresh == []
    nums = compare.numbers([estimate, *said], [{**estimate, "value": 2.02}, *fresh], {}, {"sha256:a": "gemm"})
    assert [(n["key"], n["verdict"]) for n in nums] == [("gemm(g)", "within")]
    # and where they do flag points, the sentence's numbers are still left out, not paired by their place in it
    again = caveats.ledger_rows("records/a/v1.md", {"g": "sha256:a"}, {"sha256:a": doc([True, False, False])})
    assert [n["key"] for n in compare.numbers([estimate, *said], [estimate, *again], {})] == ["gemm(g)"]
