#!/usr/bin/env bash
# What the first correctness run (bench/h200_correctness_probes.sh) left unmeasured, on one GPU, from the repo root:
#   CUDA_VISIBLE_DEVICES=0 PYTHONPATH=. OUT=/some/dir bash bench/h200_correctness_more.sh          # H200, <= 6 min (limits)
#   PYTHONPATH=. OUT=/tmp/c bash bench/h200_correctness_more.sh --smoke                          # CPU, tiny: checks the script
# Parts, each one probe process under a time limit (SIGINT: it stores what it measured, as partial):
#   stream-500m   the 500m preset's layer streaming, which its 50 s limit cut short (pinning the blocks of five arms
#                 takes a while): batch 4 x 2048, prefetch depth 1 and 2, 3 interleaved rounds of 2 steps
#   hvp-20m-compiled  forward-over-reverse in fp32 at 20m, batch 1 of 1024 tokens, eager and under torch.compile
#                 (double backward cannot be compiled: aot_autograd refuses double backward, as recorded), so the
#                 compile speed-up is measured within one evidence document; the first call holds the compilation
#   nvml-overhead, step-scaling-util  the utilisation sampler again, now reading the GPU torch computes on (looked up
#                 by UUID or PCI bus id: the first run read NVML's device 0, which need not be the visible GPU):
#                 bench/nvml_overhead.py at 250m (sampling on beside off, 9 rounds of 5 steps) and step-scaling at 250m,
#                 batch 4, S = 1024, 2048, 4096, eager, NVML summarised per window
# Evidence goes to $OUT/archive (a probebook archive); logs and a summary to $OUT.
set -u
TAG=correctness-more OUT_NAME=correctness
. "$(dirname "$0")/lib.sh" "$@"
if [ "$SMOKE" = 1 ]; then
  DEV="--device cpu"
  STREAM="--preset tiny --seq-len 16 --windows 1 --iters 1 --warmup 0 --observe-steps 1"
  HVP="--preset tiny --batches 1 --seq-len 16 --methods forward-over-reverse --dtypes fp32 --modes eager --windows 2"
  NVML="--preset tiny --device cpu --batch 2 --seq-len 32 --rounds 3 --iters 2"
  SCALING="--preset tiny --batch 2 --seq-lens 32,64,96 --modes fixed_batch --warmup 1 --windows 2 --iters 1"
  LIMIT_STREAM=200; LIMIT_HVP=200; LIMIT_NVML=200; LIMIT_SCALING=200
else
  DEV="--device cuda"
  STREAM="--preset 500m --batch 4 --seq-len 2048 --windows 3 --iters 2"
  HVP="--preset 20m --batches 1 --seq-len 1024 --methods forward-over-reverse --dtypes fp32 --modes eager,compiled"
  NVML="--preset 250m --device cuda --batch 4 --seq-len 2048 --rounds 9 --iters 5"
  SCALING="--preset 250m --batch 4 --seq-lens 1024,2048,4096 --modes fixed_batch --warmup 3 --windows 5 --iters 3"
  LIMIT_STREAM=120; LIMIT_HVP=140; LIMIT_NVML=50; LIMIT_SCALING=45
fi

say "start nvml-overhead"
timeout -s INT -k 15 "$LIMIT_NVML" "$PY" bench/nvml_overhead.py $NVML --out "$OUT/nvml_overhead_mapped.json" >> "$LOG" 2>&1
say "end nvml-overhead: rc=$?"
probe step-scaling-util "$LIMIT_SCALING" step-scaling $SCALING --utilisation
probe stream-500m "$LIMIT_STREAM" stream $STREAM
probe hvp-20m-compiled "$LIMIT_HVP" hvp $HVP

recover_journals
"$PY" - "$ARCHIVE" <<'PY' 2>&1 | tee "$OUT/correctness-more-summary.txt" | tee -a "$LOG"
import sys
from bench.summary import documents

for ident, d in documents(sys.argv[1]):
    if d["probe"] == "step-scaling":
        print("utilisation:", d["data"].get("utilisation"), d["data"]["samples"][0])
    if d["probe"] not in ("stream", "hvp"):
        continue
    data = d["data"]
    print(f"{ident[:19]} {d['probe']} {d['params'].get('preset')} {d['status']} {d.get('error') or ''}")
    for c in data.get("candidates", []):
        print(f"  {c['method']} {c['mode']} {c['dtype']} b{c['batch']} {c['status']} first {c.get('first_call_s')}"
              f" warm {c.get('warm_median_s')} err {c.get('rel_l2_vs_float64')} {c.get('error') or ''}")
    for a in data.get("arms", []):
        print(f"  {a['arm']:12} {a['median_step_s']:.5f} s stall share {a.get('stall_share')} copy {a.get('layer_copy_s')}")
    if "agreement" in data:
        print("  agreement:", [(c["arm"], c["passed"]) for c in data["agreement"]["checks"]])
PY
say "done"
