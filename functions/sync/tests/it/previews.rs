//! Previews and comment commands on the stack's parts (docs/reference.md §17): the sync
//! function, fed the jobs the webhook function queues, on DynamoDB, S3 and an SQS dispatch
//! queue on moto. A pull request's head is previewed without touching the registered
//! agents; a writer's `/astrolift dispatch` is one message on the dispatch queue however
//! often the comment is delivered, with `eyes` on the comment; a reader's is one reply and
//! nothing else; the env-spec rule holds; `closed` tears the previews down.

use std::sync::Arc;

use astrolift_bot::job_for_event;
use astrolift_bot::layers::LayerPackager;
use astrolift_dispatch::content::{BlobContent, UrlOptions};
use astrolift_dispatch::dispatch::SqsDispatchQueue;
use astrolift_fake_github::{FakeGitHub, FakePullRequest};
use astrolift_fn_sync::SyncFunction;
use astrolift_forge::webhook::parse_event;
use astrolift_manifest::Limits;
use astrolift_store::state::{
    AuditAction, DynamoStateStore, PreviewStatus, RepoRegistration, StateStore,
};
use astrolift_store::testing::{aws_endpoint, register_example_skill_sources, unique_name};
use astrolift_store::{BlobStore, S3BlobStore};
use astrolift_sync::Stores;
use serde_json::{Value, json};

use crate::support::{INSTALLATION, PR_SHA, REPOSITORY, failures, fake_github, runner, sqs_event};

const PROJECT: &str = "proj-events";

/// DynamoDB and S3 on moto, the sample repository registered on main with previews, the
/// production env spec and one for previews.
async fn aws_stores(name: &str) -> Stores {
    let blobs = S3BlobStore::from_env(name, "", Default::default())
        .await
        .expect("s3 client");
    blobs.create_bucket().await.expect("bucket");
    let state = DynamoStateStore::from_env(name).await.expect("dynamodb");
    state.create_table().await.expect("table");
    let stores = Stores {
        state: Arc::new(state) as Arc<dyn StateStore>,
        blobs: Arc::new(blobs) as Arc<dyn BlobStore>,
        concurrency: Default::default(),
    };
    let registration = RepoRegistration {
        repository: REPOSITORY.into(),
        installation_id: Some(INSTALLATION),
        project_id: PROJECT.into(),
        registered_ref: "main".into(),
        manifest_path: None,
        updated_at: 1,
        last_sync: None,
        previews: true,
    };
    let state = stores.state.as_ref();
    state
        .put_registration(&registration)
        .await
        .expect("registered");
    let production = astrolift_store::testing::triage_env_spec(PROJECT);
    let mut preview = production.clone();
    preview.name = "triage-preview".into();
    preview.previews = true;
    state.put_env_spec(&production).await.expect("env spec");
    state.put_env_spec(&preview).await.expect("env spec");
    register_example_skill_sources(state, PROJECT)
        .await
        .expect("skill sources");
    stores
}

/// The sync function over `stores`, its comment dispatches sent to `queue`.
fn function_with_queue(
    github: &FakeGitHub,
    stores: &Stores,
    queue: SqsDispatchQueue,
) -> SyncFunction {
    let mut runner = runner(github, stores, None);
    runner.dispatches = Some(Arc::new(LayerPackager {
        queue: Arc::new(queue),
        content: BlobContent::new(
            Arc::clone(&stores.blobs),
            UrlOptions::default(),
            Limits::DEFAULT,
        ),
        packager: None,
        callback_base: None,
    }));
    SyncFunction::new(runner)
}

/// The webhook function's job for delivery `delivery` of `event_name`, as one SQS record.
fn record(delivery: &str, event_name: &str, body: &Value) -> Value {
    let bytes = serde_json::to_vec(body).expect("json");
    let event = parse_event(event_name, &bytes).expect("a webhook event");
    let job = job_for_event(delivery, &event).expect("a job");
    json!({
        "messageId": delivery,
        "body": serde_json::to_string(&job).expect("json"),
        "attributes": {"MessageGroupId": job.message_group_id()},
        "eventSource": "aws:sqs",
    })
}

async fn run(function: &SyncFunction, records: Vec<Value>) {
    let response = function
        .handle(sqs_event(json!({ "Records": records })), None)
        .await;
    assert!(failures(&response).is_empty(), "{response:?}");
}

fn repository() -> Value {
    json!({ "id": 246813579, "full_name": REPOSITORY, "default_branch": "main",
            "private": true, "name": "agents",
            "owner": { "login": "astrolift-demo", "id": 98765432 } })
}

fn pull_request(action: &str) -> Value {
    json!({
        "action": action, "number": 42,
        "pull_request": {
            "number": 42, "state": "open", "merged": false, "draft": false,
            "head": { "sha": PR_SHA, "ref": "triage-billing", "repo": repository() },
            "base": { "sha": "0".repeat(40), "ref": "main", "repo": repository() },
        },
        "repository": repository(),
        "installation": { "id": INSTALLATION },
    })
}

fn comment(id: u64, login: &str, body: &str) -> Value {
    let user = json!({ "login": login, "id": 7, "type": "User" });
    json!({
        "action": "created",
        "comment": { "id": id, "body": body, "user": user },
        "issue": { "number": 42, "state": "open",
                   "pull_request": { "url": "https://api.github.com/pulls/42" } },
        "repository": repository(),
        "installation": { "id": INSTALLATION },
        "sender": user,
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn previews_and_comment_dispatches_on_the_stack() {
    if aws_endpoint("previews_and_comment_dispatches_on_the_stack").is_none() {
        return;
    }
    let github = fake_github().await;
    github.set_repo_id("astrolift-demo", "agents", 246813579);
    github.set_pull_request(
        "astrolift-demo",
        "agents",
        42,
        FakePullRequest::open("triage-billing", PR_SHA, "main"),
    );
    github.add_collaborator("astrolift-demo", "agents", "octocat", "write");
    github.add_collaborator("astrolift-demo", "agents", "visitor", "read");
    let name = unique_name("fn-previews");
    let stores = aws_stores(&name).await;
    let sdk = astrolift_store::load_sdk_config().await;
    let client = aws_sdk_sqs::Client::new(&sdk);
    let queue = SqsDispatchQueue::create(client.clone(), &name)
        .await
        .expect("the dispatch queue");
    let function = function_with_queue(&github, &stores, queue.clone());

    // Opened: the head's agent previewed; no agent registered from a pull request.
    run(
        &function,
        vec![record("p-opened", "pull_request", &pull_request("opened"))],
    )
    .await;
    let state = stores.state.as_ref();
    let previews = state
        .previews()
        .list_previews(REPOSITORY)
        .await
        .expect("list");
    let preview = previews
        .iter()
        .find(|p| p.name == "pr-reviewer-pr42")
        .cloned()
        .unwrap_or_else(|| panic!("the preview: {previews:#?}"));
    assert_eq!(
        (preview.head_sha.as_str(), preview.status),
        (PR_SHA, PreviewStatus::Active)
    );
    assert!(
        state
            .list_agents(REPOSITORY)
            .await
            .expect("agents")
            .is_empty()
    );
    let summary = github
        .check_runs()
        .last()
        .and_then(|run| run.summary.clone())
        .unwrap_or_default();
    assert!(summary.contains("`pr-reviewer-pr42`"), "{summary}");

    // A writer's dispatch, delivered twice: one message, `eyes` on the comment.
    let body = "/astrolift dispatch pr-reviewer --env-spec triage-preview --input '{\"n\": 1}'";
    let writer = comment(801, "octocat", body);
    run(&function, vec![record("c-1", "issue_comment", &writer)]).await;
    run(&function, vec![record("c-2", "issue_comment", &writer)]).await;
    let messages = queue.receive(1).await.expect("receive");
    assert_eq!(messages.len(), 1, "{messages:#?}");
    assert!(
        queue.receive(1).await.expect("receive").is_empty(),
        "one dispatch"
    );
    assert_eq!(messages[0].agent.name, "pr-reviewer-pr42");
    assert!(
        github
            .reactions()
            .iter()
            .any(|r| r.comment_id == 801 && r.content == "eyes"),
        "eyes on the comment"
    );

    // The production env spec, and a reader: one reply each, nothing dispatched.
    let production = comment(
        802,
        "octocat",
        "/astrolift dispatch pr-reviewer --env-spec triage-prod",
    );
    let reader = comment(803, "visitor", "/astrolift dispatch pr-reviewer");
    run(&function, vec![record("c-3", "issue_comment", &production)]).await;
    run(&function, vec![record("c-4", "issue_comment", &reader)]).await;
    let replies: Vec<String> = github.comments().into_iter().map(|c| c.body).collect();
    assert!(
        replies.iter().any(|r| r.contains("reply-to-comment 802")
            && r.contains("preview/env-spec-not-for-previews")),
        "{replies:#?}"
    );
    assert!(
        replies
            .iter()
            .any(|r| r.contains("reply-to-comment 803")
                && r.contains("`write`, `maintain` or `admin`")),
        "{replies:#?}"
    );
    assert!(
        queue.receive(1).await.expect("receive").is_empty(),
        "no refused dispatch"
    );

    // Closed: torn down, with its audit event.
    github.close_pull_request("astrolift-demo", "agents", 42, true);
    run(
        &function,
        vec![record("p-closed", "pull_request", &pull_request("closed"))],
    )
    .await;
    let previews = state
        .previews()
        .list_previews(REPOSITORY)
        .await
        .expect("list");
    assert!(
        previews.iter().all(|p| p.status == PreviewStatus::TornDown),
        "{previews:#?}"
    );
    let events = state
        .previews()
        .list_preview_events(REPOSITORY, &preview.manifest_path)
        .await
        .expect("events");
    assert!(
        events
            .iter()
            .any(|e| e.action == AuditAction::PreviewClosed),
        "{events:#?}"
    );
}
