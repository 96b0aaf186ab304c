#!/usr/bin/env bash
# bench/load.sh for two builds side by side: rounds alternate BEFORE and AFTER,
# so both see the same machine (quote the medians of the rounds).
#
#   BEFORE=path/to/astrolift AFTER=path/to/astrolift bench/load_ab.sh OUT [ROUNDS]
#
# CONNECTIONS, CASES and DURATION are passed to bench/load.sh (defaults "1 8",
# "issues issues-new", 10). FAKE as for bench/load.sh. Each round's tables are
# appended to OUT, under a "## before|after round N" line with the time and load.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$(realpath -m "$1")
ROUNDS=${2:-3}
: "${BEFORE:?BEFORE=path to the first build}" "${AFTER:?AFTER=path to the second build}"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
export CONNECTIONS=${CONNECTIONS:-"1 8"} CASES=${CASES:-"issues issues-new"} DURATION=${DURATION:-10}
WORK=${TMPDIR:-/tmp}/astrolift-bench-load-ab
for round in $(seq "$ROUNDS"); do
  for name in before after; do
    bin=$BEFORE
    [ "$name" = after ] && bin=$AFTER
    echo "## $name round $round $(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)" >> "$OUT"
    BIN=$bin "$ROOT/bench/load.sh" "$WORK-$name" >> "$OUT" 2>&1
  done
done
