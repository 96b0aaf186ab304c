#!/usr/bin/env bash
# Peak memory and wall time of the sync function (release, the shipped profile) handling one
# push of an N-agent monorepo (bench/gen_monorepo.py), on the template's stores on moto
# (DynamoDB, S3) and a standalone fake GitHub serving the tarball and the check run.
#
#   bench/sync_memory.sh [N] [RUNS]      # default 1000 agents, 3 runs
#
# Each run registers the repository on fresh stores and serves the function one SQS record
# of the push (bench/sync_memory.py), which prints the seconds to the response and the
# process's own peak RSS; the goal is 256 MiB, the template's MemorySize. The catalogue is
# the example one the fake serves, so every generated agent resolves its skills.
# SYNC_MEMORY_STDERR=PATH keeps the function's log; KEEP=1 keeps the work directory.
set -euo pipefail
cd "$(dirname "$0")/.."
agents="${1:-1000}"
runs="${2:-3}"
target="${CARGO_TARGET_DIR:-target}"
work="$(mktemp -d)"
cargo build --release --locked -p astrolift-fn-sync --bin sync
cargo build --locked -p astrolift-fake-github --bin fake-github -p astrolift-cli
python3 bench/gen_monorepo.py "$agents" "$work/repo" >/dev/null

eval "$(MOTO_STATE_DIR="$work/moto" scripts/moto.sh start 0)"
fake_pid=""
cleanup() {
  [[ -n "$fake_pid" ]] && kill "$fake_pid" 2>/dev/null || true
  MOTO_STATE_DIR="$work/moto" scripts/moto.sh stop >/dev/null 2>&1 || true
  [[ -n "${KEEP:-}" ]] || rm -rf "$work"
}
trap cleanup EXIT

sha=7777777777777777777777777777777777777777
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')"
"$target/debug/fake-github" --port "$port" --installation 51234567 --example-skill-repos yes \
  --repo "astrolift-demo/agents@main:$sha=$work/repo" >"$work/fake.env" &
fake_pid=$!
for _ in $(seq 100); do grep -q GITHUB_APP_PRIVATE_KEY_FILE "$work/fake.env" 2>/dev/null && break; sleep 0.1; done
set -a
# shellcheck disable=SC1091
source "$work/fake.env"
set +a
python3 - "$sha" >"$work/event.json" <<'PY'
import json, sys
job = {"version": 1, "delivery_id": "bench-sync-memory", "trigger": "push", "installation_id": 51234567,
       "repository": "astrolift-demo/agents", "repository_id": 812345678, "head_sha": sys.argv[1],
       "branch": "main", "fork": False, "commit_time": 1795978770, "before": None,
       "default_branch": "main", "pull_request": None}
record = {"messageId": "bench-1", "receiptHandle": "bench", "body": json.dumps(job),
          "attributes": {"ApproximateReceiveCount": "1", "MessageGroupId": "812345678-push"},
          "messageAttributes": {}, "eventSource": "aws:sqs",
          "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:astrolift-sync.fifo", "awsRegion": "us-east-1"}
print(json.dumps({"Records": [record]}))
PY

for run in $(seq "$runs"); do
  name="bench-sync-memory-$run-$$"
  python3 - "$name" <<'PY'
import os, sys, boto3
name = sys.argv[1]
client = lambda service: boto3.client(service, endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1")
string = lambda n: {"AttributeName": n, "AttributeType": "S"}
key = lambda n, kind: {"AttributeName": n, "KeyType": kind}
client("dynamodb").create_table(
    TableName=name, BillingMode="PAY_PER_REQUEST",
    AttributeDefinitions=[string("pk"), string("sk"), string("gsi1pk"), string("gsi1sk")],
    KeySchema=[key("pk", "HASH"), key("sk", "RANGE")],
    GlobalSecondaryIndexes=[{"IndexName": "gsi1", "KeySchema": [key("gsi1pk", "HASH"), key("gsi1sk", "RANGE")],
                             "Projection": {"ProjectionType": "ALL"}}])
client("s3").create_bucket(Bucket=name)
PY
  export ASTROLIFT_STATE="dynamodb:$name" ASTROLIFT_BLOBS="s3://$name" ASTROLIFT_LOG_LEVEL=warn
  "$target/debug/astrolift" register-repo astrolift-demo/agents --project-id bench --ref main >/dev/null
  "$target/debug/astrolift" catalogue register example/catalogue >/dev/null
  python3 bench/sync_memory.py --binary "$target/release/sync" --event "$work/event.json"
done
