#!/usr/bin/env bash
# Issue 27's measurements that need no new probe, on one GPU, from the repo root:
#   CUDA_VISIBLE_DEVICES=0 PYTHONPATH=. OUT=/some/dir bash bench/h200_plugin.sh      # H200: <= 5 min (limits)
#   PYTHONPATH=. OUT=/tmp/p bash bench/h200_plugin.sh --smoke                       # CPU, tiny: checks the script
# Parts, in order, each one probe process under a time limit (never fatal to the others):
#   plugin-*      every probe that times a training step, on the tests' plug-in harness (tiny_lm, not the
#                 reference decoder) through --workload: its source hashed, its step timed, the card checked idle
#   lora-*        the LoRA plug-in (frozen base): total and trainable parameters, frozen-weight model FLOPs
#   hvp-20m, hvp-90m  forward-over-reverse H.v in fp32 and bf16 autocast, eager, batches 1 and 4 of 1024 tokens,
#                 with the quadratic form's statistics and the tolerance verdict against fp32
#   hvp-20m-compiled  the same in bf16 under torch.compile, batch 1 (about 65 s of compilation on the H200; the
#                 compiled fp32 candidate is archived already; on CPU, where compiling takes many minutes, skipped)
#   gemm-250m     the GEMM ceiling with the SM clock sampled in every window (gemm v2)
# The plug-in's learned positions stop at 64 tokens (tests/fixtures/plugin_harness/tiny_lm/layers.py MAX_LEN),
# so its runs use 64-token sequences on the GPU too: they show the harness runs there, not a GPU-sized workload.
# Evidence goes to $OUT/archive.tgz (the device returns no deeply nested folder); logs and a summary to $OUT.
set -u
TAG=plugin
. "$(dirname "$0")/lib.sh" "$@"
export PYTHONPATH="$PWD/tests/fixtures/plugin_harness:$PYTHONPATH"
PLUG="--workload tiny_lm.harness:factory"
LORA="--workload tiny_lm.harness:lora"
if [ "$SMOKE" = 1 ]; then
  DEV="--device cpu"
  T="--warmup 1 --windows 2 --iters 1"
  S=16; LIMIT=120
  HVP_SMALL="--preset tiny --batches 1 --seq-len 16 --methods forward-over-reverse --modes eager --windows 2 --warmup 0"
  HVP_LARGE="$HVP_SMALL"
  HVP_COMPILED=""
  GEMM="--preset tiny --tokens 64 --square 128 --window-s 0.002 --windows 2"
  LIMIT_HVP=120; LIMIT_GEMM=60
else
  DEV="--device cuda"
  T="--warmup 2 --windows 5 --iters 2"
  S=64; LIMIT=40
  HVP_SMALL="--preset 20m --batches 1,4 --seq-len 1024 --methods forward-over-reverse --modes eager --dtypes fp32,bf16"
  HVP_LARGE="--preset 90m --batches 1,4 --seq-len 1024 --methods forward-over-reverse --modes eager --dtypes fp32,bf16"
  HVP_COMPILED="--preset 20m --batches 1 --seq-len 1024 --methods forward-over-reverse --modes compiled --dtypes bf16"
  GEMM="--preset 250m"
  LIMIT_HVP=60; LIMIT_GEMM=25
fi

probe plugin-step-scaling "$((LIMIT + 15))" step-scaling $PLUG $T --seq-lens $((S / 4)),$((S / 2)),$S
probe plugin-kernels "$LIMIT" kernels $PLUG $T --steps 2 --seq-len $S
probe plugin-ablate "$LIMIT" ablate $PLUG $T --seq-len $S
probe plugin-optimizer "$LIMIT" optimizer $PLUG $T --seq-len $S --rounds 5
probe plugin-mask "$LIMIT" mask $PLUG $T --seq-len $S --batch 4 --steps 2 --sliding-window $((S / 4))
probe plugin-stream "$LIMIT" stream $PLUG $T --seq-len $S --observe-steps 2 --depths 1
probe plugin-loss-memory "$LIMIT" loss-memory $PLUG $T --context $S --microbatches 1,2 --chunk-tokens $((S / 2))
probe plugin-agreement "$LIMIT" agreement $PLUG --seq-len $S --arms identical,bf16,chunked
probe lora-step-scaling "$LIMIT" step-scaling $LORA $T --seq-lens $((S / 4)),$((S / 2)),$S
probe lora-kernels "$LIMIT" kernels $LORA $T --steps 2 --seq-len $S
probe hvp-20m "$LIMIT_HVP" hvp $HVP_SMALL
probe hvp-90m "$LIMIT_HVP" hvp $HVP_LARGE
[ -n "$HVP_COMPILED" ] && probe hvp-20m-compiled 120 hvp $HVP_COMPILED
probe gemm-250m "$LIMIT_GEMM" gemm $GEMM

recover_journals
"$PY" - "$ARCHIVE" <<'PY' 2>&1 | tee "$OUT/summary.txt" | tee -a "$LOG"
import sys
from bench.summary import documents

for ident, d in documents(sys.argv[1]):
    p = d["params"]
    print(ident[:19], d["probe"], p.get("preset"), p.get("workload_name"), d["status"], d.get("error") or "")
    data = d["data"]
    for key in ("n_params_total", "n_params_trainable", "device_check", "engagement_warnings"):
        if key in data:
            print(f"  {key}: {data[key]}")
PY
tar -czf "$OUT/archive.tgz" -C "$ARCHIVE" . && rm -rf "$ARCHIVE"
say "done"
