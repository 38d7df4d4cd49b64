#!/usr/bin/env bash
# The mask probe on one GPU (issue 11): every mask kind (six, with padded-causal since probe version 2)
# at 90m and 250m, fixed width 2048, batch 4.
# Run from the repo root:
#   PYTHONPATH=. OUT=/some/dir bash bench/h200_mask.sh            # H200: about 3 minutes
#   PYTHONPATH=. OUT=/tmp/x DEVICE=cpu bash bench/h200_mask.sh --smoke   # tiny preset: checks the mechanics
# Evidence goes to $OUT/archive (import it with `probebook archive add $OUT/archive`), the log and the
# per-run wall times to $OUT. Each run is its own process under `timeout`; one failing never stops the next.
set -u
TAG=mask
. "$(dirname "$0")/lib.sh" "$@"
DEVICE=${DEVICE:-cuda}
TIMES="$OUT/probe_times.tsv"
: > "$TIMES"
HARD_S=${HARD_S:-240}   # the whole script stays under about 4 minutes (lib.sh's probe cuts each limit to it)

"$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())" >> "$LOG" 2>&1
if [ "$SMOKE" = 1 ]; then  # the same runs on the tiny preset: a typo fails here, not on the GPU
  A=tiny; B=tiny; W="--device $DEVICE --seq-len 128 --batch 2 --warmup 1 --rounds 2 --iters 1 --steps 1 --sliding-window 32"
else
  A=90m; B=250m; W="--device $DEVICE --seq-len 2048 --batch 4 --warmup 3 --rounds 7 --iters 3 --steps 2 --sliding-window 512"
fi
probe mask-$A 110 mask --preset $A $W
probe mask-$B 120 mask --preset $B $W
# the local/global pattern: every second layer global (Gemma 2), only the kinds it changes
probe mask-$B-global2 60 mask --preset $B $W --global-every 2 --kinds causal,sliding
recover_journals
"$PY" - "$ARCHIVE" <<'PY' | tee -a "$LOG"
import sys
from measure.evidence.envelope import parse
from measure.evidence.store import Store
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
