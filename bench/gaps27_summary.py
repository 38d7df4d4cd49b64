"""The summary of ``bench/h200_gaps27.sh``: each document with the figures its part was run for, then a check
that every part left what it was meant to show (``python -m bench.gaps27_summary ARCHIVE SMOKE LOG``).

The parts are told apart by what their evidence records (probe, workload, options), never by order. A smoke
(SMOKE = 1, the CPU) cannot capture a CUDA graph, so there the peaks part must be refused in one line in LOG.
Exits 1 when a part is missing what it should show.
"""

from __future__ import annotations

import sys
from typing import Any

from bench.summary import documents
from measure.evidence.clocks import window_clock_mhz

GIB = 2**30
REFUSED = "CUDA graph not captured: CUDA graphs need a CUDA device"


def part_of(d: dict[str, Any]) -> str:
    """Which part of the script a document comes from (its probe, plug-in and options)."""
    p, probe = d["params"], d["probe"]
    plugin = bool(p.get("workload"))
    if probe == "hvp":
        return "plugin-hvp" if plugin else f"hvp-{p.get('preset')}"
    if probe == "eval-boundary":
        return "plugin-eval" if plugin else "eval"
    if probe == "batch-sweep":
        return "plugin-sweep" if plugin else "peaks" if p.get("cuda_graph") else "oom"
    if probe == "step-scaling":
        return "engage-plugin" if plugin else "step"
    return probe


def show(part: str, d: dict[str, Any], smoke: bool) -> bool:
    """Print the part's figures; True when it shows what the part was run for (on the GPU, a clock sampled)."""
    data = d["data"]
    stored = d["status"] in ("complete", "unstable")  # unstable: stored, its noisy windows flagged
    if part.startswith("hvp") or part == "plugin-hvp":
        cands = data.get("candidates", [])
        for c in cands:
            print(f"  {c['mode']:8} {c['dtype']} b{c['batch']} {c['status']:5} first {c.get('first_call_s')}",
                  f"warm {c.get('warm_median_s')} err {c.get('rel_l2_vs_float64')} verdict {c.get('verdict')}",
                  c.get("error") or "")  # fmt: skip
        return bool(cands) and all(c["status"] == "ok" for c in cands)
    if part in ("oom", "plugin-sweep", "peaks"):
        rows = data.get("samples", [])
        for r in rows:
            peaks = {k: round(r[k] / GIB, 2) for k in ("setup_peak_bytes", "warmup_peak_bytes", "capture_peak_bytes",
                                                      "peak_bytes") if r.get(k) is not None}  # fmt: skip
            print(
                f"  S={r['context']} B={r['batch']} {r['status']} tok/s {r.get('tok_s')} GiB {peaks}",
                f"compile {r.get('compile_engaged')} {r.get('error') or ''}",
            )
        for f in data.get("failures", []):
            print(f"  S={f['context']} B={f['batch']} failed: {f['error']}")
        print(f"  oom_source: {d['params'].get('oom_source')}")
        if part == "oom":
            return any(r["status"] == "oom" for r in rows)
        if part == "peaks":
            return any(r.get("capture_peak_bytes") is not None for r in rows)
        return any(r["status"] == "ok" for r in rows)
    if part == "plugin-eval":
        s = data.get("summary") or {}
        print(
            "  ",
            {k: s.get(k) for k in ("training_only_tok_s", "eval_pass_s", "checkpoint_write_s", "checkpoint_read_s")},
        )
        return stored
    if part in ("step", "gemm"):
        clock = window_clock_mhz(data.get("samples", []))
        print(f"  median window SM clock {clock} MHz; clocks {data.get('clocks')}; ceiling {data.get('ceiling')}")
        return stored and (smoke or clock is not None)  # a CPU has no NVML clock to sample
    if part == "engage-plugin":
        marks = data.get("engagement_warnings", [])
        print("  marks:", sorted({m["kind"] for m in marks}), len(marks))
        return any(m["kind"] == "compile-not-engaged" for m in marks)
    return stored


def main(archive: str, smoke: bool, log: str) -> int:
    shown: dict[str, bool] = {}
    for ident, d in documents(archive):
        p, part = d["params"], part_of(d)
        print(ident[:19], part, d["probe"], p.get("preset"), p.get("workload_name"), d["status"], d.get("error") or "")
        shown[part] = show(part, d, smoke) or shown.get(part, False)
    want = ["hvp-20m", "hvp-90m", "oom", "plugin-hvp", "plugin-eval", "plugin-sweep", "step", "gemm", "peaks",
            "engage-plugin"]  # fmt: skip
    if smoke:  # the CPU's hvp parts both run the tiny preset, and its peaks part is a recorded refusal
        want = ["hvp-tiny" if w.startswith("hvp-") else w for w in want if w != "peaks"]
        with open(log, encoding="utf-8") as f:
            shown["peaks-refused"] = REFUSED in f.read()
        want.append("peaks-refused")
    missing = [w for w in dict.fromkeys(want) if not shown.get(w)]
    print("check:", "ok" if not missing else f"not shown: {', '.join(missing)}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2] == "1", sys.argv[3]))
