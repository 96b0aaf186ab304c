#!/usr/bin/env bash
# Cold start of the webhook function binary, process start -> first event handled.
#
#   bench/cold_start.sh [RUNS]       # default 30 runs (after 3 warm-up runs)
#
# Builds the release `webhook` binary (the same profile `cargo lambda build --release` uses),
# then runs it against a fake Lambda Runtime API (bench/cold_start.py) that serves
# events/webhook-push.json (signed with the events' test secret, a fresh delivery id per run)
# and times spawn -> the invocation's /response. Each run is a full cold start: the binary
# builds its state store, reads the webhook secret and makes its SQS client before asking for
# the event, then verifies, dedupes (SQLite), and sends the job to a real SQS FIFO queue on
# moto (started here unless AWS_ENDPOINT_URL is set). Baseline: spawn -> exit of /bin/true.
#
# With hyperfine installed, also measures the whole process lifetime (start -> exit after the
# first event: the fake API answers the second /next with 410, which ends the runtime).
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-30}"
target="${CARGO_TARGET_DIR:-target}"

# SQLite state: the shipped function has no SQLite (each binary links what it runs), so this
# local measurement turns it on; bench/cold_start_stack.sh times the shipped build on DynamoDB.
cargo build --release --locked -p astrolift-fn-webhook --bin webhook --features astrolift-bot/sqlite
binary="$target/release/webhook"

started_moto=""
if [[ -z "${AWS_ENDPOINT_URL:-}" ]]; then
  eval "$(scripts/moto.sh start 0)"
  started_moto=1
fi
work="$(mktemp -d)"
cleanup() {
  [[ -n "${server_pid:-}" ]] && kill "$server_pid" 2>/dev/null || true
  [[ -n "$started_moto" ]] && scripts/moto.sh stop >/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

queue_url="$(python3 - <<'EOF'
import os, uuid, boto3
sqs = boto3.client("sqs", endpoint_url=os.environ["AWS_ENDPOINT_URL"],
                   region_name=os.environ.get("AWS_REGION", "us-east-1"))
name = f"bench-cold-start-{uuid.uuid4().hex[:12]}.fifo"
print(sqs.create_queue(QueueName=name, Attributes={"FifoQueue": "true"})["QueueUrl"])
EOF
)"

export GITHUB_WEBHOOK_SECRET=astrolift-events-test-secret
export ASTROLIFT_STATE="sqlite:$work/state.db" ASTROLIFT_BLOBS="file:$work/blobs"
export ASTROLIFT_SYNC_QUEUE_URL="$queue_url" ASTROLIFT_LOG_LEVEL=warn
unset GITHUB_WEBHOOK_SECRET_ID GITHUB_WEBHOOK_SECRET_PREVIOUS_ID

echo "== spawn -> first event answered (fake Runtime API, moto SQS FIFO, SQLite state)"
python3 bench/cold_start.py --binary "$binary" --event events/webhook-push.json --runs "$runs"

if command -v hyperfine >/dev/null; then
  echo "== whole process: start -> exit after the first event (hyperfine)"
  python3 bench/cold_start.py --serve --event events/webhook-push.json > "$work/port" &
  server_pid=$!
  for _ in $(seq 1 50); do [[ -s "$work/port" ]] && break; sleep 0.1; done
  port="$(cat "$work/port")"
  AWS_LAMBDA_RUNTIME_API="127.0.0.1:$port" AWS_LAMBDA_FUNCTION_NAME=astrolift-webhook \
  AWS_LAMBDA_FUNCTION_MEMORY_SIZE=128 AWS_LAMBDA_FUNCTION_VERSION='$LATEST' \
    hyperfine -N -i --warmup 3 --runs "$runs" --style basic "$binary" /bin/true
fi
