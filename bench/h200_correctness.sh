#!/usr/bin/env bash
# Hidden costs of issue 10 on one GPU, from the repo root (the correctness probes are in h200_correctness_probes.sh):
#   CUDA_VISIBLE_DEVICES=0 PYTHONPATH=. OUT=/some/dir bash bench/h200_correctness.sh        # H200, <= ~3.5 min
#   PYTHONPATH=. OUT=/tmp/c bash bench/h200_correctness.sh --smoke                        # CPU, tiny: checks the script
# Parts, each one process under a time limit (never fatal to the others):
#   nvml-overhead        bench/nvml_overhead.py: the 250m step (batch 4 x 2048, bf16, eager) with the NVML sampler
#                        on beside off, 15 interleaved rounds of 5 steps -> $OUT/nvml_overhead.json
#   optimizer-graph      the optimizer probe at 250m, batch 4 x 2048, eager, with --cuda-graph: the whole update
#                        captured once and replayed (arm "graph") beside the eager steps, NVML sampled per window
#   optimizer-graph-compiled  the same with --compile: the CUDA-graph step beside the compiled one
#   step-scaling-util    step-scaling at 250m, fixed batch 4, S = 1024, 2048, 4096, eager, NVML sampled per window
# Evidence goes to $OUT/archive (a probebook archive); logs and a summary to $OUT.
set -u
TAG=correctness OUT_NAME=correctness
. "$(dirname "$0")/lib.sh" "$@"
if [ "$SMOKE" = 1 ]; then
  DEV="--device cpu"
  NVML="--preset tiny --device cpu --batch 2 --seq-len 32 --rounds 3 --iters 2"
  SHAPE="--preset tiny --batch 2 --seq-len 64 --warmup 1 --iters 1"
  SCALING="--preset tiny --batch 2 --seq-lens 32,64,96 --modes fixed_batch --warmup 1 --windows 2 --iters 1"
  LIMIT_NVML=200; LIMIT_OPT=200; LIMIT_SCALING=200
else
  DEV="--device cuda"
  NVML="--preset 250m --device cuda --batch 4 --seq-len 2048 --rounds 15 --iters 5"
  SHAPE="--preset 250m --batch 4 --seq-len 2048 --warmup 3 --iters 3"
  SCALING="--preset 250m --batch 4 --seq-lens 1024,2048,4096 --modes fixed_batch --warmup 3 --windows 5 --iters 3"
  LIMIT_NVML=60; LIMIT_OPT=60; LIMIT_SCALING=45
fi

say "start nvml-overhead"
timeout -s INT -k 15 "$LIMIT_NVML" "$PY" bench/nvml_overhead.py $NVML --out "$OUT/nvml_overhead.json" >> "$LOG" 2>&1
say "end nvml-overhead: rc=$?"
probe optimizer-graph "$LIMIT_OPT" optimizer $SHAPE --rounds 7 --cuda-graph --utilisation
probe optimizer-graph-compiled "$LIMIT_OPT" optimizer $SHAPE --rounds 7 --cuda-graph --utilisation --compile
probe step-scaling-util "$LIMIT_SCALING" step-scaling $SCALING --utilisation

recover_journals
"$PY" - "$ARCHIVE" "$OUT/nvml_overhead.json" <<'PY' 2>&1 | tee "$OUT/correctness-summary.txt" | tee -a "$LOG"
import json
import sys
from pathlib import Path

from measure.evidence.envelope import parse
from measure.evidence.store import Store

bench = Path(sys.argv[2])
if bench.exists():
    b = json.loads(bench.read_text())
    print(f"nvml overhead: {b['overhead']:+.4%} (on {b['median_step_s']['on']:.6f} s, off {b['median_step_s']['off']:.6f} s,"
          f" {b['readings']} readings, reader {b['reader']}, within goal: {b['within_goal']})")
store = Store(sys.argv[1])
print(f"verify: {len(store.ids())} evidence, {len(store.verify())} mismatched")
for path in store.iter_paths():
    d = parse(path.read_bytes(), str(path))
    if d["probe"] not in ("optimizer", "step-scaling"):
        continue
    ident = "sha256:" + path.parent.name + path.name[:-5]
    p, data = d["params"], d["data"]
    print(f"{ident[:19]} {d['probe']} compile={p.get('compile')} {d['status']} {d.get('error') or ''}")
    print("  summary:", data.get("summary"))
    print("  cuda graph:", data.get("cuda_graph"))
    print("  window failures:", data.get("window_failures"))
PY
say "done"
