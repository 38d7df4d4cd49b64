#!/usr/bin/env bash
# The full batch-sweep campaign (bench/campaigns/batch-sweep-h200.yaml: four presets x four contexts,
# each curve to a confirmed OOM) on ONE GPU with submitit's local executor, in one device command:
# plan (first call only), run until every curve is done or no new point may start after BUDGET_S
# seconds, then collect and audit into $OUT/archive, the wall-time breakdown, and tar everything.
#   OUT=/tmp/out bash bench/h200_campaign_sweep.sh            # on the H200 (CUDA_VISIBLE_DEVICES=0 unless set)
#   OUT=/tmp/out bash bench/h200_campaign_sweep.sh --smoke    # CPU, tiny preset, same flow
# What comes back (6 files, none deeper than $OUT): campaign.log, status.txt, audit.txt, breakdown.txt,
# archive.tgz (the collected evidence: manifest, every point, the campaign and audit documents) and
# campaign.tar.gz (the campaign folder). A call stopped at the budget is resumed by running this
# script again: on the same warm machine it finds build/campaign-h200; on a fresh one put the
# campaign.tar.gz that came back at build/campaign.tar.gz and carry it (carry: ["build/campaign.tar.gz"]).
# FOLLOW_FROM=DIR (a finished sweep's folder) plans an optimizer-timing follow-up of it instead of the spec,
# FOLLOW_PRESETS=20m,90m only those presets' curves (campaign plan --optimizer-timing-from DIR --presets ...):
#   tar -xzf bench/results/campaign-h200-v2-state.tar.gz && FOLLOW_FROM=build/campaign-h200 FOLLOW_PRESETS=20m \
#     CAMPAIGN_DIR=build/followup-h200 OUT=/tmp/out bash bench/h200_campaign_sweep.sh
# Needs submitit (carried as .whl/submitit-*.whl) plus cloudpickle, yaml and filelock (on the device).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${OUT:?set OUT to the folder results go to}"
mkdir -p "$OUT"
export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
if compgen -G ".whl/*.whl" > /dev/null; then  # the device has no submitit: wheels carried with the tree
  python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site:.
else
  export PYTHONPATH=.
fi
python3 -c "import submitit, cloudpickle, yaml, filelock" || { echo "missing a campaign dependency (above)"; exit 2; }
SPEC=bench/campaigns/batch-sweep-h200.yaml
DIR=${CAMPAIGN_DIR:-build/campaign-h200}
BUDGET_S=${BUDGET_S:-450}   # no new point after 7.5 min; points in flight finish; collect + audit follow
if [ "${1:-}" = "--smoke" ]; then
  SPEC=bench/campaigns/batch-sweep-smoke.yaml
  DIR=${CAMPAIGN_DIR:-build/campaign-smoke}
  export CUDA_VISIBLE_DEVICES=
fi
# a campaign carried back from an earlier machine (the tar an earlier call left in $OUT, put at build/)
if [ ! -f "$DIR/manifest.id" ] && [ -f build/campaign.tar.gz ]; then tar -xzf build/campaign.tar.gz; fi
pb() { python3 -m probebook "$@"; }
start=$(date +%s)
if [ ! -f "$DIR/manifest.id" ] && [ -n "${FOLLOW_FROM:-}" ]; then
  pb campaign plan --optimizer-timing-from "$FOLLOW_FROM" ${FOLLOW_PRESETS:+--presets "$FOLLOW_PRESETS"} --output "$DIR"
  resume=()
elif [ ! -f "$DIR/manifest.id" ]; then
  pb campaign plan "$SPEC" --output "$DIR"
  resume=()
else
  resume=(--resume --retry-failed)  # a point cut off with the previous call (no result) runs again
fi
echo "campaign: $DIR on CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES}; budget ${BUDGET_S}s" | tee -a "$OUT/campaign.log"
set +e
# the hard stop leaves about 80 s of the 10-minute command for collect, audit and the tars
timeout -s INT $((BUDGET_S + 60)) python3 -m probebook campaign run "$DIR" --executor local "${resume[@]}" \
  --budget-s "$BUDGET_S" 2>&1 | tee -a "$OUT/campaign.log"
rc=${PIPESTATUS[0]}
set -e
end=$(date +%s)
echo "run: exit $rc after $((end - start)) s ($([ "$rc" = 3 ] && echo 'stopped at the budget: call this script again to resume' || echo finished))" \
  | tee -a "$OUT/campaign.log"
pb campaign status "$DIR" > "$OUT/status.txt" 2>&1 || true
pb --archive "$OUT/archive" campaign collect "$DIR" 2>&1 | tee -a "$OUT/campaign.log"
pb --archive "$OUT/archive" campaign audit "$DIR" > "$OUT/audit.txt" 2>&1 || true
cat "$OUT/audit.txt"
python3 bench/campaign_breakdown.py "$DIR" 2>&1 | tee "$OUT/breakdown.txt" || true
tar -czf "$OUT/campaign.tar.gz" "$DIR"
tar -czf "$OUT/archive.tgz" -C "$OUT/archive" . && rm -rf "$OUT/archive"
echo "total: $(( $(date +%s) - start )) s" | tee -a "$OUT/campaign.log"
