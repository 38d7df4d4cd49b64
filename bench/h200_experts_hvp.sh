#!/usr/bin/env bash
# Issue 27's measurements left after bench/h200_moe_hvp.sh, from the repo root:
#   CUDA_VISIBLE_DEVICES=0 PYTHONPATH=. OUT=/some/dir bash bench/h200_experts_hvp.sh    # H200: <= 9 min (limits)
#   PYTHONPATH=. OUT=/tmp/m bash bench/h200_experts_hvp.sh --smoke                      # CPU, tiny presets
# Parts, each one probe process under its own limit (never fatal to the others):
#   kernels-moe-grouped/-looped  the moe-250m step under the profiler with kernels v5, both expert implementations in
#                                one session so they compare; the looped run overran 60 s last time, so 240 s here
#   hvp-90m-b4                   forward-over-reverse H.v in bf16 at 90m, batch 4 of 1024 tokens, compiled and eager,
#                                against float64 and fp32 (eager missed the 5% curvature tolerance there)
#   MOE_ONLY=1 runs the two kernels parts alone: moe-experts-h200's runs again, now that a mixture's run records
#                                its shape in params (n_experts, experts_top_k, expert_pad_rows) for the record to state
# Evidence goes to $OUT/archive.tgz; logs and a summary to $OUT.
set -u
TAG=experts
. "$(dirname "$0")/lib.sh" "$@"
TIMES="$OUT/times.tsv"
: > "$TIMES"
if [ "$SMOKE" = 1 ]; then
  DEV="--device cpu"
  MOE="--preset moe-tiny --batch 2 --seq-len 32 --warmup 1 --windows 2 --iters 1"
  HVP="--preset tiny --batches 1 --seq-len 8 --modes eager --windows 1 --warmup 0"
  L_GROUPED=120; L_LOOPED=120; L_HVP=120
else
  DEV="--device cuda"
  MOE="--preset moe-250m --batch 4 --seq-len 2048 --warmup 2 --windows 5 --iters 2"
  HVP="--preset 90m --batches 4 --seq-len 1024 --modes compiled,eager"
  L_GROUPED=90; L_LOOPED=240; L_HVP=220
fi

probe kernels-moe-grouped "$L_GROUPED" kernels $MOE --steps 2 --experts-impl grouped
probe kernels-moe-looped "$L_LOOPED" kernels $MOE --steps 2 --experts-impl looped
[ "${MOE_ONLY:-0}" = 1 ] || probe hvp-90m-b4 "$L_HVP" hvp $HVP --methods forward-over-reverse --dtypes bf16

recover_journals
"$PY" -m bench.summary "$ARCHIVE" 2>&1 | tee "$OUT/summary.txt" | tee -a "$LOG"
rc=${PIPESTATUS[0]}
[ "$SMOKE" = 1 ] || { tar -czf "$OUT/archive.tgz" -C "$ARCHIVE" . && rm -rf "$ARCHIVE"; }
say "done (rc=$rc); seconds per part in $TIMES"
exit $rc
