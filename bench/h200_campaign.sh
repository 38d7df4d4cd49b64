#!/usr/bin/env bash
# The measure campaign on one GPU (issue 4). Run from the repo root:
#   PYTHONPATH=. bash bench/h200_campaign.sh --smoke   # < 2 min: every probe once, tiny sizes (bug check)
#   PYTHONPATH=. bash bench/h200_campaign.sh           # full: 90m and 250m, then bench/fidelity.py (<= ~8 min)
# Evidence goes into a fresh archive; at the end it is tarred into $OUT/evidence.tar.gz with the logs.
# One probe failing never stops the others: each runs in its own process under `timeout`, its exit
# status and wall time go to probe_times.tsv, and the script moves on. Uses `python -m measure`
# (measure needs only torch + stdlib; the rest of probebook is not imported on the GPU machine).
set -u
cd "$(dirname "$0")/.."
MODE=full
[ "${1:-}" = "--smoke" ] && MODE=smoke
PY=${PYTHON:-python}
DEVICE=${DEVICE:-cuda}   # DEVICE=cpu only to check this script's mechanics on a machine without a GPU
OUT=${OUT:-$PWD/campaign-out}
mkdir -p "$OUT"
ARCHIVE=$(mktemp -d "${TMPDIR:-/tmp}/probebook-archive-XXXXXX")
LOG="$OUT/campaign-$MODE.log"
TIMES="$OUT/probe_times.tsv"
: > "$TIMES"
export PYTHONPATH="${PYTHONPATH:-.}"
export PYTHONUNBUFFERED=1
START=$(date +%s)
# full mode: items marked optional are skipped once this many seconds have passed
BUDGET_S=${BUDGET_S:-390}
# hard wall-clock budget for everything before the final tar (the device command limit is 600 s):
# each probe's timeout is cut to what is left, and a probe with under 20 s left is skipped
if [ "$MODE" = smoke ]; then HARD_S=${HARD_S:-150}; else HARD_S=${HARD_S:-540}; fi

say() { echo "[campaign $(( $(date +%s) - START ))s] $*" | tee -a "$LOG" >&2; }

left() { echo $(( HARD_S - ($(date +%s) - START) )); }

probe() {  # probe NAME TIMEOUT_S ARGS... : one probe process, logged, never fatal
  local name=$1 limit=$2; shift 2
  local rest=$(left)
  if [ "$rest" -lt 20 ]; then
    say "skip $name: only ${rest}s of the ${HARD_S}s budget left"
    printf '%s\t0\tskipped\n' "$name" >> "$TIMES"
    return
  fi
  [ "$limit" -gt "$rest" ] && limit=$rest
  local t0=$(date +%s.%N)
  say "start $name: python -m measure $*"
  timeout "$limit" "$PY" -m measure --archive "$ARCHIVE" "$@" >> "$LOG" 2>&1
  local rc=$?
  local wall=$("$PY" -c "import time,sys; print(round(time.time()-float(sys.argv[1]),2))" "$t0")
  printf '%s\t%s\t%s\n' "$name" "$wall" "$rc" >> "$TIMES"
  say "end $name: rc=$rc wall=${wall}s"
}

optional() {  # optional NAME TIMEOUT_S ARGS... : skipped when past the budget
  if [ $(( $(date +%s) - START )) -gt "$BUDGET_S" ]; then
    say "skip $1: past the ${BUDGET_S}s budget"
    printf '%s\t0\tskipped\n' "$1" >> "$TIMES"
  else
    probe "$@"
  fi
}

say "mode=$MODE archive=$ARCHIVE"
"$PY" - <<'PY' >> "$LOG" 2>&1
import json, torch
from measure.machine import fingerprint
print(json.dumps(fingerprint(), indent=1))
print("torch", torch.__version__, "cuda", torch.cuda.is_available())
PY

if [ "$MODE" = smoke ]; then
  Q="--preset tiny --device $DEVICE --warmup 1 --windows 2 --iters 1"
  probe smoke-gemm 60 gemm $Q --tokens 1024 --square 1024
  probe smoke-copy 60 copy $Q
  probe smoke-step-scaling 60 step-scaling $Q --seq-lens 128,256,512
  probe smoke-kernels 60 kernels $Q --steps 2 --seq-len 256
  probe smoke-ablate 60 ablate $Q --seq-len 256
  probe smoke-optimizer 60 optimizer $Q --seq-len 256
  probe smoke-step-scaling-compiled 90 step-scaling $Q --seq-lens 128,256,512 --modes fixed_tokens --compile
  say "fidelity --smoke"
  timeout $(( $(left) > 30 ? $(left) : 30 )) "$PY" bench/fidelity.py --smoke --archive "$ARCHIVE" --report "$OUT/fidelity-smoke.json" >> "$LOG" 2>&1
  say "fidelity rc=$?"
  if "$PY" -c "import pytest" 2>/dev/null; then
    timeout 60 "$PY" -m pytest -q -m gpu tests/test_probes_gpu.py -p no:cacheprovider >> "$LOG" 2>&1
    say "gpu tests rc=$?"
  else
    say "pytest not installed here: GPU tests not run"
  fi
else
  W="--device $DEVICE --warmup 2 --windows 5 --iters 2"
  for P in 90m 250m; do
    probe gemm-$P 120 gemm --preset $P $W
    probe copy-$P 120 copy --preset $P $W
    probe step-scaling-$P 240 step-scaling --preset $P $W --seq-lens 512,1024,2048,4096,6144,8192 \
      --batch 4 --tokens-per-step 24576
    probe kernels-$P 120 kernels --preset $P $W --seq-len 2048 --batch 4 --steps 3
    probe ablate-$P 150 ablate --preset $P $W --seq-len 2048 --batch 4 --rounds 7
    probe optimizer-$P 120 optimizer --preset $P $W --seq-len 2048 --batch 4 --rounds 7
  done
  # compiled where it matters: the step-scaling fit and the kernel mix (one compile per shape)
  optional step-scaling-250m-compiled 240 step-scaling --preset 250m $W --compile \
    --seq-lens 512,1024,2048,4096,6144,8192 --tokens-per-step 24576 --modes fixed_tokens
  optional kernels-250m-compiled 150 kernels --preset 250m $W --compile --seq-len 2048 --batch 4 --steps 3
  say "fidelity"
  timeout $(( $(left) > 60 ? $(left) : 60 )) "$PY" bench/fidelity.py --archive "$ARCHIVE" --report "$OUT/fidelity.json" \
    --campaign-times "$TIMES" >> "$LOG" 2>&1
  say "fidelity rc=$?"
fi

# a probe killed by `timeout` stores partial evidence on SIGTERM; one killed harder leaves its journal
for j in "$ARCHIVE"/journal/*.jsonl; do
  [ -e "$j" ] || continue
  say "recover $j"
  "$PY" -m measure --archive "$ARCHIVE" recover "$j" >> "$LOG" 2>&1 && rm -f "$j"
done
"$PY" - "$ARCHIVE" <<'PY' >> "$LOG" 2>&1
import sys
from measure.evidence.store import Store
from measure.evidence.envelope import parse
s = Store(sys.argv[1])
bad = s.verify()
print(f"verify: {len(s.ids())} evidence, {len(bad)} mismatched")
for p in s.iter_paths():
    d = parse(p.read_bytes(), str(p))
    print(d["probe"], d["status"], d.get("error") or "", d["params"].get("preset"), d["params"].get("compile"))
PY
tar czf "$OUT/evidence.tar.gz" -C "$ARCHIVE" .
say "done: $(tail -n +1 "$TIMES" | wc -l) probe runs; evidence in $OUT/evidence.tar.gz"
