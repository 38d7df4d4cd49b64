#!/usr/bin/env bash
# moe-experts-h200's two runs again, now that a mixture's run records its shape in params (n_experts,
# experts_top_k, expert_pad_rows), so the record states the shape from evidence. From the repo root:
#   CUDA_VISIBLE_DEVICES=0 PYTHONPATH=. OUT=/some/dir bash bench/h200_moe_shape.sh    # H200: <= 6 min (limits)
#   PYTHONPATH=. OUT=/tmp/m bash bench/h200_moe_shape.sh --smoke                      # CPU, the tiny preset
# The commands are the ones moe-experts-h200 v3's Reproduce block rebuilds from its evidence; the looped run
# overran 60 s once, so it has 240 s. Evidence goes to $OUT/archive.tgz; logs and a summary to $OUT.
set -u
TAG=moe-shape
. "$(dirname "$0")/lib.sh" "$@"
TIMES="$OUT/times.tsv"
: > "$TIMES"
if [ "$SMOKE" = 1 ]; then
  DEV="--device cpu"
  MOE="--preset moe-tiny --batch 2 --seq-len 32 --warmup 1 --windows 2 --iters 1"
  L_GROUPED=120; L_LOOPED=120
else
  DEV="--device cuda"
  MOE="--preset moe-250m --dtype bf16 --seed 0 --batch 4 --seq-len 2048 --warmup 2 --windows 5 --iters 2"
  L_GROUPED=90; L_LOOPED=240
fi

probe kernels-moe-grouped "$L_GROUPED" kernels $MOE --steps 2 --experts-impl grouped
probe kernels-moe-looped "$L_LOOPED" kernels $MOE --steps 2 --experts-impl looped

recover_journals
"$PY" -m bench.summary "$ARCHIVE" 2>&1 | tee "$OUT/summary.txt" | tee -a "$LOG"
rc=${PIPESTATUS[0]}
[ "$SMOKE" = 1 ] || { tar -czf "$OUT/archive.tgz" -C "$ARCHIVE" . && rm -rf "$ARCHIVE"; }
say "done (rc=$rc); seconds per part in $TIMES"
exit $rc
