#!/usr/bin/env bash
# The mask probe on one GPU (issue 11): every mask kind (six, with padded-causal since probe version 2)
# at 90m and 250m, fixed width 2048, batch 4.
# Run from the repo root:
#   PYTHONPATH=. OUT=/some/dir bash bench/h200_mask.sh            # H200: about 3 minutes
#   PYTHONPATH=. OUT=/tmp/x DEVICE=cpu bash bench/h200_mask.sh --smoke   # tiny preset: checks the mechanics
# Evidence goes to $OUT/archive (import it with `probebook archive add $OUT/archive`), the log and the
# per-run wall times to $OUT. Each run is its own process under `timeout`; one failing never stops the next.
set -u
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
DEVICE=${DEVICE:-cuda}
OUT=${OUT:-$PWD/mask-out}
mkdir -p "$OUT/archive"
LOG="$OUT/mask.log"
TIMES="$OUT/probe_times.tsv"
: > "$TIMES"
export PYTHONPATH="${PYTHONPATH:-.}"
export PYTHONUNBUFFERED=1
START=$(date +%s)
HARD_S=${HARD_S:-240}   # the whole script stays under about 4 minutes

say() { echo "[mask $(( $(date +%s) - START ))s] $*" | tee -a "$LOG" >&2; }

probe() {  # probe NAME TIMEOUT_S ARGS... : one probe process, logged, never fatal
  local name=$1 limit=$2; shift 2
  local rest=$(( HARD_S - ($(date +%s) - START) ))
  if [ "$rest" -lt 15 ]; then
    say "skip $name: only ${rest}s left"; printf '%s\t0\tskipped\n' "$name" >> "$TIMES"; return
  fi
  [ "$limit" -gt "$rest" ] && limit=$rest
  local t0=$(date +%s)
  say "start $name: python -m measure mask $*"
  timeout "$limit" "$PY" -m measure --archive "$OUT/archive" mask "$@" >> "$LOG" 2>&1
  local rc=$?
  printf '%s\t%s\t%s\n' "$name" "$(( $(date +%s) - t0 ))" "$rc" >> "$TIMES"
  say "end $name: rc=$rc"
}

"$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())" >> "$LOG" 2>&1
if [ "${1:-}" = "--smoke" ]; then  # the same runs on the tiny preset: a typo fails here, not on the GPU
  A=tiny; B=tiny; W="--device $DEVICE --seq-len 128 --batch 2 --warmup 1 --rounds 2 --iters 1 --steps 1 --sliding-window 32"
else
  A=90m; B=250m; W="--device $DEVICE --seq-len 2048 --batch 4 --warmup 3 --rounds 7 --iters 3 --steps 2 --sliding-window 512"
fi
probe mask-$A 110 --preset $A $W
probe mask-$B 120 --preset $B $W
# the local/global pattern: every second layer global (Gemma 2), only the kinds it changes
probe mask-$B-global2 60 --preset $B $W --global-every 2 --kinds causal,sliding
for j in "$OUT"/archive/journal/*.jsonl; do
  [ -e "$j" ] || continue
  say "recover $j"
  "$PY" -m measure --archive "$OUT/archive" recover "$j" >> "$LOG" 2>&1 && rm -f "$j"
done
"$PY" - "$OUT/archive" <<'PY' | tee -a "$LOG"
import sys
from measure.evidence import parse
from measure.store import Store
store = Store(sys.argv[1])
for path in store.iter_paths():
    d = parse(path.read_bytes(), str(path))
    kinds = d["data"].get("observed", {}).get("kinds", {})
    medians = {p["kind"]: round(p["median_s"] * 1e3, 2) for p in d["data"].get("points", []) if "kind" in p}
    print(d["params"].get("preset"), d["status"], d.get("error") or "", "band ok:", d["data"].get("band_check", {}).get("ok"),
          "padded equivalence:", d["data"].get("padded_equivalence"))
    for kind, seen in kinds.items():
        names = [k["kernel"][:70] for k in seen["attention_kernels"][:3]]
        print(f"  {kind:9s} {seen['sdpa_backend']!s:10s} {medians.get(kind)} ms  {names}")
PY
say "done"
