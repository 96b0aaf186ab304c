#!/usr/bin/env bash
# Benchmark: first apply and no-op re-run of an N-agent monorepo,
# on the embedded stores (SQLite + a blob directory) and on DynamoDB + S3
# (moto_server, started here), in the same run.
#
# Usage: bench/apply.sh [N]         (default 1000)
#        RUNS=5 bench/apply.sh 1000 (embedded runs, each on fresh stores; default 5)
#        SKIP_AWS=1 bench/apply.sh  (embedded stores only)
# Prints one JSON line per run (wall seconds, blob PUTs, state writes of
# each run, and the no-op / first ratio), then the medians of the embedded runs.
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
n="${1:-1000}"
work="${BENCH_DIR:-/tmp/astrolift-bench-apply}"
target="${CARGO_TARGET_DIR:-$repo/target}"

(cd "$repo" && cargo build --release --quiet -p astrolift-sync --example apply_bench)
bin="$target/release/examples/apply_bench"

rm -rf "$work" && mkdir -p "$work"
python3 "$repo/bench/gen_monorepo.py" "$n" "$work/repo" >/dev/null
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); agents: $n"

runs="${RUNS:-5}"
for run in $(seq "$runs"); do
  rm -rf "$work/state.db"* "$work/blobs"
  echo -n "sqlite+file:  "
  "$bin" "$work/repo" "sqlite:$work/state.db" "file:$work/blobs" | tee -a "$work/embedded.jsonl"
done
python3 - "$work/embedded.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
first = statistics.median(r["first"]["seconds"] for r in rows)
noop = statistics.median(r["noop"]["seconds"] for r in rows)
ratio = statistics.median(r["noop_over_first"] for r in rows)
print(f"sqlite+file medians of {len(rows)} runs: first {first:.3f} s, no-op {noop:.3f} s, "
      f"median ratio {ratio:.1%}")
PY
[ -n "${SKIP_AWS:-}" ] && exit 0

eval "$("$repo/scripts/moto.sh" start 0)"
trap '"$repo/scripts/moto.sh" stop >/dev/null 2>&1 || true' EXIT
echo -n "dynamodb+s3:  "
"$bin" "$work/repo" "dynamodb:bench-$$" "s3://bench-$$"
