"""probebook reproduce --with: a record citing two runs of one configuration key under twin aliases (one per lease),
both matched by the one new run of that key: each alias's own numbers compare as any other, and what the record
derives between them (a difference, a claim, a trace diff) is not comparable, with the reason, never missing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from measure.evidence.envelope import canonical_bytes
from measure.evidence.store import Store
from probebook.reproduce import compare

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "fixtures" / "reproduce_twins"
KERNELS = "sha256:357cd316ac9bc2b547506580d4ebed553d2988dc655615be795f1c55ca3f3f38"
KERNELS_L2 = "sha256:8478e09727c56ee657a04b583d85bd87d351793804258d8c6a69ec901cc7d035"


def _one_new_run(tmp_path: Path) -> tuple[Path, str]:
    """Another archive holding one run of the twins' key: the second lease's profile, re-stamped a day later (a
    lease of its own), so both aliases match it."""
    store = Store(tmp_path / "other")
    doc = json.loads(next((FIXTURE / "archive").rglob(f"{KERNELS_L2[9:]}.json")).read_text())
    doc["created_at"] = "2026-12-08T05:00:00Z"
    return tmp_path / "other", store.put_bytes(canonical_bytes(doc))


def test_twin_aliases_matched_by_one_new_run_make_their_between_numbers_not_comparable(cli_here, tmp_path) -> None:
    archive = tmp_path / "archive"
    shutil.copytree(FIXTURE / "archive", archive)
    other, new = _one_new_run(tmp_path)
    r = cli_here(
        "--archive", str(archive), "reproduce", "kernels-twins", "--docs", str(FIXTURE / "docs"), "--with", str(other),
        "--json",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["new"] == {"kernels": new, "kernels_l2": new} and data["mode"] == "reproduction"
    reason = f"{compare.TWINS} (kernels and kernels_l2: {new[:19]})"
    assert f"reproduce: {reason}: not comparable" in r.stderr
    by_key = {n["key"]: n for n in data["numbers"]}
    # each alias alone: the first lease's share against the new run, the second's against its own copy
    alone = by_key["host_wait(kernels_l2).host_wait_share"]
    assert (alone["verdict"], alone["reason"], alone["new"]) == ("within", None, alone["old"])
    assert by_key["host_wait(kernels).host_wait_share"]["reason"] is None
    # between them: the difference the new run makes with itself (zero) says nothing of the original's
    between = by_key["host_wait(kernels_l2).host_wait_share - host_wait(kernels).host_wait_share"]
    assert between["old"] > 0 and between["new"] == 0.0
    assert (between["verdict"], between["reason"], between["outcome"]) == ("not comparable", reason, None)
    # the trace diff of the new run with itself leaves out its change columns (zero in every row): not missing
    diffs = [n for k, n in by_key.items() if k.startswith("trace_diff(kernels, kernels_l2)")]
    assert diffs and {(n["verdict"], n["reason"]) for n in diffs} == {("not comparable", reason)}
    assert any(n["key"].endswith(".change_s") and n["new"] is None for n in diffs)
    [claim] = data["claims"]
    assert (claim["old"], claim["new"]) == (True, False)  # the new run is not longer than itself
    assert (claim["verdict"], claim["reason"]) == ("not comparable", reason)
    s = data["summary"]
    assert s["missing"] == 0 and s["flipped"] == 0 and s["claims"] == 1
    measured = [n for n in data["numbers"] if n["basis"] == "measured"]
    assert s["not_comparable"] == sum(n["verdict"] == "not comparable" for n in measured) >= len(diffs) + 1
    assert s["measured"] == s["within"] + s["outside"] + s["not_comparable"]


def test_twins_are_two_originals_that_matched_one_new_run() -> None:
    a, b, c, n, m = ("sha256:" + x * 64 for x in "abcde")
    assert compare.twins({"x": a, "y": b, "z": c}, {"x": n, "y": n, "z": m}) == {a: ("x", n), b: ("y", n)}
    assert compare.twins({"x": a, "y": a}, {"x": n, "y": n}) == {}  # one document cited twice: no twins
    assert compare.twins({"x": a, "y": b}, {"x": n}) == {}  # y kept its original (--partial): compared apart
    twin = compare.twins({"x": a, "y": b, "z": c}, {"x": n, "y": n, "z": m})
    assert compare.twin_reason({"evidence": [a, c]}, twin) is None  # one twin and another run
    assert compare.twin_reason({"evidence": [b, a]}, twin) == f"{compare.TWINS} (x and y: {n[:19]})"
