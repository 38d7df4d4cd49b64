#!/usr/bin/env bash
# Data-parallel scaling on the 2-GPU H200 machine, in one go from the repository root (issue 13):
#   PYTHONPATH=. bash bench/h200_ddp.sh            # evidence to $OUT/archive, logs to $OUT; <= BUDGET_S (220 s)
#   PYTHONPATH=. bash bench/h200_ddp.sh --cpu      # the same steps, tiny preset on the CPU with gloo (bug check)
# Parts, in this order (each under `timeout -s INT`, so a probe still stores what it measured):
#   topo        nvidia-smi topo -m into the log
#   probe-250m  probebook's ddp probe: 250m, context 2048, batch 4 per rank, 1 GPU then 2 GPUs
#   bench-2     bench/ddp.py: bare DDP loop beside the probe's step path, 2 ranks, same shape
#   bench-1     bench/ddp.py with 1 rank (no DDP): the 1-GPU baseline against a bare loop
#   probe-90m   the ddp probe near the GPT-2 anchor shape (90m, context 1024, batch 16), if time is left
set -u
MODE=gpu
[ "${1:-}" = "--cpu" ] && MODE=cpu
OUT=${OUT:-out-ddp}
ARCHIVE="$OUT/archive"
mkdir -p "$ARCHIVE"
LOG="$OUT/ddp-$MODE.log"
TIMES="$OUT/ddp_times.tsv"
BUDGET_S=${BUDGET_S:-220}
export PYTHONPATH="${PYTHONPATH:-.}"
export PYTHONUNBUFFERED=1
START=$(date +%s)

say() { echo "[ddp $(( $(date +%s) - START ))s] $*" | tee -a "$LOG" >&2; }

part() {  # part NAME LIMIT_S COMMAND... : one logged step, never fatal
  local name=$1 limit=$2; shift 2
  local left=$(( BUDGET_S - ($(date +%s) - START) ))
  if [ "$left" -lt 30 ]; then
    say "skip $name: ${left}s of the budget left"
    printf '%s\t0\tskipped\n' "$name" >> "$TIMES"
    return
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  local t0=$(date +%s)
  say "start $name (limit ${limit}s): $*"
  timeout -s INT -k 15 "$limit" "$@" >> "$LOG" 2>&1
  local rc=$?
  printf '%s\t%s\t%s\n' "$name" "$(( $(date +%s) - t0 ))" "$rc" >> "$TIMES"
  say "end $name: rc=$rc"
}

if [ "$MODE" = cpu ]; then
  D="--device cpu --preset tiny"
  P250="$D --seq-len 64 --batch 2 --gpus 2 --warmup 1 --windows 3 --iters 2 --comm-steps 3"
  P90="$D --seq-len 32 --batch 4 --gpus 2 --warmup 1 --windows 3 --iters 2 --comm-steps 3"
  B="$D --seq-len 64 --batch 2 --rounds 3 --iters 2 --warmup 1"
else
  D="--device cuda"
  P250="$D --preset 250m --seq-len 2048 --batch 4 --gpus 2 --warmup 5 --windows 5 --iters 5 --comm-steps 10"
  P90="$D --preset 90m --seq-len 1024 --batch 16 --gpus 2 --warmup 5 --windows 5 --iters 5 --comm-steps 10"
  B="$D --preset 250m --seq-len 2048 --batch 4 --rounds 12 --iters 5 --warmup 5"
fi

say "mode=$MODE out=$OUT budget=${BUDGET_S}s"
part topo 20 bash -c 'nvidia-smi topo -m; nvidia-smi --query-gpu=name,memory.total,clocks.sm --format=csv'
part probe-250m 110 python3 -m measure --archive "$ARCHIVE" ddp $P250 \
  --notes "bench/h200_ddp.sh probe-250m ($MODE)"
part bench-2 60 python3 bench/ddp.py --nproc 2 $B --out "$OUT/bench-ddp-2.json"
part bench-1 45 python3 bench/ddp.py --nproc 1 $B --out "$OUT/bench-ddp-1.json"
part probe-90m 80 python3 -m measure --archive "$ARCHIVE" ddp $P90 \
  --notes "bench/h200_ddp.sh probe-90m, near the GPT-2 124M anchor shape ($MODE)"
say "done in $(( $(date +%s) - START ))s; evidence:"
find "$ARCHIVE/evidence" -name '*.json' 2>/dev/null | tee -a "$LOG" >&2
grep -h "bench/ddp.py" "$LOG" >&2
