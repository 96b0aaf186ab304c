#!/usr/bin/env bash
# One webhook end to end against the resources of the stack that
# scripts/deploy-smoke.sh created in moto. Maps the stack's names
# onto the webhook function's Lambda environment, stores the events' test
# secret in the stack's webhook secret, and runs the function's `stack` test:
# a signed push is answered 202, deduplicated in the stack's table, and its job
# is in the stack's FIFO sync queue.
set -euo pipefail
cd "$(dirname "$0")/.."

python3 - <<'PY'
import os, boto3
sm = boto3.client("secretsmanager", endpoint_url=os.environ["AWS_ENDPOINT_URL"],
                  region_name=os.environ.get("AWS_REGION", "us-east-1"))
sm.put_secret_value(SecretId=os.environ["SMOKE_WEBHOOK_SECRET_ID"],
                    SecretString="astrolift-events-test-secret")
PY

env -u GITHUB_WEBHOOK_SECRET -u GITHUB_WEBHOOK_SECRET_PREVIOUS \
  ASTROLIFT_STATE="dynamodb:$SMOKE_TABLE" \
  ASTROLIFT_BLOBS="s3://$SMOKE_BUCKET" \
  ASTROLIFT_SECRETS=aws \
  ASTROLIFT_SYNC_QUEUE_URL="$SMOKE_SYNC_QUEUE_URL" \
  ASTROLIFT_DISPATCH_QUEUE_URL="$SMOKE_DISPATCH_QUEUE_URL" \
  GITHUB_WEBHOOK_SECRET_ID="$SMOKE_WEBHOOK_SECRET_ID" \
  SMOKE_SYNC_QUEUE_URL="$SMOKE_SYNC_QUEUE_URL" \
  scripts/test-binary.sh astrolift-fn-webhook stack
