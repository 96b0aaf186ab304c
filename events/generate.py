#!/usr/bin/env python3
"""Writes the sample Lambda events of the webhook and sync functions.

    python3 events/generate.py        # rewrites events/webhook-*.json|status, events/sync-*.json

Every webhook event is a Lambda function URL event (payload format 2.0) carrying a GitHub
delivery signed with the TEST secret below (X-Hub-Signature-256 over the exact body bytes).
The sync events are SQS FIFO batches whose bodies are the sync jobs (crates/bot/src/job.rs)
that the push and pull-request deliveries make. The output is deterministic: running this
again with no change to it rewrites the same bytes.

The secret is a test value, not a credential: see events/README.md.
"""

import base64
import hashlib
import hmac
import json
from pathlib import Path

SECRET = "astrolift-events-test-secret"
EVENTS = Path(__file__).resolve().parent

OWNER = "astrolift-demo"
REPOSITORY = f"{OWNER}/agents"
REPOSITORY_ID = 812345678
INSTALLATION_ID = 51234567
MAIN_SHA = "3f2a9c1e5b7d4a6f8e0c2b4d6f8a0c2e4b6d8f0a"
PR_SHA = "9b1d3f5a7c9e1b3d5f7a9c1e3b5d7f9a1c3e5b7d"
FORK_SHA = "c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00"
PUSH_TIME = "2026-11-29T18:59:30Z"
TIME = "29/Nov/2026:19:00:00 +0000"
TIME_EPOCH_MS = 1795978800000
DOMAIN = "k3x7q2m9p4w8r1t6.lambda-url.us-east-1.on.aws"
QUEUE_ARN = "arn:aws:sqs:us-east-1:123456789012:astrolift-sync.fifo"

SENDER = {"login": "octocat", "id": 583231, "type": "User"}
OWNER_ACCOUNT = {"login": OWNER, "id": 98765432, "type": "Organization"}


def repository(full_name=REPOSITORY, repo_id=REPOSITORY_ID, owner=OWNER_ACCOUNT, fork=False):
    name = full_name.split("/")[1]
    return {
        "id": repo_id,
        "node_id": "R_kgDOMDemo",
        "name": name,
        "full_name": full_name,
        "private": False,
        "owner": owner,
        "html_url": f"https://github.com/{full_name}",
        "fork": fork,
        "url": f"https://api.github.com/repos/{full_name}",
        "default_branch": "main",
        "visibility": "public",
    }


def installation():
    return {"id": INSTALLATION_ID, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uNTEyMzQ1Njc="}


def push_payload():
    commit = {
        "id": MAIN_SHA,
        "tree_id": "7c4e1a2b3d5f6a8b9c0d1e2f3a4b5c6d7e8f9a0b",
        "distinct": True,
        "message": "agents: add the triage agent",
        "timestamp": PUSH_TIME,
        "url": f"https://github.com/{REPOSITORY}/commit/{MAIN_SHA}",
        "author": {"name": "Octo Cat", "email": "octocat@example.com", "username": "octocat"},
        "committer": {"name": "GitHub", "email": "noreply@github.com", "username": "web-flow"},
        "added": ["agents/triage/astrolift.toml"],
        "removed": [],
        "modified": [],
    }
    return {
        "ref": "refs/heads/main",
        "before": "1e5b7d4a6f8e0c2b4d6f8a0c2e4b6d8f0a3f2a9c",
        "after": MAIN_SHA,
        "repository": repository(),
        "pusher": {"name": "octocat", "email": "octocat@example.com"},
        "organization": {"login": OWNER, "id": 98765432},
        "sender": SENDER,
        "installation": installation(),
        "created": False,
        "deleted": False,
        "forced": False,
        "base_ref": None,
        "compare": f"https://github.com/{REPOSITORY}/compare/1e5b7d4a6f8e...3f2a9c1e5b7d",
        "commits": [commit],
        "head_commit": commit,
    }


def branch(sha, ref, repo):
    return {"label": f"{repo['owner']['login']}:{ref}", "ref": ref, "sha": sha, "repo": repo}


def pull_request_payload(number, head_sha, head_repo):
    return {
        "action": "opened",
        "number": number,
        "pull_request": {
            "url": f"https://api.github.com/repos/{REPOSITORY}/pulls/{number}",
            "id": 2100000000 + number,
            "number": number,
            "state": "open",
            "locked": False,
            "title": "triage: route billing issues",
            "user": SENDER,
            "draft": False,
            "head": branch(head_sha, "triage-billing", head_repo),
            "base": branch(MAIN_SHA, "main", repository()),
            "merged": False,
            "commits": 1,
            "additions": 12,
            "deletions": 2,
            "changed_files": 1,
        },
        "repository": repository(),
        "organization": {"login": OWNER, "id": 98765432},
        "sender": SENDER,
        "installation": installation(),
    }


def comment_payload(comment_id, body, user):
    """issue_comment.created on pull request 42 by `user`."""
    return {
        "action": "created",
        "issue": {
            "url": f"https://api.github.com/repos/{REPOSITORY}/issues/42",
            "number": 42,
            "state": "open",
            "pull_request": {"url": f"https://api.github.com/repos/{REPOSITORY}/pulls/42"},
        },
        "comment": {"id": comment_id, "body": body, "user": user},
        "repository": repository(),
        "organization": {"login": OWNER, "id": 98765432},
        "sender": user,
        "installation": installation(),
    }


def ping_payload():
    return {
        "zen": "Keep it logically awesome.",
        "hook_id": 498765432,
        "hook": {
            "type": "App",
            "id": 498765432,
            "name": "web",
            "active": True,
            "events": ["check_run", "check_suite", "pull_request", "push"],
            "config": {"content_type": "json", "insecure_ssl": "0", "url": f"https://{DOMAIN}/"},
            "app_id": 1012345,
        },
        "sender": SENDER,
    }


def installation_payload():
    return {
        "action": "created",
        "installation": {
            "id": INSTALLATION_ID,
            "account": OWNER_ACCOUNT,
            "repository_selection": "selected",
            "app_id": 1012345,
            "target_type": "Organization",
            "permissions": {"checks": "write", "contents": "read", "metadata": "read"},
            "events": ["check_run", "check_suite", "pull_request", "push"],
        },
        "repositories": [
            {"id": REPOSITORY_ID, "name": "agents", "full_name": REPOSITORY, "private": False}
        ],
        "sender": SENDER,
    }


def branch_deleted_payload():
    payload = push_payload()
    payload.update(
        {
            "ref": "refs/heads/old-experiment",
            "before": PR_SHA,
            "after": "0" * 40,
            "created": False,
            "deleted": True,
            "commits": [],
            "head_commit": None,
        }
    )
    return payload


def compact(payload):
    """The body bytes, as GitHub sends them: compact JSON."""
    return json.dumps(payload, separators=(",", ":")).encode()


def signature(body, secret=SECRET):
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def function_url_event(event, delivery, body, *, secret=SECRET, base64_body=False, request_id):
    headers = {
        "accept": "*/*",
        "content-type": "application/json",
        "host": DOMAIN,
        "user-agent": "GitHub-Hookshot/7f6e5d4",
        "x-amzn-trace-id": "Root=1-6a2b3c4d-5e6f7a8b9c0d1e2f3a4b5c6d",
        "x-forwarded-for": "140.82.115.10",
        "x-forwarded-port": "443",
        "x-forwarded-proto": "https",
        "x-github-delivery": delivery,
        "x-github-event": event,
        "x-github-hook-id": "498765432",
        "x-github-hook-installation-target-id": "1012345",
        "x-github-hook-installation-target-type": "integration",
        "x-hub-signature": "sha1=" + hmac.new(secret.encode(), body, hashlib.sha1).hexdigest(),
        "x-hub-signature-256": signature(body, secret),
    }
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": "/",
        "rawQueryString": "",
        "headers": headers,
        "requestContext": {
            "accountId": "anonymous",
            "apiId": DOMAIN.split(".")[0],
            "domainName": DOMAIN,
            "domainPrefix": DOMAIN.split(".")[0],
            "http": {
                "method": "POST",
                "path": "/",
                "protocol": "HTTP/1.1",
                "sourceIp": "140.82.115.10",
                "userAgent": "GitHub-Hookshot/7f6e5d4",
            },
            "requestId": request_id,
            "routeKey": "$default",
            "stage": "$default",
            "time": TIME,
            "timeEpoch": TIME_EPOCH_MS,
        },
        "body": base64.b64encode(body).decode() if base64_body else body.decode(),
        "isBase64Encoded": base64_body,
    }


def sync_job(delivery, trigger, head_sha, branch_name, *, pull_request=None, fork=False, commit_time=None,
             before=None, base_ref=None):
    """crates/bot/src/job.rs SyncJob, as the webhook queues it."""
    return {
        "version": 1,
        "delivery_id": delivery,
        "trigger": trigger,
        "installation_id": INSTALLATION_ID,
        "repository": REPOSITORY,
        "repository_id": REPOSITORY_ID,
        "head_sha": head_sha,
        "branch": branch_name,
        "fork": fork,
        "commit_time": commit_time,
        **({"before": before} if before else {}),
        "default_branch": "main",
        "pull_request": pull_request,
        **({"base_ref": base_ref} if base_ref else {}),
    }


def message_group(job):
    """SyncJob::message_group_id: the repository id and the job's FIFO lane (crates/bot/src/job.rs)."""
    if job["trigger"] == "push":
        lane = "push-" + hashlib.sha256(job["branch"].encode()).hexdigest()[:16]
    elif job["fork"]:
        lane = "fork"
    else:
        lane = "pull-request"
    return f"{job['repository_id']}-{lane}"


def sqs_record(number, body, group, dedupe):
    return {
        "messageId": f"0f6c2b1a-5d3e-4c7b-9a8f-00000000000{number}",
        "receiptHandle": f"AQEBz3Sample{number}ReceiptHandle+Base64==",
        "body": body,
        "attributes": {
            "ApproximateReceiveCount": "1",
            "SentTimestamp": str(TIME_EPOCH_MS + number),
            "SequenceNumber": f"1888800000000000000{number}",
            "MessageGroupId": group,
            "SenderId": "AROA3EXAMPLEROLEID:astrolift-webhook",
            "MessageDeduplicationId": dedupe,
            "ApproximateFirstReceiveTimestamp": str(TIME_EPOCH_MS + 100 + number),
        },
        "messageAttributes": {},
        "md5OfBody": hashlib.md5(body.encode()).hexdigest(),
        "eventSource": "aws:sqs",
        "eventSourceARN": QUEUE_ARN,
        "awsRegion": "us-east-1",
    }


PUSH_DELIVERY = "6f1e2d3c-4b5a-11f0-8e9d-0a1b2c3d4e5f"
PR_DELIVERY = "7a2b3c4d-4b5a-11f0-9f0e-1b2c3d4e5f6a"


def webhook_events():
    """name -> (event, expected status)."""
    fork = repository("octo-fork/agents", 913579246, {"login": "octo-fork", "id": 1357, "type": "User"}, fork=True)
    push = compact(push_payload())
    return {
        # A push through a function URL with a base64-encoded body: the decoded bytes are
        # what GitHub signed.
        "webhook-push": (
            function_url_event("push", PUSH_DELIVERY, push, base64_body=True,
                               request_id="5b1c6e3a-0000-4000-8000-000000000001"),
            202,
        ),
        "webhook-pull-request-opened": (
            function_url_event("pull_request", PR_DELIVERY,
                               compact(pull_request_payload(42, PR_SHA, repository())),
                               request_id="5b1c6e3a-0000-4000-8000-000000000002"),
            202,
        ),
        # A fork's pull request is queued too; the sync runner only checks it.
        "webhook-pull-request-fork": (
            function_url_event("pull_request", "8b3c4d5e-4b5a-11f0-8a1b-2c3d4e5f6a7b",
                               compact(pull_request_payload(43, FORK_SHA, fork)),
                               request_id="5b1c6e3a-0000-4000-8000-000000000003"),
            202,
        ),
        "webhook-ping": (
            function_url_event("ping", "9c4d5e6f-4b5a-11f0-9b2c-3d4e5f6a7b8c", compact(ping_payload()),
                               request_id="5b1c6e3a-0000-4000-8000-000000000004"),
            200,
        ),
        "webhook-installation-created": (
            function_url_event("installation", "ad5e6f7a-4b5a-11f0-8c3d-4e5f6a7b8c9d",
                               compact(installation_payload()),
                               request_id="5b1c6e3a-0000-4000-8000-000000000005"),
            200,
        ),
        # A push that deletes a branch: verified, acknowledged, nothing queued.
        "webhook-push-branch-deleted": (
            function_url_event("push", "be6f7a8b-4b5a-11f0-9d4e-5f6a7b8c9dae", compact(branch_deleted_payload()),
                               request_id="5b1c6e3a-0000-4000-8000-000000000006"),
            200,
        ),
        # A person's command on a pull request: one comment job for the sync worker.
        "webhook-issue-comment-command": (
            function_url_event("issue_comment", "d08b9cad-4b5a-11f0-9f60-7b8c9daebfc0",
                               compact(comment_payload(3001, "/astrolift dispatch triage --input '{}'", SENDER)),
                               request_id="5b1c6e3a-0000-4000-8000-000000000008"),
            202,
        ),
        # A bot's comment is never a command: acknowledged, nothing queued.
        "webhook-issue-comment-bot": (
            function_url_event("issue_comment", "e19cadbe-4b5a-11f0-8a71-8c9daebfc0d1",
                               compact(comment_payload(3002, "/astrolift help",
                                                       {"login": "other-app[bot]", "id": 4242, "type": "Bot"})),
                               request_id="5b1c6e3a-0000-4000-8000-000000000009"),
            200,
        ),
        # The push, signed with another secret: 401, nothing recorded or queued.
        "webhook-bad-signature": (
            function_url_event("push", "cf7a8b9c-4b5a-11f0-8e5f-6a7b8c9daebf", push,
                               secret="not-the-webhook-secret",
                               request_id="5b1c6e3a-0000-4000-8000-000000000007"),
            401,
        ),
    }


def sync_events():
    push_job = sync_job(PUSH_DELIVERY, "push", MAIN_SHA, "main", commit_time=1795978770,
                        before=push_payload()["before"])
    pr_job = sync_job(PR_DELIVERY, "pull_request", PR_SHA, "triage-billing", pull_request=42, base_ref="main")
    batch = [
        sqs_record(1, compact(push_job).decode(), message_group(push_job), PUSH_DELIVERY),
        sqs_record(2, compact(pr_job).decode(), message_group(pr_job), PR_DELIVERY),
    ]
    bad = [sqs_record(1, "{\"version\":1,\"delivery_id\":", message_group(push_job), "d0000000-bad-body")]
    return {
        "sync-batch": {"Records": batch},
        "sync-bad-body": {"Records": bad},
        # The template's reconcile schedule (docs/reference.md §4, "astrolift reconcile").
        "sync-reconcile": {"astrolift": "reconcile"},
    }


def write(name, value):
    (EVENTS / f"{name}.json").write_text(json.dumps(value, indent=2) + "\n")


def main():
    for name, (event, status) in webhook_events().items():
        write(name, event)
        (EVENTS / f"{name}.status").write_text(f"{status}\n")
    for name, event in sync_events().items():
        write(name, event)


if __name__ == "__main__":
    main()
