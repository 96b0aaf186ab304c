#!/usr/bin/env bash
# Idempotency: packaging an unchanged repository into S3 a second
# time uploads nothing. Starts moto, creates a bucket, runs
# `astrolift package --all DIR --store s3://…` twice on a generated
# N-agent monorepo, and counts the uploads of each run.
#
# Usage: bench/package_idempotency.sh [N]    (default 100)
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
n="${1:-100}"
work="$(mktemp -d)"
target="${CARGO_TARGET_DIR:-$repo/target}"
(cd "$repo" && cargo build --quiet -p astrolift-cli)
bin="$target/debug/astrolift"

export MOTO_STATE_DIR="$work/moto"
eval "$("$repo/scripts/moto.sh" start 0)"
trap '"$repo/scripts/moto.sh" stop >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
python3 - <<'PY'
import os, boto3
boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1").create_bucket(Bucket="idempotency")
PY
python3 "$repo/bench/gen_monorepo.py" "$n" "$work/repo" >/dev/null
for run in first second; do
  "$bin" package --all "$work/repo" --store s3://idempotency > "$work/$run.jsonl"
  echo "$run run: $(grep -c '"uploaded":true' "$work/$run.jsonl" || true) PUTs for $(wc -l < "$work/$run.jsonl") agents"
done
