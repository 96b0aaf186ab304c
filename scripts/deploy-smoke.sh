#!/usr/bin/env bash
# Deploy smoke test: creates infra/template.yaml's stack in moto_server's CloudFormation and
# runs the store contract tests against the table and bucket that stack created.
#
#   eval "$(scripts/moto.sh start)"; scripts/deploy-smoke.sh
#
# scripts/test.sh calls it after starting moto. It needs AWS_ENDPOINT_URL (moto) and the
# Python packages aws-sam-translator and boto3 (installed here when missing).
set -euo pipefail
cd "$(dirname "$0")/.."

: "${AWS_ENDPOINT_URL:?start moto first: eval \"\$(scripts/moto.sh start)\"}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/astrolift-target}"
export AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-${AWS_REGION:-us-east-1}}"

if ! python3 -c 'import samtranslator, boto3, yaml' 2>/dev/null; then
  echo "installing aws-sam-translator and boto3 from PyPI" >&2
  python3 -m pip install --quiet aws-sam-translator boto3 pyyaml
fi

# A fresh stack name per run, so reruns against a long-lived moto do not collide.
stack="astrolift-smoke-$(date +%s)-$$"
work_dir="$(mktemp -d)"
trap 'rm -rf "$work_dir"' EXIT
env_file="$work_dir/stack.env"

echo "== deploy smoke: create stack $stack in moto's CloudFormation"
python3 scripts/deploy_smoke.py --stack "$stack" --env-file "$env_file"
# shellcheck disable=SC1090
source "$env_file"

echo "== deploy smoke: store contract tests against the stack's table and bucket"
# The tests share the stack's table, so they run one at a time, each on an emptied table.
ASTROLIFT_TEST_TABLE="$SMOKE_TABLE" ASTROLIFT_TEST_BUCKET="$SMOKE_BUCKET" RUST_TEST_THREADS=1 \
  scripts/test-binary.sh astrolift-store dynamo s3 template_shape

# ---- hook: one webhook end to end -----------------------------------------------------
# scripts/smoke-webhook.sh, when it exists, runs with the stack's names exported:
#   SMOKE_STACK, SMOKE_TABLE, SMOKE_BUCKET, SMOKE_SYNC_QUEUE_URL, SMOKE_SYNC_DLQ_URL,
#   SMOKE_DISPATCH_QUEUE_URL, SMOKE_WEBHOOK_SECRET_ID, SMOKE_WEBHOOK_SECRET_PREVIOUS_ID,
#   SMOKE_APP_PRIVATE_KEY_SECRET_ID, SMOKE_TRIGGER_FUNCTION
# plus AWS_ENDPOINT_URL and credentials for moto. Map them onto the functions' environment
# (ASTROLIFT_STATE=dynamodb:$SMOKE_TABLE, ASTROLIFT_BLOBS=s3://$SMOKE_BUCKET, ...), put a
# known value into the webhook secret, and drive the webhook handler with a signed event.
if [ -x scripts/smoke-webhook.sh ]; then
  echo "== deploy smoke: one webhook end to end"
  scripts/smoke-webhook.sh
fi

echo "== deploy smoke: the trigger function on its own configuration"
scripts/smoke-trigger.sh

echo "== deploy smoke: passed"
