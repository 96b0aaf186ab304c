//! Trigger replay on the stack's parts (docs/reference.md §9, "Trigger replay"; §10, "Kept
//! requests"), DynamoDB and S3 on moto: the scenario of tests/trigger-replay/cases.rs. The
//! sync function applies the registered version (a push job), the requests are kept by
//! `astrolift_trigger::TriggerService` over the same DynamoDB table (what the trigger
//! function's handler runs: this crate does not depend on the trigger function), and the
//! sync function's pull-request job gets the replay in its check run: the hand-computed
//! counts, the warning on the binding's `name` line, the failing sample, no kept body. A
//! copy of the manifest in another repository replays nothing, and a teardown purges the
//! kept requests on DynamoDB.

use std::collections::BTreeMap;
use std::str::FromStr;
use std::sync::Arc;

use astrolift_bot::job_for_event;
use astrolift_dispatch::dispatch::MemoryDispatchQueue;
use astrolift_fake_github::{FakeCheckRun, FakeGitHub, FakePullRequest};
use astrolift_forge::webhook::parse_event;
use astrolift_manifest::Limits;
use astrolift_store::state::{AgentKey, DynamoStateStore, RepoRegistration, StateStore};
use astrolift_store::testing::{aws_endpoint, unique_name};
use astrolift_store::{BlobStore, BoxFuture, S3BlobStore};
use astrolift_sync::Stores;
use astrolift_trigger::{SecretError, SecretResolver, TriggerService};
use secrecy::SecretString;
use serde_json::{Value, json};

use crate::support::{INSTALLATION, MAIN_SHA, OWNER, PR_SHA, failures, runner, sqs_event};
use crate::trigger_replay_cases::{self as cases, SENTINEL};

const NAME: &str = "orders";
const REPOSITORY: &str = "astrolift-demo/orders";
/// Another tenant's repository holding a copy of the head.
const COPY: (&str, &str) = ("mallory", "copies");
const COPY_SHA: &str = "c333333333333333333333333333333333333333";

/// `secret://hooks/orders` only.
#[derive(Debug)]
struct OrdersSecret;

impl SecretResolver for OrdersSecret {
    fn resolve<'a>(
        &'a self,
        _project: &'a str,
        reference: &'a str,
    ) -> BoxFuture<'a, Result<SecretString, SecretError>> {
        Box::pin(async move {
            match reference {
                "secret://hooks/orders" => Ok(SecretString::from(cases::SECRET)),
                _ => Err(SecretError::MissingEnv {
                    reference: reference.to_owned(),
                    variable: cases::SECRET_VARIABLE.to_owned(),
                }),
            }
        })
    }

    fn github_webhook(&self) -> Option<&astrolift_forge::webhook::WebhookSecrets> {
        None
    }
}

/// A header map of `pairs`, of whatever map type the caller needs (the service's
/// `http::HeaderMap`, which this crate does not name).
fn headers<M, N, V>(pairs: &[(&str, &str)]) -> M
where
    M: FromIterator<(N, V)>,
    N: FromStr,
    V: FromStr,
    N::Err: std::fmt::Debug,
    V::Err: std::fmt::Debug,
{
    pairs
        .iter()
        .map(|(name, value)| {
            let name = name.parse().expect("a header name");
            (name, value.parse().expect("a header value"))
        })
        .collect()
}

fn repository(owner: &str, name: &str, id: u64) -> Value {
    json!({ "id": id, "full_name": format!("{owner}/{name}"), "default_branch": "main",
            "private": true, "name": name, "owner": { "login": owner, "id": id + 1 } })
}

/// The webhook function's job for `event_name`'s `body` as delivery `delivery`, run by the
/// sync function as a batch of one.
async fn run_job(
    function: &astrolift_fn_sync::SyncFunction,
    delivery: &str,
    event_name: &str,
    body: &Value,
) {
    let bytes = serde_json::to_vec(body).expect("json");
    let event = parse_event(event_name, &bytes).expect("a webhook event");
    let job = job_for_event(delivery, &event).expect("a job");
    let record = json!({
        "messageId": delivery, "eventSource": "aws:sqs",
        "body": serde_json::to_string(&job).expect("json"),
        "attributes": {"MessageGroupId": job.message_group_id()},
    });
    let batch = sqs_event(json!({ "Records": [record] }));
    let response = function.handle(batch, None).await;
    assert!(failures(&response).is_empty(), "{response:?}");
}

fn pull_request(repo: &Value, number: u64, head_sha: &str) -> Value {
    json!({
        "action": "opened", "number": number,
        "pull_request": {
            "number": number, "state": "open", "merged": false, "draft": false,
            "head": { "sha": head_sha, "ref": "feature", "repo": repo },
            "base": { "sha": MAIN_SHA, "ref": "main", "repo": repo },
        },
        "repository": repo,
        "installation": { "id": INSTALLATION },
    })
}

/// The completed check run of `owner/repo` on `sha`.
fn run_on(github: &FakeGitHub, (owner, repo): (&str, &str), sha: &str) -> FakeCheckRun {
    github
        .check_runs()
        .into_iter()
        .rfind(|run| run.owner == owner && run.repo == repo && run.head_sha == sha)
        .filter(|run| run.status == "completed")
        .unwrap_or_else(|| panic!("no completed check run of {owner}/{repo} on {sha}"))
}

fn now() -> i64 {
    let since = std::time::UNIX_EPOCH.elapsed().expect("after the epoch");
    i64::try_from(since.as_secs()).expect("seconds")
}

async fn kept(state: &dyn StateStore, trigger_id: &str) -> usize {
    state
        .kept_requests()
        .list_kept_requests(trigger_id, REPOSITORY, now(), 20)
        .await
        .expect("kept requests")
        .len()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_sync_function_replays_requests_kept_on_dynamodb() {
    if aws_endpoint("the_sync_function_replays_requests_kept_on_dynamodb").is_none() {
        return;
    }
    let github = FakeGitHub::start().await.expect("fake GitHub");
    github.add_installation(INSTALLATION);
    github.add_repo(OWNER, NAME, "main", MAIN_SHA, cases::main_repo());
    github.add_repo(OWNER, NAME, "feature", PR_SHA, cases::head_repo());
    github.set_private(OWNER, NAME, true);
    github.set_pull_request(
        OWNER,
        NAME,
        9,
        FakePullRequest::open("feature", PR_SHA, "main"),
    );
    let (copy_owner, copy_name) = COPY;
    github.add_repo(
        copy_owner,
        copy_name,
        "feature",
        COPY_SHA,
        cases::head_repo(),
    );
    let copy_pull = FakePullRequest::open("feature", COPY_SHA, "main");
    github.set_pull_request(copy_owner, copy_name, 3, copy_pull);

    let table = unique_name("fn-replay");
    let blobs = S3BlobStore::from_env(&table, "", Default::default())
        .await
        .expect("s3 client");
    blobs.create_bucket().await.expect("bucket");
    let dynamo = DynamoStateStore::from_env(&table).await.expect("dynamodb");
    dynamo.create_table().await.expect("table");
    let stores = Stores {
        state: Arc::new(dynamo) as Arc<dyn StateStore>,
        blobs: Arc::new(blobs) as Arc<dyn BlobStore>,
        concurrency: Default::default(),
    };
    let state = stores.state.as_ref();
    let registration = RepoRegistration {
        repository: REPOSITORY.into(),
        installation_id: Some(INSTALLATION),
        project_id: "proj-replay".into(),
        registered_ref: "main".into(),
        manifest_path: None,
        updated_at: 1,
        last_sync: None,
        previews: false,
    };
    state
        .put_registration(&registration)
        .await
        .expect("registered");
    let function = astrolift_fn_sync::SyncFunction::new(runner(&github, &stores, None));

    // The push to main registers the bindings.
    let repo = repository(OWNER, NAME, 8001);
    let push = json!({
        "ref": "refs/heads/main", "before": "0".repeat(40), "after": MAIN_SHA,
        "deleted": false, "forced": false, "created": false,
        "head_commit": { "id": MAIN_SHA, "timestamp": "2026-11-29T10:00:00Z", "message": "m" },
        "repository": repo, "installation": { "id": INSTALLATION },
        "sender": { "login": "dev", "id": 5 },
    });
    run_job(&function, "tr-push", "push", &push).await;
    let main_run = run_on(&github, (OWNER, NAME), MAIN_SHA);
    assert_eq!(
        main_run.conclusion.as_deref(),
        Some("success"),
        "{main_run:#?}"
    );
    let rows: Vec<Value> = state
        .list_repository_trigger_bindings(REPOSITORY)
        .await
        .expect("bindings")
        .into_iter()
        .map(|b| json!({"agent": b.agent_name, "name": b.name, "trigger_id": b.trigger_id}))
        .collect();
    let ids: BTreeMap<String, String> = cases::trigger_ids(&rows);

    // The requests, through the trigger function's service on the same table.
    let service = TriggerService::new(
        Arc::clone(&stores.state),
        Arc::new(OrdersSecret),
        Arc::new(MemoryDispatchQueue::new()),
        Limits::DEFAULT,
    );
    for (n, post) in cases::posts().into_iter().enumerate() {
        let sent = [
            ("content-type", "application/json"),
            ("x-signature", post.signature.as_str()),
        ];
        let answer = service
            .handle(&ids[post.trigger], &headers(&sent), &post.body)
            .await;
        assert_eq!(
            answer.status, post.status,
            "request {n} to {}: {}",
            post.trigger, answer.body
        );
    }
    assert_eq!(kept(state, &ids["orders"]).await, 20, "the window");
    assert_eq!(kept(state, &ids["lean"]).await, 0, "keep_deliveries = 0");
    assert_eq!(kept(state, &ids["steady"]).await, 2);

    // The pull request's job: the replay in its check run.
    run_job(
        &function,
        "tr-pr-9",
        "pull_request",
        &pull_request(&repo, 9, PR_SHA),
    )
    .await;
    let run = run_on(&github, (OWNER, NAME), PR_SHA);
    cases::assert_replayed(&run, &ids);

    // Another tenant's copy of the manifest: nothing replayed.
    let copy = repository(copy_owner, copy_name, 9001);
    run_job(
        &function,
        "tr-copy-3",
        "pull_request",
        &pull_request(&copy, 3, COPY_SHA),
    )
    .await;
    let shown = cases::shown(&run_on(&github, COPY, COPY_SHA));
    assert!(!shown.contains("### Trigger replay"), "{shown}");
    assert!(!shown.contains(SENTINEL), "{shown}");

    // A purge, then a teardown, delete the kept requests on DynamoDB.
    let purged = state
        .kept_requests()
        .purge_kept_requests(&ids["steady"])
        .await;
    assert_eq!(purged.expect("purged"), 2);
    let key = AgentKey {
        repository: REPOSITORY.into(),
        manifest_path: cases::MANIFEST.into(),
    };
    state
        .teardown(&key, now(), "trigger replay test")
        .await
        .expect("torn down");
    assert_eq!(kept(state, &ids["orders"]).await, 0, "a teardown purges");
    cases::assert_warning_counts_dispatched(&run);
}
