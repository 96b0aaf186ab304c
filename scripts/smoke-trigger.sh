#!/usr/bin/env bash
# The trigger function against the resources of the stack that scripts/deploy-smoke.sh
# created in moto, on the trigger function's OWN configuration: the
# environment variables the stack gave it are read back from Lambda and exported as they
# are (nothing is mapped by hand), the events' test secret goes into the stack's webhook
# secret, and the function's `stack` test runs: a `verify = { kind = "github" }` binding
# is answered 202, a missing project secret 500, an unreachable Secrets Manager 503.
set -euo pipefail
cd "$(dirname "$0")/.."

secret_value="astrolift-events-test-secret"
environment_file="$(mktemp)"
trap 'rm -f "$environment_file"' EXIT
SMOKE_SECRET_VALUE="$secret_value" python3 - "$environment_file" <<'PY'
import os, shlex, sys, boto3
endpoint = os.environ["AWS_ENDPOINT_URL"]
region = os.environ.get("AWS_REGION", "us-east-1")
boto3.client("secretsmanager", endpoint_url=endpoint, region_name=region).put_secret_value(
    SecretId=os.environ["SMOKE_WEBHOOK_SECRET_ID"], SecretString=os.environ["SMOKE_SECRET_VALUE"])
configuration = boto3.client("lambda", endpoint_url=endpoint, region_name=region).get_function_configuration(
    FunctionName=os.environ["SMOKE_TRIGGER_FUNCTION"])
variables = configuration.get("Environment", {}).get("Variables", {})
with open(sys.argv[1], "w") as out:
    for name, value in sorted(variables.items()):
        out.write(f"export {name}={shlex.quote(value)}\n")
print("smoke-trigger: the trigger function's environment: " + ", ".join(sorted(variables)))
PY

(
  unset GITHUB_WEBHOOK_SECRET GITHUB_WEBHOOK_SECRET_PREVIOUS
  # shellcheck disable=SC1090
  source "$environment_file"
  SMOKE_WEBHOOK_SECRET_VALUE="$secret_value" \
    scripts/test-binary.sh astrolift-fn-trigger stack::
)
