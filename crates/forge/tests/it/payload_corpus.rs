//! Real GitHub payloads (tests/fixtures/payloads/<event>/<name>.json, see
//! SOURCES.md there) through `parse_event` and `accept`: none may be refused,
//! and each is classified as GitHub's delivery of that event should be.

use std::path::{Path, PathBuf};

use astrolift_forge::webhook::{Event, WebhookRequest, WebhookSecrets, accept, parse_event, sign};
use http::{HeaderMap, HeaderValue};

const SECRET: &str = "corpus-webhook-secret";
const LIMIT: u64 = 25 * 1024 * 1024;

/// One recorded delivery: the event name is its folder's name.
pub struct Payload {
    pub event_name: String,
    /// `push/tag.deleted.json`.
    pub name: String,
    pub body: Vec<u8>,
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/payloads")
}

fn sorted_entries(dir: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .collect();
    paths.sort();
    paths
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .and_then(|n| n.to_str())
        .expect("utf-8 fixture name")
        .to_owned()
}

pub fn corpus() -> Vec<Payload> {
    let mut payloads = Vec::new();
    for event_dir in sorted_entries(&corpus_dir()) {
        if !event_dir.is_dir() {
            continue;
        }
        let event_name = file_name(&event_dir);
        for file in sorted_entries(&event_dir) {
            if file.extension().is_none_or(|ext| ext != "json") {
                continue;
            }
            payloads.push(Payload {
                name: format!("{event_name}/{}", file_name(&file)),
                event_name: event_name.clone(),
                body: std::fs::read(&file).expect("fixture readable"),
            });
        }
    }
    assert!(payloads.len() >= 40, "corpus shrank: {}", payloads.len());
    payloads
}

fn parse(payload: &Payload) -> Event {
    parse_event(&payload.event_name, &payload.body)
        .unwrap_or_else(|e| panic!("{} refused: {e}", payload.name))
}

/// One line per event: what it says, then where it comes from.
fn summary(event: &Event) -> String {
    let what = match event {
        Event::Push(e) => format!(
            "Push ref={} after={} deleted={} forced={} head_commit_time={:?}",
            e.git_ref,
            short(&e.after),
            e.deleted,
            e.forced,
            e.head_commit_time(),
        ),
        Event::PullRequest(e) => format!(
            "PullRequest action={} number={} head={}@{} head_repo={} base={} draft={} is_fork={}",
            e.action,
            e.number,
            e.pull_request.head.git_ref,
            short(&e.pull_request.head.sha),
            e.pull_request
                .head
                .repo
                .as_ref()
                .map_or("-", |r| r.full_name.as_str()),
            e.pull_request.base.git_ref,
            e.pull_request.draft,
            e.is_fork(),
        ),
        Event::CheckSuite(e) => format!(
            "CheckSuite action={} head_sha={} head_branch={:?}",
            e.action,
            short(&e.check_suite.head_sha),
            e.check_suite.head_branch,
        ),
        Event::CheckRun(e) => format!(
            "CheckRun action={} head_sha={} name={:?}",
            e.action,
            short(&e.check_run.head_sha),
            e.check_run.name,
        ),
        Event::Installation(e) => format!(
            "Installation action={} installation={} account={:?} repositories={}",
            e.action,
            e.installation.id,
            e.installation.account.as_ref().map(|a| &a.login),
            e.repositories.len(),
        ),
        Event::InstallationRepositories(e) => format!(
            "InstallationRepositories action={} installation={} added={:?} removed={:?}",
            e.action,
            e.installation.id,
            e.repositories_added
                .iter()
                .map(|r| &r.full_name)
                .collect::<Vec<_>>(),
            e.repositories_removed
                .iter()
                .map(|r| &r.full_name)
                .collect::<Vec<_>>(),
        ),
        Event::Ping(e) => format!("Ping hook_id={:?}", e.hook_id),
        Event::IssueComment(e) => format!(
            "IssueComment action={} comment={} by={} issue=#{} state={:?} on_pull_request={} by_a_bot={}",
            e.action,
            e.comment.id,
            e.comment.user.login,
            e.issue.number,
            e.issue.state,
            e.is_on_pull_request(),
            e.by_a_bot(),
        ),
        Event::Ignored { event, action } => format!("Ignored event={event} action={action:?}"),
    };
    match event.repository() {
        Some(r) => format!(
            "{what} repo={}#{} fork={} installation={:?}",
            r.full_name,
            r.id,
            r.fork,
            installation_id(event)
        ),
        None => what,
    }
}

/// The delivering installation of the events about a repository.
fn installation_id(event: &Event) -> Option<u64> {
    let installation = match event {
        Event::Push(e) => e.installation.as_ref(),
        Event::PullRequest(e) => e.installation.as_ref(),
        Event::CheckSuite(e) => e.installation.as_ref(),
        Event::CheckRun(e) => e.installation.as_ref(),
        Event::IssueComment(e) => e.installation.as_ref(),
        _ => None,
    };
    installation.map(|i| i.id)
}

fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

/// 202 for a sync job, 200 for an acknowledgement: what the handler answers.
fn status(event: &Event) -> u16 {
    if event.wants_sync() { 202 } else { 200 }
}

#[test]
fn every_real_payload_parses_and_is_summarised() {
    let lines: Vec<String> = corpus()
        .iter()
        .map(|payload| {
            let event = parse(payload);
            format!(
                "{} -> {} [{}]",
                payload.name,
                summary(&event),
                status(&event)
            )
        })
        .collect();
    insta::assert_snapshot!("payload_corpus", lines.join("\n"));
}

/// The classification GitHub's documentation implies, read from the raw JSON
/// rather than from our types, so that the two can disagree.
fn expected_status(event_name: &str, body: &[u8]) -> u16 {
    let json: serde_json::Value = serde_json::from_slice(body).expect("fixture is JSON");
    let action = json["action"].as_str().unwrap_or_default();
    let sync = match event_name {
        "push" => json["deleted"] != serde_json::Value::Bool(true),
        "pull_request" => {
            // `closed` tears down the pull request's previews (docs/reference.md §17).
            [
                "opened",
                "synchronize",
                "reopened",
                "ready_for_review",
                "closed",
            ]
            .contains(&action)
        }
        "check_suite" => ["requested", "rerequested"].contains(&action),
        "check_run" => {
            action == "rerequested"
                || (action == "requested_action"
                    && json["requested_action"]["identifier"] == "accept-drift")
        }
        _ => false,
    };
    if sync { 202 } else { 200 }
}

fn deliver(payload: &Payload) -> Event {
    let mut headers = HeaderMap::new();
    let header = |value: &str| HeaderValue::from_str(value).expect("ascii header");
    headers.insert("X-GitHub-Event", header(&payload.event_name));
    headers.insert(
        "X-GitHub-Delivery",
        header("d6f0c1a2-5e11-11ee-8c99-0242ac120002"),
    );
    headers.insert("X-Hub-Signature-256", header(&sign(&payload.body, SECRET)));
    let secrets = WebhookSecrets::new(SECRET.into(), None).expect("non-empty secret");
    let request = WebhookRequest {
        headers: &headers,
        body: bytes::Bytes::copy_from_slice(&payload.body),
        is_base64_encoded: false,
    };
    match accept(request, &secrets, LIMIT) {
        Ok(accepted) => {
            assert_eq!(accepted.event_name, payload.event_name);
            assert_eq!(accepted.body, payload.body, "{}", payload.name);
            accepted.event
        }
        Err(e) => panic!("{} refused with {}: {e}", payload.name, e.status()),
    }
}

#[test]
fn accept_classifies_every_real_payload() {
    let mismatches: Vec<String> = corpus()
        .iter()
        .filter_map(|payload| {
            let got = status(&deliver(payload));
            let want = expected_status(&payload.event_name, &payload.body);
            (got != want).then(|| format!("{}: got {got}, want {want}", payload.name))
        })
        .collect();
    assert!(mismatches.is_empty(), "{mismatches:#?}");
}

fn delivered(name: &str) -> Event {
    let payload = corpus()
        .into_iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("no fixture {name}"));
    deliver(&payload)
}

#[test]
fn deleting_a_ref_is_acknowledged_without_a_sync() {
    let event = delivered("push/tag.deleted.json");
    assert!(matches!(&event, Event::Push(push) if push.deleted && push.head_commit.is_none()));
    assert_eq!(status(&event), 200);
}

#[test]
fn a_closed_pull_request_is_a_pull_request_event_with_whether_it_merged() {
    let event = delivered("pull_request/closed.with-installation.json");
    assert!(
        matches!(&event, Event::PullRequest(pr) if pr.action == "closed"),
        "{event:?}"
    );
    assert_eq!(status(&event), 202);
}

#[test]
fn created_check_runs_and_completed_suites_are_ignored() {
    for name in ["check_run/created.json", "check_suite/completed.json"] {
        let event = delivered(name);
        assert!(matches!(event, Event::Ignored { .. }), "{name}: {event:?}");
    }
}

#[test]
fn an_organization_ping_has_no_repository_and_is_accepted() {
    let event = delivered("ping/ping.org-hook.with-organization.json");
    assert!(matches!(event, Event::Ping(_)), "{event:?}");
    assert_eq!(event.repository(), None);
}

#[test]
fn head_commit_time_of_a_real_push() {
    let Event::Push(push) = delivered("push/branch.created.with-installation.json") else {
        panic!("expected a push")
    };
    let head = push
        .head_commit
        .as_ref()
        .expect("a branch push has a head commit");
    assert_eq!(head.id, push.after);
    assert_eq!(head.timestamp.as_deref(), Some("2019-05-15T15:19:25Z"));
    assert_eq!(push.head_commit_time(), Some(1_557_933_565));
}

/// A real payload with `edit` applied, re-encoded and delivered.
fn delivered_variant(name: &str, edit: impl FnOnce(&mut serde_json::Value)) -> Event {
    let payload = corpus()
        .into_iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("no fixture {name}"));
    let mut json: serde_json::Value =
        serde_json::from_slice(&payload.body).expect("fixture is JSON");
    edit(&mut json);
    deliver(&Payload {
        body: serde_json::to_vec(&json).expect("re-encodes"),
        ..payload
    })
}

#[test]
fn variants_the_corpus_lacks() {
    let pr = "pull_request/synchronize.with-installation.json";
    let fork = delivered_variant(pr, |json| {
        json["pull_request"]["head"]["repo"]["id"] = 999.into();
        json["pull_request"]["head"]["repo"]["full_name"] = "someone/Hello-World".into();
    });
    assert!(
        matches!(&fork, Event::PullRequest(e) if e.is_fork()),
        "{fork:?}"
    );
    let deleted_head = delivered_variant(pr, |json| {
        json["pull_request"]["head"]["repo"] = serde_json::Value::Null;
    });
    assert!(matches!(&deleted_head, Event::PullRequest(e) if e.is_fork()));
    assert!(deleted_head.wants_sync());

    let detached = delivered_variant("check_suite/requested.with-installation.json", |json| {
        json["check_suite"]["head_branch"] = serde_json::Value::Null;
    });
    assert!(matches!(&detached, Event::CheckSuite(e) if e.check_suite.head_branch.is_none()));

    let forced = delivered_variant("push/branch.created.with-installation.json", |json| {
        json["created"] = false.into();
        json["forced"] = true.into();
        json["head_commit"]["timestamp"] = "2019-05-15T10:19:25-05:00".into();
    });
    let Event::Push(push) = &forced else {
        panic!("expected a push, got {forced:?}")
    };
    assert!(push.forced && forced.wants_sync());
    assert_eq!(push.head_commit_time(), Some(1_557_933_565));

    let comment = "issue_comment/created.with-organization.with-installation.json";
    let on_pull = delivered_variant(comment, |json| {
        json["issue"]["pull_request"] = serde_json::json!({
            "url": "https://api.github.com/repos/Codertocat/Hello-World/pulls/1",
            "html_url": "https://github.com/Codertocat/Hello-World/pull/1",
            "merged_at": null,
        });
    });
    assert!(
        matches!(&on_pull, Event::IssueComment(e) if e.is_on_pull_request() && !e.by_a_bot()),
        "{on_pull:?}"
    );
    assert!(!on_pull.wants_sync());
    let by_app = delivered_variant(comment, |json| {
        json["sender"]["type"] = "Bot".into();
    });
    assert!(matches!(&by_app, Event::IssueComment(e) if e.by_a_bot()));
    let edited = delivered_variant(comment, |json| json["action"] = "edited".into());
    assert!(matches!(edited, Event::Ignored { .. }), "{edited:?}");
}
