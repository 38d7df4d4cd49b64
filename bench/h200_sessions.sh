#!/usr/bin/env bash
# The GPU cost of the session design (issue 38): step-anatomy-250m's runs measured twice on one GPU, each run
# first with the design its evidence used (one process, the effort its params record: --sessions 1 and its
# --warmup/--windows/--iters) and then with the session design (today's defaults: --sessions 3, 2 warm-up
# calls, 9 windows of 1 call). Run from the repo root:
#   PYTHONPATH=. OUT=/some/dir bash bench/h200_sessions.sh                 # H100/H200: under about 8 minutes
#   PYTHONPATH=. OUT=/tmp/x bash bench/h200_sessions.sh --smoke           # tiny preset on the CPU: the mechanics
# The runs are the record's (`probebook reproduce step-anatomy-250m --dry-run` prints them), cheapest first, in
# pairs (one-process run, then the session run), so a pair that HARD_S (default 470 s) cuts off leaves the
# pairs before it comparable. Each run gets a fresh torch compile cache (TORCHINDUCTOR_CACHE_DIR), so neither
# design reuses the other's kernels; a run's later sessions do reuse its first session's, as they would anywhere.
# Evidence goes to $OUT/archive-today and $OUT/archive-sessions, the wall seconds of every run to
# $OUT/sessions_times.tsv, and the per-run and total cost ratios to $OUT/sessions_cost.json.
# ONLY=sessions runs the session design alone (a re-measurement in another lease: no cost ratio then).
# PARTS="ceiling optimizer ..." runs only the pairs named (in this script's order), e.g. to leave out the eager sweep.
set -u
TAG=sessions
. "$(dirname "$0")/lib.sh" "$@"
DEVICE=${DEVICE:-cuda}
HARD_S=${HARD_S:-470}
TIMES="$OUT/sessions_times.tsv"
printf 'design\tpart\twall_s\trc\n' > "$TIMES"
CACHES="$OUT/compile-caches"
mkdir -p "$OUT/archive-today" "$OUT/archive-sessions" "$CACHES"

"$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())" >> "$LOG" 2>&1

# one run of one design: DESIGN PART LIMIT ARGS...; wall seconds (to the millisecond) and rc into $TIMES
run() {
  local design=$1 part=$2 limit=$3; shift 3
  local rest=$(( HARD_S - ($(date +%s) - START) ))
  if [ "$rest" -lt 15 ]; then
    say "skip $design $part: only ${rest}s left"
    printf '%s\t%s\t\tskipped\n' "$design" "$part" >> "$TIMES"
    return 1
  fi
  [ "$limit" -gt "$rest" ] && limit=$rest
  local cache="$CACHES/$design-$part"
  rm -rf "$cache"
  say "start $design $part: python -m measure $*"
  local t0 t1 rc
  t0=$(date +%s%N)
  TORCHINDUCTOR_CACHE_DIR="$cache" timeout -s INT -k 15 "$limit" \
    "$PY" -m measure --archive "$OUT/archive-$design" "$@" --device "$DEVICE" --quiet >> "$LOG" 2>&1
  rc=$?
  t1=$(date +%s%N)
  printf '%s\t%s\t%s\t%s\n' "$design" "$part" "$(( (t1 - t0) / 1000000 ))e-3" "$rc" >> "$TIMES"
  say "end $design $part: rc=$rc"
}

# a pair: PART LIMIT "TODAY'S EFFORT" PROBE ARGS...; the session run only when the one-process run was not cut off
pair() {
  local part=$1 limit=$2 effort=$3; shift 3
  case " ${PARTS:-$part} " in *" $part "*) ;; *) return 0 ;; esac
  if [ "${ONLY:-}" != sessions ]; then
    # shellcheck disable=SC2086  # the effort is several words on purpose
    run today "$part" "$limit" "$@" $effort || return
  fi
  # shellcheck disable=SC2086
  run sessions "$part" $(( limit * 3 )) "$@" ${NEWX-$NEW}
}

if [ "$SMOKE" = 1 ]; then  # the same pairs on the tiny preset: a typo fails here, not on the GPU
  DEVICE=cpu
  M="--preset tiny --dtype fp32 --seed 0"
  STEP="--batch 2 --seq-len 32"
  SEQS="--seq-lens 16,32,48 --batch 2 --tokens-per-step 96"
  UTIL="--seq-lens 16,32,48 --batch 2 --tokens-per-step 96"
  GEMM="--tokens 64 --square 64 --gemm-dtype fp32 --window-s 0.002"
  OLD="--sessions 1 --warmup 1 --windows 2 --iters 1"; OLD3="--sessions 1 --warmup 1 --windows 3 --iters 1"
  NEW="--sessions 2 --warmup 1 --windows 3"  # on the CPU one session is the default: ask for two
  NEW_ONE="--warmup 1 --windows 3"           # kernels measures in one session (its rows are summed)
else
  M="--preset 250m --dtype bf16 --seed 0"
  STEP="--batch 4 --seq-len 2048"
  SEQS="--seq-lens 512,1024,2048,4096,6144,8192 --batch 4 --tokens-per-step 24576"
  UTIL="--seq-lens 1024,2048,4096 --batch 4 --tokens-per-step 12288"
  GEMM="--tokens 16384 --square 8192 --gemm-dtype bf16 --window-s 0.02"
  OLD="--sessions 1 --warmup 2 --windows 5 --iters 2"      # sweep, kernels, ceiling: as their params record
  OLD3="--sessions 1 --warmup 2 --windows 7 --iters 2"     # optimizer, ablation: seven rounds
  NEW=""                                                   # the defaults: 3 sessions, 2 + 9 x 1 calls
  NEW_ONE=""                                               # kernels: one session whatever the default
fi
UTIL_OLD=$OLD; GRAPH_OLD=$OLD3
if [ "$SMOKE" = 0 ]; then  # util and the graph runs recorded three warm-up calls and windows of three
  UTIL_OLD="--sessions 1 --warmup 3 --windows 5 --iters 3"
  GRAPH_OLD="--sessions 1 --warmup 3 --windows 7 --iters 3"
fi

# cheapest first (estimated from one-process runs): a cut-off leaves the cheap pairs measured
pair ceiling 120 "$OLD" gemm $M $GEMM
pair optimizer 120 "$OLD3" optimizer $M $STEP
pair ablation 150 "$OLD3" ablate $M $STEP --arms no-input-copy,no-optimizer,no-loss-head,no-attention
NEWX=$NEW_ONE pair kernels 150 "$OLD" kernels $M $STEP --steps 3
pair util 150 "$UTIL_OLD" step-scaling --utilisation $M $UTIL --modes fixed_batch
pair graph_eager 150 "$GRAPH_OLD" optimizer --utilisation --cuda-graph $M $STEP
pair sweep 240 "$OLD" step-scaling $M $SEQS --modes fixed_batch,fixed_tokens
if [ "$SMOKE" = 0 ]; then  # compiling on a 2-core CPU takes minutes: the compiled runs only on the GPU
  NEWX=$NEW_ONE pair kernels_compiled 240 "$OLD" kernels --compile $M $STEP --steps 3
  pair graph_compiled 240 "$GRAPH_OLD" optimizer --utilisation --cuda-graph --compile $M $STEP
  pair sweep_compiled 400 "$OLD" step-scaling --compile $M $SEQS --modes fixed_tokens
fi
recover_journals
rm -rf "$CACHES"

"$PY" - "$OUT" <<'PY' | tee -a "$LOG"
"""Per run: wall seconds of each design and their ratio; in total over the pairs where both designs ran."""
import csv, json, sys
from pathlib import Path

from measure.evidence.envelope import parse
from measure.evidence.store import Store

out = Path(sys.argv[1])
rows = list(csv.DictReader((out / "sessions_times.tsv").open(), delimiter="\t"))
runs = {}
for r in rows:
    runs.setdefault(r["part"], {})[r["design"]] = {"wall_s": float(r["wall_s"]) if r["wall_s"] else None, "rc": r["rc"]}
pairs = []
for part, both in runs.items():
    today, new = both.get("today", {}), both.get("sessions", {})
    done = all(x.get("wall_s") is not None and x.get("rc") in ("0", "1") for x in (today, new))
    ratio = new["wall_s"] / today["wall_s"] if done else None
    pairs.append({"part": part, "today": today, "sessions": new, "both_ran": done, "ratio": ratio})
both = [p for p in pairs if p["both_ran"]]
total_today = sum(p["today"]["wall_s"] for p in both)
total_new = sum(p["sessions"]["wall_s"] for p in both)
docs = {}
for design in ("today", "sessions"):
    store = Store(out / f"archive-{design}")
    for path in store.iter_paths():
        d = parse(path.read_bytes(), str(path))
        docs.setdefault(design, []).append({
            "probe": d["probe"], "status": d["status"], "sessions": d["params"].get("sessions"),
            "samples": len(d["data"].get("samples", [])), "error": d.get("error"),
        })
summary = {
    "pairs": pairs,
    "total_today_s": total_today,
    "total_sessions_s": total_new,
    "ratio": total_new / total_today if total_today else None,
    "pairs_compared": len(both),
    "evidence": docs,
}
(out / "sessions_cost.json").write_text(json.dumps(summary, indent=1))
for p in pairs:
    r = f"{p['ratio']:.2f}x" if p["ratio"] else "-"
    print(f"{p['part']:18s} today {p['today'].get('wall_s')} s  sessions {p['sessions'].get('wall_s')} s  {r}")
print(f"total over {len(both)} pairs: today {total_today:.1f} s, sessions {total_new:.1f} s, ratio "
      + (f"{summary['ratio']:.2f}" if summary["ratio"] else "-"))
PY
say "done"
