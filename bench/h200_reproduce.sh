#!/usr/bin/env bash
# `probebook reproduce` in its re-measure mode, for each RECORD in turn, on one GPU, from the repo root:
#   CUDA_VISIBLE_DEVICES=0 PYTHONPATH=. OUT=/some/dir HARD_S=520 bash bench/h200_reproduce.sh agreement-250m masks-h200 step-anatomy-250m
# Each record's runs are one resumable campaign under .repro/runs/RECORD and its new evidence and reproduction
# document go to the archive .repro/archive (both ignored by git, at the same path on every call), so a second
# call that carries .repro back resumes where the first stopped: a finished run is never run again. HARD_S (default
# 520 s) bounds the whole call: each record gets what is left as --budget-s (no new run is submitted after it;
# reproduce exits 3) and `timeout` interrupts a run that would overrun it. .repro is packed as $OUT/repro.tgz
# (the device returns no deeply nested folder).
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
OUT=${OUT:?set OUT}
PY=${PYTHON:-python3}
HARD_S=${HARD_S:-520}
START=$(date +%s)
mkdir -p "$OUT" .repro/runs .repro/archive
for record in "$@"; do
  left=$(( HARD_S - ($(date +%s) - START) ))
  if [ "$left" -lt 30 ]; then echo "[reproduce] skip $record: ${left}s left" | tee -a "$OUT/reproduce.log"; continue; fi
  echo "[reproduce $(( $(date +%s) - START ))s] start $record (budget ${left}s)" | tee -a "$OUT/reproduce.log"
  timeout -s INT -k 20 "$left" "$PY" -m probebook --archive archive reproduce "$record" \
    --folder ".repro/runs/$record" --out .repro/archive --budget-s $(( left - 20 )) --point-timeout-s 300 ${RETRY:-} --json \
    > "$OUT/$record.json" 2>> "$OUT/reproduce.log"
  echo "[reproduce $(( $(date +%s) - START ))s] end $record: rc=$?" | tee -a "$OUT/reproduce.log"
done
tar -czf "$OUT/repro.tgz" .repro
