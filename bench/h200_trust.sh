#!/usr/bin/env bash
# Re-measure what the correction of issue 7 needs, on one GPU, from the repo root:
#   PYTHONPATH=. OUT=/some/dir bash bench/h200_trust.sh           # H200: about 1.5 min of probes
#   PYTHONPATH=. OUT=/tmp/t bash bench/h200_trust.sh --smoke      # CPU, tiny preset: checks the script itself
# The kernels probe (version 2: user-annotation rows kept apart, never counted) at 250m, eager and
# compiled, with the params of the archived version-1 evidence it corrects (batch 4, sequence 2048,
# 3 profiled steps, warm-up 2, 5 windows of 2 calls); and the event-timed optimizer probe in the same
# session (7 rounds), so the optimizer's kernel share can be checked against its own timing.
# Evidence goes to $OUT/archive (a probebook archive); logs and a summary to $OUT.
set -u
TAG=trust
. "$(dirname "$0")/lib.sh" "$@"
if [ "$SMOKE" = 1 ]; then
  COMMON="--preset tiny --device cpu --warmup 1 --windows 2 --iters 1 --batch 2 --seq-len 64"
  LIMIT=120
else
  COMMON="--preset 250m --device cuda --warmup 2 --windows 5 --iters 2 --batch 4 --seq-len 2048"
  LIMIT=150
fi

probe kernels-eager "$LIMIT" kernels $COMMON --steps 3
probe kernels-compiled "$LIMIT" kernels $COMMON --steps 3 --compile
# the optimizer probe's windows are its interleaved rounds: 7, as in the archived 250m evidence
probe optimizer "$LIMIT" optimizer ${COMMON/--windows 5/--windows 7} --rounds 7

recover_journals
"$PY" - "$ARCHIVE" <<'PY' 2>&1 | tee "$OUT/summary.txt" | tee -a "$LOG"
import sys
from bench.summary import documents

for ident, d in documents(sys.argv[1]):
    head = f"{ident[:19]} {d['probe']} v{d['probe_version']} {d['status']} compile={d['params'].get('compile')}"
    print(head, d.get("error") or "", "code:", d["code"])
    if d["probe"] == "kernels":
        data = d["data"]
        counted = [r["kernel"] for r in data["samples"] if r["kernel"].startswith(("Optimizer.", "ProfilerStep#"))]
        print("  annotations kept apart:", [a["kernel"] for a in data.get("annotations", [])], "counted:", counted)
        print("  optimizer share:", round(data["shares"]["optimizer"], 5), "consistency:", data["consistency"])
PY
say "done"
