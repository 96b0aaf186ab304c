#!/usr/bin/env bash
# Cold start of the webhook function on the TEMPLATE's configuration, process
# start -> first event answered, with the AWS round trips it waits for one after another.
#
#   bench/cold_start_stack.sh [RUNS] [PROFILE]   # default 30 runs, profile `release`
#
# Unlike bench/cold_start.sh (environment secret, SQLite), every store is what
# infra/template.yaml gives the function, on moto (started here unless AWS_ENDPOINT_URL is
# set): the webhook secrets from Secrets Manager (GITHUB_WEBHOOK_SECRET_ID and
# GITHUB_WEBHOOK_SECRET_PREVIOUS_ID, ASTROLIFT_SECRETS=aws), DynamoDB state (the table shape
# of `astrolift_store::state::table_definition`, already migrated, as a running stack is),
# an S3 bucket, the SQS FIFO sync queue and the dispatch queue. bench/cold_start.py
# --count-aws records, per run: spawn -> the /response of events/webhook-push.json (202,
# fresh delivery id), the process's own CPU (user + system, whole life), and the longest
# chain of AWS calls made one after another before the answer.
#
# PROFILE=debug uses the debug binary (when a release build does not fit: say so with the
# figures). BENCH_BINARY=PATH skips the build and times that binary.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-30}"
profile="${2:-release}"
target="${CARGO_TARGET_DIR:-target}"

if [[ -n "${BENCH_BINARY:-}" ]]; then
  binary="$BENCH_BINARY"
  profile="$(basename "$(dirname "$binary")")"
elif [[ "$profile" == release ]]; then
  cargo build --release --locked -p astrolift-fn-webhook --bin webhook
  binary="$target/release/webhook"
else
  cargo build --locked -p astrolift-fn-webhook --bin webhook
  profile=debug
  binary="$target/debug/webhook"
fi

started_moto=""
if [[ -z "${AWS_ENDPOINT_URL:-}" ]]; then
  eval "$(scripts/moto.sh start 0)"
  started_moto=1
fi
cleanup() {
  [[ -n "$started_moto" ]] && scripts/moto.sh stop >/dev/null || true
}
trap cleanup EXIT

# shellcheck disable=SC1090
source <(python3 - <<'PY'
import os, uuid, boto3
endpoint, region = os.environ["AWS_ENDPOINT_URL"], os.environ.get("AWS_REGION", "us-east-1")
client = lambda service: boto3.client(service, endpoint_url=endpoint, region_name=region)
suffix = uuid.uuid4().hex[:12]
table = f"bench-cold-{suffix}"
string = lambda name: {"AttributeName": name, "AttributeType": "S"}
key = lambda name, kind: {"AttributeName": name, "KeyType": kind}
dynamodb = client("dynamodb")
dynamodb.create_table(
    TableName=table, BillingMode="PAY_PER_REQUEST",
    AttributeDefinitions=[string("pk"), string("sk"), string("gsi1pk"), string("gsi1sk")],
    KeySchema=[key("pk", "HASH"), key("sk", "RANGE")],
    GlobalSecondaryIndexes=[{"IndexName": "gsi1", "KeySchema": [key("gsi1pk", "HASH"), key("gsi1sk", "RANGE")],
                             "Projection": {"ProjectionType": "ALL"}}])
# A running stack's table is migrated: the markers a first read would otherwise write.
for marker in ("REPO_TRIGGER_COPIES", "REPO_TRIGGER_EVENT_COPIES"):
    dynamodb.put_item(TableName=table, Item={"pk": {"S": "MIGRATIONS"}, "sk": {"S": marker}, "copied": {"N": "0"}})
bucket = f"bench-cold-{suffix}"
client("s3").create_bucket(Bucket=bucket)
secrets = client("secretsmanager")
current = secrets.create_secret(Name=f"bench-cold-{suffix}/webhook", SecretString="astrolift-events-test-secret")["ARN"]
previous = secrets.create_secret(Name=f"bench-cold-{suffix}/webhook-previous", SecretString="bench-previous-secret")["ARN"]
sqs = client("sqs")
sync = sqs.create_queue(QueueName=f"bench-cold-sync-{suffix}.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
dispatch = sqs.create_queue(QueueName=f"bench-cold-dispatch-{suffix}")["QueueUrl"]
for name, value in {
    "ASTROLIFT_STATE": f"dynamodb:{table}", "ASTROLIFT_BLOBS": f"s3://{bucket}",
    "ASTROLIFT_SECRETS": "aws", "ASTROLIFT_SECRET_PREFIX": "astrolift/",
    "GITHUB_WEBHOOK_SECRET_ID": current, "GITHUB_WEBHOOK_SECRET_PREVIOUS_ID": previous,
    "ASTROLIFT_SYNC_QUEUE_URL": sync, "ASTROLIFT_DISPATCH_QUEUE_URL": dispatch,
    "GITHUB_APP_ID": "12345", "GITHUB_API_URL": "https://api.github.com",
    "ASTROLIFT_LOG_LEVEL": "warn",
}.items():
    print(f"export {name}='{value}'")
PY
)
unset GITHUB_WEBHOOK_SECRET GITHUB_WEBHOOK_SECRET_PREVIOUS

echo "== $profile webhook, template configuration: spawn -> first event answered"
python3 bench/cold_start.py --binary "$binary" --event events/webhook-push.json --runs "$runs" --count-aws
