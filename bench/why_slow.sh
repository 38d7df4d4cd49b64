#!/usr/bin/env bash
# Issue 43's point-5 measurements on one GPU, then the remeasure queue with what is left. From the repo root:
#   OUT=/some/dir HARD_S=540 bash bench/why_slow.sh        # parts below, then `remeasure run` until HARD_S
#   OUT=/some/dir HARD_S=540 ONLY=queue bash bench/why_slow.sh   # the remeasure queue alone (a later call)
# Parts, each under its own limit and never fatal to the others:
#   sweep + followup  bench/campaigns/followup-captured.yaml (90m at 1024, the sweep protocol's optimizer settings),
#                     then its optimizer follow-up in the captured whole update (--optimizer-mode captured),
#                     collected, audited and paired into one campaign report
#   stream-250m       layer streaming at depths 1 and 2 in three sessions: bytes, loads and GB/s per step
#   hvp-epoch         forward-over-reverse H.v at 20m over 4 distinct batches (epoch statistics), compiler cache
#                     state recorded, three sessions
#   queue             `probebook remeasure run` over the current records; on a card other than the H200 its runs are
#                     that card's sessions of the H200 keys (--card). Resumable: the queue's archive is runs/rm/archive,
#                     which a later call on the same warm machine continues from
# Everything (evidence under $OUT/archive and runs/rm/archive, campaign folders, logs) is packed into $PACK.
set -u
TAG=why
OUT_NAME=why
. "$(dirname "$0")/lib.sh" "$@"
HARD_S=${HARD_S:-540}
TIMES="$OUT/times.tsv"
DEV="--device cuda"
if compgen -G ".whl/*.whl" > /dev/null; then  # the device has no submitit: wheels carried with the tree
  "$PY" -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:.
fi
CARD=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
say "card: $CARD"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/gpu.txt" 2>&1
left() { echo $(( HARD_S - ($(date +%s) - START) )); }
pb() { "$PY" -m probebook "$@"; }

if [ "${ONLY:-}" != queue ]; then
  C=runs/why/sweep F=runs/why/followup
  if [ ! -f "$C/manifest.id" ]; then pb campaign plan bench/campaigns/followup-captured.yaml --output "$C" >> "$LOG" 2>&1; fi
  say "sweep"
  timeout -s INT 200 "$PY" -m probebook campaign run "$C" --executor local --budget-s 130 >> "$LOG" 2>&1
  say "sweep rc=$?"
  pb --archive "$ARCHIVE" campaign collect "$C" >> "$LOG" 2>&1
  if [ ! -f "$F/manifest.id" ]; then
    pb campaign plan --optimizer-timing-from "$C" --optimizer-mode captured --output "$F" >> "$LOG" 2>&1
  fi
  say "followup"
  timeout -s INT 200 "$PY" -m probebook campaign run "$F" --executor local --budget-s 130 >> "$LOG" 2>&1
  say "followup rc=$?"
  pb --archive "$ARCHIVE" campaign collect "$F" >> "$LOG" 2>&1
  pb --archive "$ARCHIVE" campaign audit "$C" > "$OUT/audit-sweep.txt" 2>&1
  pb --archive "$ARCHIVE" campaign audit "$F" > "$OUT/audit-followup.txt" 2>&1
  pb --archive "$ARCHIVE" campaign report --throughput "$C" --optimizer "$F" --output "$OUT/report.json" >> "$LOG" 2>&1
  say "report rc=$?"
  probe stream-250m 150 stream --preset 250m --depths 1,2 --sessions 3
  probe hvp-epoch 120 hvp --preset 20m --batches 4 --seq-len 1024 --methods forward-over-reverse --modes compiled \
    --dtypes bf16 --epoch-batches 4 --sessions 3
  recover_journals
fi

rest=$(left)
if [ "$rest" -gt 60 ]; then
  card=()
  case "$CARD" in *H200*) ;; *) card=(--card "$CARD") ;; esac
  say "queue: ${rest}s"
  pb remeasure run "${card[@]}" --hard-s "$rest" --out runs/rm/archive \
    --records "${RECORDS:-h200-ceilings,step-anatomy-250m,optimizer-in-graph-250m,layer-streaming,eval-boundary-h200,moe-experts-h200}" \
    >> "$OUT/queue.log" 2>&1
  say "queue rc=$?"
fi
say "done"
# one file back: the parts' evidence, the campaign folders, the queue's archive and every log
tar -czf "${PACK:-$OUT/../why-pack.tgz}" -C "$PWD" "${OUT#$PWD/}" runs/why runs/rm 2>/dev/null
exit 0
