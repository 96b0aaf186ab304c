#!/usr/bin/env python3
"""Deploys infra/template.yaml into moto_server's CloudFormation and prints the stack's names.

    python3 scripts/deploy_smoke.py [--stack NAME] [--env-file FILE]

Steps: transform the SAM template with aws-sam-translator into plain CloudFormation,
replace each function's CodeUri (a cargo-lambda build in real deployments) with a
placeholder zip uploaded to moto's S3 (moto never runs the functions), check the roles
(no wildcard; the webhook and trigger roles write the state table only under the key
prefixes docs/deploy.md lists, which moto cannot check: it does not enforce IAM), create
the stack against $AWS_ENDPOINT_URL, wait for CREATE_COMPLETE, check the resources it made,
and write the stack's outputs and resource names as shell `export` lines to --env-file.

It also checks that the other YAML files users rely on parse: infra/github-app.yml,
.pre-commit-hooks.yaml and action.yml.
"""

import argparse
import copy
import io
import json
import os
import re
import sys
import time
import urllib.parse
import zipfile
from pathlib import Path

import boto3
import botocore.exceptions
import yaml
from samtranslator.translator.transform import transform

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "infra" / "template.yaml"
CODE_BUCKET = "astrolift-smoke-code"
CODE_KEY = "placeholder.zip"
PARAMETERS = {"GitHubAppId": "12345"}
# The parameter that sets each function's reserved concurrency.
RESERVED_CONCURRENCY = {
    "WebhookFunction": "WebhookReservedConcurrency",
    "SyncFunction": "SyncReservedConcurrency",
    "TriggerFunction": "TriggerReservedConcurrency",
}
# The sync function's /tmp (MB): the tarball spool (4 GiB) plus the archives built for
# upload need Lambda's most. moto keeps the default 512 MB whatever the template says, so
# this is checked on the translated template.
SYNC_EPHEMERAL_STORAGE_MB = 10240
# The roles whose DynamoDB writes are limited to key prefixes, by their row name in
# docs/deploy.md's "Which keys each function may write".
KEY_LIMITED_ROLES = {"webhook": "WebhookFunctionRole", "trigger": "TriggerFunctionRole"}
DEPLOY_DOC = ROOT / "docs" / "deploy.md"
KEYS_SECTION = "### Which keys each function may write"
# The actions that change an item (a transaction's items are authorized as these).
DYNAMODB_WRITES = {
    "dynamodb:PutItem", "dynamodb:DeleteItem", "dynamodb:UpdateItem", "dynamodb:BatchWriteItem",
}
# Where the DynamoDB store builds its partition keys.
STORE_KEY_SOURCES = [ROOT / "crates/store/src/state/dynamo.rs",
                     *sorted((ROOT / "crates/store/src/state/dynamo").glob("*.rs"))]


class NoManagedPolicies:
    """The translator asks for managed policy ARNs only for policy names; we use none."""

    def load(self):
        return {}


def fail(message):
    print(f"deploy-smoke: {message}", file=sys.stderr)
    sys.exit(1)


def client(service):
    return boto3.client(service, endpoint_url=os.environ["AWS_ENDPOINT_URL"])


def translate():
    template = yaml.safe_load(TEMPLATE.read_text())
    for resource in template["Resources"].values():
        if resource["Type"] == "AWS::Serverless::Function":
            resource["Properties"]["CodeUri"] = f"s3://{CODE_BUCKET}/{CODE_KEY}"
    return transform(template, PARAMETERS, NoManagedPolicies())


def upload_placeholder_code():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("bootstrap", "#!/bin/sh\necho placeholder: moto does not run functions\n")
    s3 = client("s3")
    s3.create_bucket(Bucket=CODE_BUCKET)
    s3.put_object(Bucket=CODE_BUCKET, Key=CODE_KEY, Body=buffer.getvalue())


def supported_types():
    """Resource types moto's CloudFormation cannot create (it would skip them silently)."""
    from moto.cloudformation.parsing import get_model_map

    return set(get_model_map())


def substitute(node, values):
    """Replaces Ref, GetAtt and ${...} in Fn::Sub to the resources in `values` by literals.

    `values` maps a logical id (for Ref) or (logical id, attribute) (for GetAtt) to a string.
    """
    if isinstance(node, list):
        return [substitute(item, values) for item in node]
    if not isinstance(node, dict):
        return node
    if set(node) == {"Ref"} and node["Ref"] in values:
        return values[node["Ref"]]
    if set(node) == {"Fn::GetAtt"}:
        target = node["Fn::GetAtt"]
        if isinstance(target, str):
            target = target.split(".", 1)
        if tuple(target) in values:
            return values[tuple(target)]
    if set(node) == {"Fn::Sub"} and isinstance(node["Fn::Sub"], str):
        text = node["Fn::Sub"]
        for key, value in values.items():
            name = key if isinstance(key, str) else ".".join(key)
            text = text.replace("${" + name + "}", value)
        return text if "${" not in text else {"Fn::Sub": text}
    return {key: substitute(value, values) for key, value in node.items()}


def resolve_name(value, stack):
    """A resource's Name property: a literal or a Fn::Sub on AWS::StackName."""
    if isinstance(value, dict) and set(value) == {"Fn::Sub"}:
        return value["Fn::Sub"].replace("${AWS::StackName}", stack)
    return value


def stand_in_for_unsupported(template, stack):
    """Creates what moto's CloudFormation cannot, or drops it, and rewrites references.

    - AWS::SecretsManager::Secret: created with boto3 under the template's name, so the
      functions' environment and policies point at a real secret.
    - AWS::Lambda::Url: the URL is a placeholder (moto runs no function anyway).
    - Anything else unsupported (alarms, bucket policy): dropped, with a note; cfn-lint and
      checkov check those.
    """
    template = copy.deepcopy(template)
    supported = supported_types()
    values = {}
    secrets = client("secretsmanager")
    for logical, resource in list(template["Resources"].items()):
        kind = resource["Type"]
        if kind in supported:
            continue
        properties = resource.get("Properties", {})
        if kind == "AWS::SecretsManager::Secret":
            name = resolve_name(properties["Name"], stack)
            arn = secrets.create_secret(
                Name=name, SecretString=secrets.get_random_password(ExcludePunctuation=True)["RandomPassword"]
            )["ARN"]
            values[logical] = arn
            values[(logical, "Id")] = arn
        elif kind == "AWS::Lambda::Url":
            values[(logical, "FunctionUrl")] = f"https://{logical.lower()}.lambda-url.invalid/"
        print(f"deploy-smoke: note: moto cannot create {kind} {logical}; {'stand-in made' if values.get(logical) or values.get((logical, 'FunctionUrl')) else 'dropped'}")
        del template["Resources"][logical]
    return substitute(template, values)


def apply_what_moto_ignores(translated, resources):
    """Applies, through the service APIs, the template's settings moto's CloudFormation skips.

    moto creates the table and bucket but ignores their TTL, point-in-time recovery and
    public access block, and cannot create the bucket policy. The values come from the
    template itself, so the store tests that follow still check the template's settings
    (the TTL attribute above all) against the code.
    """
    table_properties = translated["Resources"]["StateTable"]["Properties"]
    table = resources["StateTable"]
    dynamodb = client("dynamodb")
    ttl = table_properties["TimeToLiveSpecification"]
    dynamodb.update_time_to_live(
        TableName=table,
        TimeToLiveSpecification={"AttributeName": ttl["AttributeName"], "Enabled": ttl["Enabled"]},
    )
    pitr = table_properties["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"]
    dynamodb.update_continuous_backups(
        TableName=table,
        PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": pitr},
    )

    bucket = resources["BlobBucket"]
    s3 = client("s3")
    block = translated["Resources"]["BlobBucket"]["Properties"]["PublicAccessBlockConfiguration"]
    s3.put_public_access_block(Bucket=bucket, PublicAccessBlockConfiguration=block)
    policy = substitute(
        translated["Resources"]["BlobBucketPolicy"]["Properties"]["PolicyDocument"],
        {"BlobBucket": bucket, ("BlobBucket", "Arn"): f"arn:aws:s3:::{bucket}"},
    )
    s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps(policy))
    print("deploy-smoke: note: applied the table's TTL and PITR, the bucket's public access block and policy")
    check_tls_only(s3, bucket)


def check_tls_only(s3, bucket):
    """moto evaluates the bucket policy: over its plain-HTTP endpoint every request is denied.

    That proves the TLS-only statement works; the policy is then removed, because the store
    tests that follow can only reach moto over plain HTTP.
    """
    try:
        s3.head_object(Bucket=bucket, Key="tls-only-probe")
        fail("the bucket policy let a plain-HTTP request through")
    except botocore.exceptions.ClientError as err:
        status = err.response["ResponseMetadata"]["HTTPStatusCode"]
        if status != 403:
            fail(f"plain-HTTP request to the bucket: {status}, expected 403 from the TLS-only policy")
    s3.delete_bucket_policy(Bucket=bucket)
    print("deploy-smoke: note: the TLS-only bucket policy denied plain HTTP; removed it for the store tests")


def create_stack(name, template):
    cloudformation = client("cloudformation")
    cloudformation.create_stack(
        StackName=name,
        TemplateBody=json.dumps(template),
        Parameters=[{"ParameterKey": k, "ParameterValue": v} for k, v in PARAMETERS.items()],
        Capabilities=["CAPABILITY_IAM", "CAPABILITY_AUTO_EXPAND"],
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        stack = cloudformation.describe_stacks(StackName=name)["Stacks"][0]
        status = stack["StackStatus"]
        if status == "CREATE_COMPLETE":
            return stack
        if not status.endswith("IN_PROGRESS"):
            events = cloudformation.describe_stack_events(StackName=name)["StackEvents"]
            reasons = [e.get("ResourceStatusReason") for e in events if e.get("ResourceStatusReason")]
            fail(f"stack {name} ended in {status}: {reasons}")
        time.sleep(0.5)
    fail(f"stack {name} not created within 120 s")


def physical_ids(name):
    cloudformation = client("cloudformation")
    resources = cloudformation.describe_stack_resources(StackName=name)["StackResources"]
    return {r["LogicalResourceId"]: r.get("PhysicalResourceId") for r in resources}


def check_resources(outputs, resources):
    """The properties the code relies on, read back from what the stack created."""
    table = outputs["StateTableName"]
    described = client("dynamodb").describe_table(TableName=table)["Table"]
    keys = [(k["AttributeName"], k["KeyType"]) for k in described["KeySchema"]]
    if keys != [("pk", "HASH"), ("sk", "RANGE")]:
        fail(f"table {table} key schema {keys}")
    indexes = [i["IndexName"] for i in described.get("GlobalSecondaryIndexes", [])]
    if indexes != ["gsi1"]:
        fail(f"table {table} indexes {indexes}")

    sqs = client("sqs")
    attributes = sqs.get_queue_attributes(
        QueueUrl=outputs["SyncQueueUrl"], AttributeNames=["All"]
    )["Attributes"]
    if attributes.get("FifoQueue") != "true" or attributes.get("ContentBasedDeduplication") != "false":
        fail(f"sync queue is not FIFO without content-based deduplication: {attributes}")
    redrive = json.loads(attributes.get("RedrivePolicy", "{}"))
    if int(redrive.get("maxReceiveCount", 0)) != 5:
        fail(f"sync queue redrive policy {redrive}")
    report = sqs.get_queue_attributes(
        QueueUrl=outputs["ReportQueueUrl"], AttributeNames=["All"]
    )["Attributes"]
    if report.get("FifoQueue") != "true" or report.get("ContentBasedDeduplication") != "false":
        fail(f"report queue is not FIFO without content-based deduplication: {report}")

    for logical in ("WebhookFunction", "SyncFunction", "TriggerFunction"):
        if logical not in resources:
            fail(f"stack has no {logical}")
        configuration = client("lambda").get_function(FunctionName=resources[logical])["Configuration"]
        if configuration.get("Runtime") != "provided.al2023":
            fail(f"{logical}: runtime {configuration.get('Runtime')}")
        environment = configuration.get("Environment", {}).get("Variables", {})
        for name, expected in expected_environment(logical, outputs).items():
            if environment.get(name) != expected:
                fail(f"{logical}: {name}={environment.get(name)!r}, expected {expected!r}")
    check_reserved_concurrency(resources)
    check_stage_queue(outputs, resources)


def check_stage_queue(outputs, resources):
    """The stage queue redrives to its DLQ and feeds the trigger function (docs/reference.md
    §5.6)."""
    attributes = client("sqs").get_queue_attributes(
        QueueUrl=outputs["StageQueueUrl"], AttributeNames=["All"]
    )["Attributes"]
    if int(json.loads(attributes.get("RedrivePolicy", "{}")).get("maxReceiveCount", 0)) != 5:
        fail(f"stage queue redrive policy {attributes.get('RedrivePolicy')}")
    mappings = client("lambda").list_event_source_mappings(
        FunctionName=resources["TriggerFunction"]
    )["EventSourceMappings"]
    if not any(m["EventSourceArn"] == attributes["QueueArn"] for m in mappings):
        fail(f"the trigger function does not consume the stage queue: {mappings}")


def check_reserved_concurrency(resources):
    """Each function has the reserved concurrency of its parameter's default, as created."""
    template = yaml.safe_load(TEMPLATE.read_text())
    lambda_client = client("lambda")
    for logical, parameter in RESERVED_CONCURRENCY.items():
        expected = int(template["Parameters"][parameter]["Default"])
        reserved = lambda_client.get_function_concurrency(FunctionName=resources[logical]).get(
            "ReservedConcurrentExecutions"
        )
        if reserved != expected:
            fail(f"{logical}: reserved concurrency {reserved}, expected {parameter}'s default {expected}")
    print("deploy-smoke: note: reserved concurrency as created: "
          + ", ".join(f"{logical} {template['Parameters'][p]['Default']}" for logical, p in RESERVED_CONCURRENCY.items()))


def expected_environment(logical, outputs):
    """The environment contract the function code reads (docs/deploy.md)."""
    common = {
        "ASTROLIFT_STATE": f"dynamodb:{outputs['StateTableName']}",
        "ASTROLIFT_BLOBS": f"s3://{outputs['BlobBucketName']}",
        "ASTROLIFT_SECRETS": "aws",
        "ASTROLIFT_SECRET_PREFIX": "astrolift/",
        "GITHUB_APP_ID": PARAMETERS["GitHubAppId"],
        "GITHUB_API_URL": "https://api.github.com",
        "ASTROLIFT_LOG_LEVEL": "info",
        "ASTROLIFT_REGISTERED_REF_DEFAULT": "main",
    }
    # The Step Functions engine of workflow runs (docs/reference.md §5.6).
    engine = {
        "ASTROLIFT_WORKFLOW_ENGINE": "stepfunctions",
        "ASTROLIFT_STAGE_QUEUE_URL": outputs["StageQueueUrl"],
        "ASTROLIFT_STATE_MACHINE_ROLE_ARN": outputs["StateMachineRoleArn"],
        "ASTROLIFT_STATE_MACHINE_PREFIX": "astrolift-",
    }
    specific = {
        "WebhookFunction": {
            "ASTROLIFT_SYNC_QUEUE_URL": outputs["SyncQueueUrl"],
            "ASTROLIFT_DISPATCH_QUEUE_URL": outputs["DispatchQueueUrl"],
            "GITHUB_WEBHOOK_SECRET_ID": outputs["GitHubWebhookSecretArn"],
            "GITHUB_WEBHOOK_SECRET_PREVIOUS_ID": outputs["GitHubWebhookSecretPreviousArn"],
        },
        "SyncFunction": {
            "GITHUB_APP_PRIVATE_KEY_SECRET_ID": outputs["GitHubAppPrivateKeySecretArn"],
            **engine,
        },
        "TriggerFunction": {
            "ASTROLIFT_DISPATCH_QUEUE_URL": outputs["DispatchQueueUrl"],
            # report = "comment" | "check": relayed to the sync function (stack::).
            "ASTROLIFT_REPORT_QUEUE_URL": outputs["ReportQueueUrl"],
            # verify = { kind = "github" } on the stack (scripts/smoke-trigger.sh answers one).
            "GITHUB_WEBHOOK_SECRET_ID": outputs["GitHubWebhookSecretArn"],
            "GITHUB_WEBHOOK_SECRET_PREVIOUS_ID": outputs["GitHubWebhookSecretPreviousArn"],
            **engine,
        },
    }
    return {**common, **specific[logical]}


def check_functions(template):
    """What moto does not keep (it ignores Architectures), checked on the translated template."""
    for logical in ("WebhookFunction", "SyncFunction", "TriggerFunction"):
        properties = template["Resources"][logical]["Properties"]
        if properties.get("Architectures") != ["arm64"] or properties.get("Runtime") != "provided.al2023":
            fail(f"{logical}: {properties.get('Runtime')} {properties.get('Architectures')}")
    storage = template["Resources"]["SyncFunction"]["Properties"].get("EphemeralStorage", {})
    if storage.get("Size") != SYNC_EPHEMERAL_STORAGE_MB:
        fail(f"SyncFunction: EphemeralStorage {storage}, expected {SYNC_EPHEMERAL_STORAGE_MB} MB")
    for logical in ("WebhookFunction", "TriggerFunction"):
        if "EphemeralStorage" in template["Resources"][logical]["Properties"]:
            fail(f"{logical}: EphemeralStorage is set, but it spools nothing")
    for logical in ("SyncFunctionSyncJobs", "SyncFunctionReportJobs"):
        mapping = template["Resources"][logical]["Properties"]
        if mapping.get("FunctionResponseTypes") != ["ReportBatchItemFailures"]:
            fail(f"{logical}: {mapping}")
    rule = template["Resources"].get("SyncFunctionReconcile", {})
    rule_properties = rule.get("Properties", {})
    if rule.get("Type") != "AWS::Events::Rule" or rule_properties.get("Targets", [{}])[0].get(
        "Input"
    ) != '{"astrolift":"reconcile"}':
        fail(f"SyncFunctionReconcile: not the reconcile schedule: {rule}")
    for logical in ("WebhookFunctionUrl", "TriggerFunctionUrl"):
        if template["Resources"][logical]["Type"] != "AWS::Lambda::Url":
            fail(f"{logical} is not a function URL")
    check_least_privilege(template)
    check_state_machine_role(template)
    check_state_write_keys(template)


TASK_TOKEN_ACTIONS = {"states:SendTaskSuccess", "states:SendTaskFailure", "states:SendTaskHeartbeat"}


def is_task_token_answer(logical, statement, actions, resources):
    """The one `*` resource allowed: the trigger role's answers to stage task tokens, which IAM
    cannot scope (a task token names no resource); only those actions, only that role."""
    return (
        logical == "TriggerFunctionRole"
        and statement.get("Sid") == "StageResults"
        and statement.get("Effect") == "Allow"
        and set(actions) <= TASK_TOKEN_ACTIONS
        and resources == ["*"]
    )


def check_least_privilege(template):
    """No function role has a wildcard action or a `*` resource in its own policies."""
    for logical in ("WebhookFunctionRole", "SyncFunctionRole", "TriggerFunctionRole"):
        for policy in template["Resources"][logical]["Properties"].get("Policies", []):
            for statement in policy["PolicyDocument"]["Statement"]:
                actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
                resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
                if is_task_token_answer(logical, statement, actions, resources):
                    continue
                if any("*" in action for action in actions) or "*" in resources:
                    fail(f"{logical} statement {statement.get('Sid')} is not least privilege: {statement}")
                if statement.get("Sid") == "ProjectSecrets":
                    arn = statement["Resource"].get("Fn::Sub", "") if isinstance(statement["Resource"], dict) else ""
                    if not arn.endswith(":secret:${SecretPrefix}*"):
                        fail(f"{logical}: project secrets are not scoped to the prefix: {statement}")


def check_state_machine_role(template):
    """All the state machines' role may do is send to the stage queue."""
    role = template["Resources"]["StateMachineRole"]["Properties"]
    statements = [
        statement
        for policy in role.get("Policies", [])
        for statement in policy["PolicyDocument"]["Statement"]
    ]
    allowed = [(s["Effect"], s["Action"], s["Resource"]) for s in statements]
    if allowed != [("Allow", "sqs:SendMessage", {"Fn::GetAtt": ["StageQueue", "Arn"]})]:
        fail(f"the state machines' role may do more than send stage messages: {allowed}")
    principal = role["AssumeRolePolicyDocument"]["Statement"][0]["Principal"]
    if principal != {"Service": "states.amazonaws.com"}:
        fail(f"the state machines' role is assumed by {principal}")


def documented_write_keys():
    """Each key-limited role's `pk` patterns, from its rows of docs/deploy.md's table."""
    text = DEPLOY_DOC.read_text()
    if KEYS_SECTION not in text:
        fail(f"docs/deploy.md has no section {KEYS_SECTION!r}")
    # The section's first table: its first run of lines that start with `|`.
    rows = []
    for line in text.split(KEYS_SECTION, 1)[1].splitlines():
        if line.startswith("|"):
            rows.append(line)
        elif rows:
            break
    keys = {role: set() for role in KEY_LIMITED_ROLES}
    for line in rows:
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 2 or cells[0] not in keys:
            continue
        keys[cells[0]].update(re.findall(r"`([^`]+)`", cells[1]))
    for role, patterns in keys.items():
        if not patterns:
            fail(f"docs/deploy.md, {KEYS_SECTION[4:]!r}: no row lists the {role} role's key patterns")
    return keys


def check_state_write_keys(template):
    """The webhook and trigger roles write the state table only under the documented `pk`s.

    Every statement of those roles that allows a DynamoDB write must be conditioned on
    `ForAllValues:StringLike` `dynamodb:LeadingKeys`; the patterns of each role must equal its
    rows in docs/deploy.md; each pattern must name a partition key the store builds (a string
    literal in crates/store/src/state/dynamo*), so that a typo cannot pass.
    """
    documented = documented_write_keys()
    store_source = "".join(path.read_text() for path in STORE_KEY_SOURCES)
    for role, logical in KEY_LIMITED_ROLES.items():
        granted = set()
        writes = 0
        for policy in template["Resources"][logical]["Properties"].get("Policies", []):
            for statement in policy["PolicyDocument"]["Statement"]:
                actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
                if statement.get("Effect") != "Allow" or not DYNAMODB_WRITES & set(actions):
                    continue
                writes += 1
                condition = statement.get("Condition", {})
                patterns = condition.get("ForAllValues:StringLike", {}).get("dynamodb:LeadingKeys")
                if set(condition) != {"ForAllValues:StringLike"} or not patterns:
                    fail(f"{logical} statement {statement.get('Sid')} writes the state table on any key: "
                         f"no ForAllValues:StringLike dynamodb:LeadingKeys condition: {statement}")
                patterns = patterns if isinstance(patterns, list) else [patterns]
                granted.update(patterns)
        if not writes:
            fail(f"{logical} has no DynamoDB write statement")
        if granted != documented[role]:
            fail(f"{logical} may write keys {sorted(granted)}, docs/deploy.md lists {sorted(documented[role])} "
                 f"for the {role} role: a new key prefix goes in both")
        for pattern in sorted(granted):
            literal = '"' + pattern[:-1] if pattern.endswith("*") else f'"{pattern}"'
            if "*" in literal or "?" in literal or literal not in store_source:
                fail(f"{logical}: key pattern {pattern!r} is no partition key the store builds "
                     f"(no {literal} in crates/store/src/state/dynamo*)")
    print("deploy-smoke: note: state writes limited to key prefixes: "
          + "; ".join(f"{role} {', '.join(sorted(documented[role]))}" for role in KEY_LIMITED_ROLES))


def load_yaml(relative):
    path = ROOT / relative
    if not path.exists():
        fail(f"{relative} is missing")
    try:
        return yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        fail(f"{relative} does not parse: {err}")


def check_user_yaml():
    """The App manifest, the pre-commit hook and the composite action parse and say what users rely on."""
    app = load_yaml("infra/github-app.yml")
    expected_permissions = {
        "checks": "write", "metadata": "read",
        # Write: the lock-update pull request's commit (Git Data API).
        "contents": "write",
        # Write: suggested fixes as reviews, and the lock-update pull request.
        "pull_requests": "write",
        # Write: replies to comment commands, and their reactions.
        "issues": "write",
    }
    if app.get("default_permissions") != expected_permissions:
        fail(f"infra/github-app.yml permissions: {app.get('default_permissions')}")
    expected_events = {"push", "pull_request", "check_suite", "check_run", "issues", "issue_comment"}
    if set(app.get("default_events", [])) != expected_events:
        fail(f"infra/github-app.yml events: {app.get('default_events')}")

    hooks = {hook["id"]: hook for hook in load_yaml(".pre-commit-hooks.yaml")}
    hook = hooks.get("astrolift-validate") or fail(".pre-commit-hooks.yaml: no astrolift-validate hook")
    if hook.get("entry") != "astrolift validate" or hook.get("pass_filenames") is not False:
        fail(f".pre-commit-hooks.yaml: astrolift-validate is {hook}")

    action = load_yaml("action.yml")
    steps = action.get("runs", {}).get("steps", [])
    if action.get("runs", {}).get("using") != "composite":
        fail("action.yml is not a composite action")
    if not any("--format sarif" in step.get("run", "") for step in steps):
        fail("action.yml does not run astrolift validate --format sarif")
    if not any(step.get("uses", "").startswith("github/codeql-action/upload-sarif@") for step in steps):
        fail("action.yml does not upload the SARIF file")


def shell_quote(value):
    return "'" + str(value).replace("'", "'\\''") + "'"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stack", default="astrolift-smoke")
    parser.add_argument("--env-file", required=True)
    args = parser.parse_args()
    if not os.environ.get("AWS_ENDPOINT_URL"):
        fail("AWS_ENDPOINT_URL is not set: start moto with scripts/moto.sh")

    check_user_yaml()
    translated = translate()
    check_functions(translated)
    template = stand_in_for_unsupported(translated, args.stack)
    upload_placeholder_code()
    stack = create_stack(args.stack, template)
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}
    resources = physical_ids(args.stack)
    apply_what_moto_ignores(translated, resources)
    check_resources(outputs, resources)

    exports = {
        "SMOKE_STACK": args.stack,
        "SMOKE_TABLE": outputs["StateTableName"],
        "SMOKE_BUCKET": outputs["BlobBucketName"],
        "SMOKE_SYNC_QUEUE_URL": outputs["SyncQueueUrl"],
        "SMOKE_SYNC_DLQ_URL": outputs["SyncDeadLetterQueueUrl"],
        "SMOKE_DISPATCH_QUEUE_URL": outputs["DispatchQueueUrl"],
        "SMOKE_WEBHOOK_SECRET_ID": outputs["GitHubWebhookSecretArn"],
        "SMOKE_WEBHOOK_SECRET_PREVIOUS_ID": outputs["GitHubWebhookSecretPreviousArn"],
        "SMOKE_APP_PRIVATE_KEY_SECRET_ID": outputs["GitHubAppPrivateKeySecretArn"],
        "SMOKE_TRIGGER_FUNCTION": resources["TriggerFunction"],
    }
    Path(args.env_file).write_text(
        "".join(f"export {k}={shell_quote(v)}\n" for k, v in exports.items())
    )
    for key, value in exports.items():
        print(f"{key}={value}")


if __name__ == "__main__":
    main()
