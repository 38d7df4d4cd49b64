#!/usr/bin/env bash
# The correctness probes of issue 10 on one GPU, from the repo root:
#   CUDA_VISIBLE_DEVICES=0 PYTHONPATH=. OUT=/some/dir bash bench/h200_correctness_probes.sh          # H200, <= 6.7 min (limits)
#   PYTHONPATH=. OUT=/tmp/c bash bench/h200_correctness_probes.sh --smoke                          # CPU, tiny: checks the script
# Parts, in order, each one probe process under a time limit (never fatal to the others):
#   agreement-250m  bf16, compiled, bf16-compiled, chunked-loss and checkpointing arms against fp32 eager, batch 4 x
#                   2048 tokens, with the noise floor (the fp32 eager reference run twice) and the identical arm
#   gemm-250m       the same-session GEMM ceiling that the streaming record divides by
#   hvp-20m, hvp-90m  double backward and forward-over-reverse, eager then compiled, bf16 and fp32, batches 1 and 4
#                   of 1024 tokens, fp32 first (forward-over-reverse under bf16 autocast failed on CPU); no new
#                   candidate after --budget-s 55, the process stopped at 80 s (what was measured is kept as partial)
#   stream-250m, stream-500m  block weights streamed from pinned host memory at prefetch depth 1 and 2, beside the
#                   resident, no-copy and no-compute arms, batch 4 x 2048, with the streamed-vs-resident agreement check
# Evidence goes to $OUT/archive (a probebook archive); logs and a summary to $OUT.
set -u
TAG=correctness-probes OUT_NAME=correctness
. "$(dirname "$0")/lib.sh" "$@"
if [ "$SMOKE" = 1 ]; then
  DEV="--device cpu"
  AGREE="--preset tiny --seq-len 32 --arms identical,bf16,chunked,checkpointing"
  GEMM="--preset tiny --tokens 64 --square 128 --window-s 0.002 --windows 2"
  HVP_SMALL="--preset tiny --batches 1 --seq-len 16 --modes eager --windows 2 --warmup 0 --budget-s 60"
  HVP_LARGE="$HVP_SMALL"
  STREAM_SMALL="--preset tiny --seq-len 16 --windows 1 --iters 1 --warmup 0 --observe-steps 1"
  STREAM_LARGE="$STREAM_SMALL"
  LIMIT_AGREE=200; LIMIT_HVP=120; LIMIT_STREAM=120; LIMIT_GEMM=60
else
  DEV="--device cuda"
  AGREE="--preset 250m --batch 4 --seq-len 2048"
  GEMM="--preset 250m"
  HVP_SMALL="--preset 20m --batches 1,4 --seq-len 1024 --dtypes fp32,bf16 --budget-s 55"
  HVP_LARGE="--preset 90m --batches 1,4 --seq-len 1024 --dtypes fp32,bf16 --budget-s 55"
  STREAM_SMALL="--preset 250m --batch 4 --seq-len 2048 --windows 5 --iters 2"
  STREAM_LARGE="--preset 500m --batch 4 --seq-len 2048 --windows 5 --iters 2"
  LIMIT_AGREE=110; LIMIT_HVP=80; LIMIT_STREAM=50; LIMIT_GEMM=25
fi

probe agreement-250m "$LIMIT_AGREE" agreement $AGREE
probe gemm-250m "$LIMIT_GEMM" gemm $GEMM
probe hvp-20m "$LIMIT_HVP" hvp $HVP_SMALL
probe hvp-90m "$LIMIT_HVP" hvp $HVP_LARGE
probe stream-250m "$LIMIT_STREAM" stream $STREAM_SMALL
probe stream-500m "$LIMIT_STREAM" stream $STREAM_LARGE

recover_journals
"$PY" - "$ARCHIVE" <<'PY' 2>&1 | tee "$OUT/correctness-summary.txt" | tee -a "$LOG"
import sys
from bench.summary import documents

for ident, d in documents(sys.argv[1]):
    p, data = d["params"], d["data"]
    print(f"{ident[:19]} {d['probe']} {p.get('preset')} {d['status']} {d.get('error') or ''}")
    if d["probe"] == "agreement":
        for a in data.get("arms", []):
            rel = {r["quantity"]: r["rel_l2"] for r in data["samples"] if r["arm"] == a["arm"]}
            print(f"  {a['arm']:14} {a['status']:6} passed={a['passed']} rel_l2={rel} {a.get('error') or ''}")
        print("  noise floor:", {q: (m or {}).get("rel_l2") for q, m in data.get("noise_floor", {}).items() if q != "grad_worst"})
    elif d["probe"] == "hvp":
        for c in data.get("candidates", []):
            print(f"  {c['method']:21} {c['mode']:8} {c['dtype']} b{c['batch']} {c['status']:5}",
                  f"first {c.get('first_call_s')} warm {c.get('warm_median_s')} err {c.get('rel_l2_vs_float64')}",
                  f"peak {c.get('first_peak_bytes')}/{c.get('warm_peak_bytes')} {c.get('error') or ''}")
        print("  selection:", data.get("selection", {}).get("best"))
    elif d["probe"] == "stream":
        for a in data.get("arms", []):
            print(f"  {a['arm']:12} {a['median_step_s']:.5f} s {a['tok_s']:.0f} tok/s stall share {a.get('stall_share')}",
                  f"copy/layer {a.get('layer_copy_s')}")
        print("  agreement:", [(c["arm"], c["passed"]) for c in data.get("agreement", {}).get("checks", [])])
    elif d["probe"] == "gemm":
        print("  ceiling:", data.get("ceiling"))
PY
say "done"
