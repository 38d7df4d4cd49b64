#!/usr/bin/env bash
# The memory probes on one GPU, meant to run right after bench/h200_campaign.sh in the same call:
#   PYTHONPATH=. bash bench/h200_memory.sh ARCHIVE                  # all parts, <= BUDGET_S (230 s) wall
#   PYTHONPATH=. bash bench/h200_memory.sh ARCHIVE sweep-90m        # only the named parts, same budget
#   PYTHONPATH=. bash bench/h200_memory.sh ARCHIVE --smoke          # tiny preset, < 1 min (bug check)
# ARCHIVE is the campaign's archive folder: the evidence lands there, so one tar brings it all back.
# Logs (memory-<mode>.log, memory_times.tsv) go to $OUT, default ARCHIVE/logs.
#
# Parts (default: all, in this order):
#   sweep-90m, sweep-250m  batch-sweep at contexts $SWEEP_CONTEXTS (1024,2048,4096): batch 1, 2, 4, ... until
#                          the first OOM or batch x context > 1,048,576 tokens; bf16 autocast, eager; one
#                          fresh process per point (about 10 s each on the H200 before the children warmed
#                          their imports ahead; each row now records where its time went: preload_s ...)
#   loss-250m              loss-memory at context 2048, microbatch 1, 2, 4, 8, 16, materialized and chunked
# Each part gets an equal share of the time left: --budget-s (no new point after it; what was measured is
# stored as partial) is the share minus 20 s, and `timeout -s INT` (SIGINT: the probe still stores what it
# measured) stops it at the share minus 5 s, so the script ends within BUDGET_S plus the summary.
set -u
ARCHIVE=${1:?usage: bench/h200_memory.sh ARCHIVE [--smoke | PART ...]}
shift
MODE=full
PARTS="sweep-90m sweep-250m loss-250m"
if [ "${1:-}" = "--smoke" ]; then
  MODE=smoke
elif [ $# -gt 0 ]; then
  PARTS="$*"
fi
BUDGET_S=${BUDGET_S:-230}
SWEEP_CONTEXTS=${SWEEP_CONTEXTS:-1024,2048,4096}
mkdir -p "$ARCHIVE"
OUT=${OUT:-$ARCHIVE/logs}
mkdir -p "$OUT"
LOG="$OUT/memory-$MODE.log"
TIMES="$OUT/memory_times.tsv"
export PYTHONPATH="${PYTHONPATH:-.}"
export PYTHONUNBUFFERED=1
START=$(date +%s)

say() { echo "[memory $(( $(date +%s) - START ))s] $*" | tee -a "$LOG" >&2; }

probe() {  # probe NAME LIMIT_S ARGS... : one probe process, logged, never fatal
  local name=$1 limit=$2; shift 2
  local t0=$(date +%s.%N)
  say "start $name: python -m measure $*"
  timeout -s INT -k 10 "$limit" python -m measure --archive "$ARCHIVE" "$@" >> "$LOG" 2>&1
  local rc=$?
  local wall=$(python -c "import time,sys; print(round(time.time()-float(sys.argv[1]),2))" "$t0")
  printf '%s\t%s\t%s\n' "$name" "$wall" "$rc" >> "$TIMES"
  say "end $name: rc=$rc wall=${wall}s"
}

say "mode=$MODE archive=$ARCHIVE"
nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv >> "$LOG" 2>&1

if [ "$MODE" = smoke ]; then
  Q="--device cuda --preset tiny --warmup 1 --windows 2 --iters 1"
  probe smoke-batch-sweep 60 batch-sweep $Q --contexts 128,256 --max-tokens 2048 --budget-s 40
  probe smoke-loss-memory 60 loss-memory $Q --context 256 --microbatches 1,2,4 --chunk-tokens 128 --budget-s 40
else
  W="--device cuda --dtype bf16 --warmup 1 --windows 3 --iters 1"
  set -- $PARTS
  while [ $# -gt 0 ]; do
    part=$1; shift
    share=$(( (BUDGET_S - ($(date +%s) - START)) / ($# + 1) ))
    if [ "$share" -lt 40 ]; then
      say "skip $part: ${share}s share of the budget left"
      printf '%s\t0\tskipped\n' "$part" >> "$TIMES"
      continue
    fi
    case $part in
      sweep-90m|sweep-250m)
        probe "$part" $(( share - 5 )) batch-sweep --preset "${part#sweep-}" $W --contexts "$SWEEP_CONTEXTS" \
          --max-tokens 1048576 --budget-s $(( share - 20 )) ;;
      loss-250m)
        probe "$part" $(( share - 5 )) loss-memory --preset 250m $W --context 2048 --microbatches 1,2,4,8,16 \
          --chunk-tokens 1024 --budget-s $(( share - 20 )) ;;
      *) say "unknown part $part (parts: sweep-90m sweep-250m loss-250m)" ;;
    esac
  done
fi

# what landed, and what render will derive from it (render.derive is pure Python: no pandas, no torch)
python - "$ARCHIVE" <<'PY' 2>&1 | tee -a "$LOG"
import sys
from measure.evidence.envelope import parse
from measure.evidence.store import Store
from render.derive import batchsweep, lossmem
store = Store(sys.argv[1])


def phases(row):
    """Where the point's time went (rows from before the phase columns existed show nothing)."""
    names = ("preload_s", "idle_before_spec_s", "setup_s", "warmup_s", "timed_s", "observe_s", "exit_s")
    return " ".join(f"{n[:-2]}={row[n]:.2f}" for n in names if row.get(n) is not None)



for path in store.iter_paths():
    doc = parse(path.read_bytes(), str(path))
    if doc["probe"] not in ("batch-sweep", "loss-memory"):
        continue
    ident = "sha256:" + path.parent.name + path.name[:-5]
    rows = doc["data"]["samples"]
    print(f"{doc['probe']} {doc['params'].get('preset')} {doc['status']} {ident[:19]} rows={len(rows)} "
          f"failures={len(doc['data'].get('failures', []))} error={doc.get('error')}")
    try:
        if doc["probe"] == "batch-sweep":
            for g in batchsweep.summarize(rows):
                print("   ", g.to_json())
            for r in rows:
                print(f"    ctx={r['context']} b={r['batch']} {r['status']} tok_s={r['tok_s']} "
                      f"peak_GiB={None if r['peak_bytes'] is None else round(r['peak_bytes'] / 2**30, 2)} "
                      f"wall_s={r['point_wall_s']:.1f}", phases(r))
        else:
            for r in rows:
                print(f"    {r['arm']} mb={r['microbatch']} wall_s={r['point_wall_s']:.1f}", phases(r))
            for arm in lossmem.arms(rows):
                print("   ", arm, lossmem.marginal_bytes_per_microbatch(rows, arm).to_json())
            if {"materialized", "chunked"} <= set(lossmem.arms(rows)):
                print("    bytes per logit element:",
                      lossmem.bytes_per_logit_element(rows, "materialized", "chunked"))
            print("    oom:", doc["data"].get("oom"), "checks failed:",
                  [c for c in doc["data"].get("checks", []) if not c["passed"]])
    except Exception as exc:  # a summary line must not hide the evidence list
        print("    derive:", type(exc).__name__, exc)
PY
say "done: $(wc -l < "$TIMES") memory runs; evidence in $ARCHIVE"
