#!/usr/bin/env bash
# The full batch-sweep campaign (bench/campaigns/batch-sweep-h200.yaml) on ONE GPU with submitit's
# local executor: plan (first call only), run for at most BUDGET_S seconds of submissions, then
# collect and audit into $OUT/archive. A call that stops at the budget leaves the campaign folder
# (build/campaign-h200, kept between calls on a warm machine) to be resumed by the next call of
# this same script; its tar also lands in $OUT so it can be carried back if the machine went cold.
#   OUT=/tmp/out CUDA_VISIBLE_DEVICES=1 bash bench/h200_campaign_sweep.sh          # on the H200
#   OUT=/tmp/out bash bench/h200_campaign_sweep.sh --smoke                          # CPU, tiny preset
set -euo pipefail
cd "$(dirname "$0")/.."
: "${OUT:?set OUT to the folder results go to}"
mkdir -p "$OUT"
if compgen -G ".whl/*.whl" > /dev/null; then  # the device has no submitit: wheels carried with the tree
  python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site:.
else
  export PYTHONPATH=.
fi
SPEC=bench/campaigns/batch-sweep-h200.yaml
DIR=${CAMPAIGN_DIR:-build/campaign-h200}
BUDGET_S=${BUDGET_S:-420}   # no new point after 7 min; points in flight finish; collect + audit follow
if [ "${1:-}" = "--smoke" ]; then
  SPEC=bench/campaigns/batch-sweep-smoke.yaml
  DIR=${CAMPAIGN_DIR:-build/campaign-smoke}
fi
# a campaign carried back from an earlier machine (the tar an earlier call left in $OUT, put at build/)
if [ ! -f "$DIR/manifest.id" ] && [ -f build/campaign.tar.gz ]; then tar -xzf build/campaign.tar.gz; fi
pb() { python3 -m probebook "$@"; }
start=$(date +%s)
if [ ! -f "$DIR/manifest.id" ]; then
  pb campaign plan "$SPEC" --output "$DIR"
  resume=()
else
  resume=(--resume --retry-failed)  # a point cut off with the previous call (no result) runs again
fi
echo "campaign: $DIR on CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-unset}; budget ${BUDGET_S}s" | tee -a "$OUT/campaign.log"
set +e
timeout -s INT 540 python3 -m probebook campaign run "$DIR" --executor local "${resume[@]}" --budget-s "$BUDGET_S" \
  2>&1 | tee -a "$OUT/campaign.log"
rc=${PIPESTATUS[0]}
set -e
end=$(date +%s)
echo "run: exit $rc after $((end - start)) s ($([ "$rc" = 3 ] && echo 'stopped at the budget: call this script again to resume' || echo finished))" \
  | tee -a "$OUT/campaign.log"
pb campaign status "$DIR" > "$OUT/status.txt" 2>&1 || true
pb --archive "$OUT/archive" campaign collect "$DIR" | tee -a "$OUT/campaign.log"
pb --archive "$OUT/archive" campaign audit "$DIR" > "$OUT/audit.txt" 2>&1 || true
cat "$OUT/audit.txt"
python3 bench/campaign_breakdown.py "$DIR" | tee "$OUT/breakdown.txt"
tar -czf "$OUT/campaign.tar.gz" "$DIR"
echo "total: $(( $(date +%s) - start )) s" | tee -a "$OUT/campaign.log"
