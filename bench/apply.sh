#!/usr/bin/env bash
# Benchmark of issue 5: first apply and no-op re-run of an N-agent monorepo,
# on the embedded stores (SQLite + a blob directory) and on DynamoDB + S3
# (moto_server, started here), in the same run.
#
# Usage: bench/apply.sh [N]         (default 1000)
# Prints one JSON line per backend (wall seconds, blob PUTs, state writes of
# each run, and the no-op / first ratio).
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

echo -n "sqlite+file:  "
"$bin" "$work/repo" "sqlite:$work/state.db" "file:$work/blobs"

eval "$("$repo/scripts/moto.sh" start 0)"
trap '"$repo/scripts/moto.sh" stop >/dev/null 2>&1 || true' EXIT
echo -n "dynamodb+s3:  "
"$bin" "$work/repo" "dynamodb:bench-$$" "s3://bench-$$"
