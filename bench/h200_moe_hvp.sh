#!/usr/bin/env bash
# Issue 27's two measurements still missing on the GPU, from the repo root:
#   CUDA_VISIBLE_DEVICES=0 PYTHONPATH=. OUT=/some/dir bash bench/h200_moe_hvp.sh    # H200: <= 8 min (limits)
#   PYTHONPATH=. OUT=/tmp/m bash bench/h200_moe_hvp.sh --smoke                      # CPU, tiny presets: checks the script
# Parts, in order, each one probe process under its own limit (never fatal to the others):
#   kernels-moe-grouped/-looped  the moe-250m step (8 experts, top-2) under the profiler with kernels v5, which takes
#                                the expert share from the launched kernels; grouped pads each expert's rows to 8
#                                (the 16-byte alignment torch._grouped_mm asks for, the failure of the last run)
#   steps-moe-grouped            step-scaling on moe-250m with grouped experts, fixed batch 4, lengths 512..2048
#   hvp-90m-compiled             forward-over-reverse H.v in bf16 under torch.compile at 90m, batch 1 of 1024 tokens,
#                                against float64 and fp32 (the compiled 20m run took about 65 s to compile)
# Evidence goes to $OUT/archive.tgz (the device returns no deeply nested folder); logs and a summary to $OUT.
set -u
TAG=moehvp
. "$(dirname "$0")/lib.sh" "$@"
TIMES="$OUT/times.tsv"
: > "$TIMES"
if [ "$SMOKE" = 1 ]; then
  DEV="--device cpu"
  TIMED="--warmup 1 --windows 2 --iters 1"
  MOE="--preset moe-tiny --batch 2 --seq-len 32 $TIMED"
  STEPS="--preset moe-tiny --batch 2 --seq-lens 16,24,32 --modes fixed_batch $TIMED"
  HVP="--preset tiny --batches 1 --seq-len 8 --methods forward-over-reverse --modes eager --dtypes bf16 --windows 1 --warmup 0"
  L_KERN=120; L_STEPS=120; L_HVP=120
else
  DEV="--device cuda"
  MOE="--preset moe-250m --batch 4 --seq-len 2048 --warmup 2 --windows 5 --iters 2"
  STEPS="--preset moe-250m --batch 4 --seq-lens 512,1024,2048 --modes fixed_batch --warmup 2 --windows 3 --iters 3"
  HVP="--preset 90m --batches 1 --seq-len 1024 --methods forward-over-reverse --modes compiled --dtypes bf16"
  L_KERN=60; L_STEPS=60; L_HVP=240
fi

probe kernels-moe-grouped "$L_KERN" kernels $MOE --steps 2 --experts-impl grouped
probe kernels-moe-looped "$L_KERN" kernels $MOE --steps 2 --experts-impl looped
probe steps-moe-grouped "$L_STEPS" step-scaling $STEPS --experts-impl grouped
probe hvp-90m-compiled "$L_HVP" hvp $HVP

recover_journals
"$PY" -m bench.summary "$ARCHIVE" 2>&1 | tee "$OUT/summary.txt" | tee -a "$LOG"
rc=${PIPESTATUS[0]}
[ "$SMOKE" = 1 ] || { tar -czf "$OUT/archive.tgz" -C "$ARCHIVE" . && rm -rf "$ARCHIVE"; }
say "done (rc=$rc); seconds per part in $TIMES"
exit $rc
