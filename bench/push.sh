#!/usr/bin/env bash
# Benchmark: one push of an N-agent monorepo through a real
# `astrolift serve` (release build), the fake GitHub and moto (DynamoDB + S3),
# from the webhook POST to the completed check run. Prints one JSON line per
# run (seconds, GitHub call counts) and the median.
#
# Usage: bench/push.sh [N] (default 100);  RUNS=5 bench/push.sh 100
#        STORES=embedded bench/push.sh   (SQLite + a blob directory instead of moto)
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
n="${1:-100}"
runs="${RUNS:-5}"
work="${BENCH_DIR:-/tmp/astrolift-bench-push}"
rm -rf "$work" && mkdir -p "$work"
python3 "$repo/bench/gen_monorepo.py" "$n" "$work/repo" >/dev/null

eval "$("$repo/scripts/moto.sh" start 0)"
trap '"$repo/scripts/moto.sh" stop >/dev/null 2>&1 || true' EXIT
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); agents: $n"

cd "$repo"
# Release code without fat LTO: the same speed within noise, a much shorter build.
export CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16
cargo test --release --quiet -p astrolift-cli --test it --no-run
for _ in $(seq "$runs"); do
  ASTROLIFT_BENCH_REPO="$work/repo" ASTROLIFT_BENCH_STORES="${STORES:-aws}" cargo test --release --quiet -p astrolift-cli --test it \
    push_benchmark -- --ignored --nocapture 2>/dev/null | grep '^{' | tee -a "$work/runs.jsonl"
done
python3 - "$work/runs.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
print(f"{rows[0]['stores']}: median of {len(rows)} runs: {statistics.median(r['seconds'] for r in rows):.3f} s "
      f"(target 5 s); calls per push: tokens {rows[0]['token_requests']}, "
      f"tarballs {rows[0]['tarball_downloads']}, check runs {rows[0]['check_run_calls']}")
PY
