# Shared preamble and helpers of the bench/h200_*.sh scripts. Source it first, with TAG set (the log's
# prefix and file name; OUT_NAME optionally, the default results folder's name) and the script's arguments:
#   TAG=trust
#   . "$(dirname "$0")/lib.sh" "$@"
# It moves to the repo root and sets
#   PY       the python to run (PYTHON, default python)
#   OUT      where results go (default ./$OUT_NAME-out in the repo root, OUT_NAME defaulting to TAG);
#            ARCHIVE=$OUT/archive (created), LOG=$OUT/$TAG.log
#   SMOKE    1 when the first argument is --smoke (tiny CPU runs that check the script), else 0
#   START    the start time, for `say` and the HARD_S budget
# and exports PYTHONPATH (default .) and PYTHONUNBUFFERED. Functions:
#   say MESSAGE...            a line "[TAG Ns] MESSAGE" to stderr and $LOG
#   probe PART LIMIT ARGS...  `python -m measure --archive $ARCHIVE ARGS... $DEV` under `timeout -s INT -k 15
#                             LIMIT` (SIGINT: the probe stores what it measured, as partial); logged, never
#                             fatal. With HARD_S set, LIMIT is cut to what is left of HARD_S seconds and a part
#                             with under 15 s left is skipped; with TIMES set, "PART<TAB>seconds<TAB>rc" is
#                             appended to that file
#   recover_journals          journals a hard-killed probe left become partial evidence (`measure recover`)
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
PY=${PYTHON:-python}
OUT=${OUT:-$PWD/${OUT_NAME:-$TAG}-out}
ARCHIVE="$OUT/archive"
LOG="$OUT/$TAG.log"
mkdir -p "$ARCHIVE"
export PYTHONPATH="${PYTHONPATH:-.}"
export PYTHONUNBUFFERED=1
START=$(date +%s)
SMOKE=0
[ "${1:-}" = "--smoke" ] && SMOKE=1

say() { echo "[$TAG $(( $(date +%s) - START ))s] $*" | tee -a "$LOG" >&2; }

probe() {
  local part=$1 limit=$2; shift 2
  if [ -n "${HARD_S:-}" ]; then
    local rest=$(( HARD_S - ($(date +%s) - START) ))
    if [ "$rest" -lt 15 ]; then
      say "skip $part: only ${rest}s left"
      [ -n "${TIMES:-}" ] && printf '%s\t0\tskipped\n' "$part" >> "$TIMES"
      return
    fi
    [ "$limit" -gt "$rest" ] && limit=$rest
  fi
  local t0
  t0=$(date +%s)
  say "start $part: python -m measure $*"
  # shellcheck disable=SC2086  # DEV is several words on purpose
  timeout -s INT -k 15 "$limit" "$PY" -m measure --archive "$ARCHIVE" "$@" ${DEV:-} >> "$LOG" 2>&1
  local rc=$?
  [ -n "${TIMES:-}" ] && printf '%s\t%s\t%s\n' "$part" "$(( $(date +%s) - t0 ))" "$rc" >> "$TIMES"
  say "end $part: rc=$rc"
}

recover_journals() {
  local j
  for j in "$ARCHIVE"/journal/*.jsonl; do
    [ -e "$j" ] || continue
    say "recover $j"
    "$PY" -m measure --archive "$ARCHIVE" recover "$j" >> "$LOG" 2>&1 && rm -f "$j"
  done
}
