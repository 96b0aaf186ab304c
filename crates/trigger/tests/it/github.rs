//! GitHub-shaped `issues` and `issue_comment` payloads through a `github` binding.

use astrolift_forge::webhook::sign;
use astrolift_manifest::triggers::{TriggerSource, Verify};
use astrolift_trigger::{CompiledBinding, Outcome, evaluate, evaluate_verified};
use serde_json::json;

use crate::support::{APP_SECRET, FixedSecrets, fixture, headers, limits, spec};

fn new_issue_binding() -> CompiledBinding {
    let mut spec = spec(
        Some(Verify::Github),
        Some(r#".action == "opened" or (.comment.body // "" | startswith("/triage"))"#),
        Some(
            r#"{mode: "triage", issue: .issue.number, repo: .repository.full_name, comment: .comment.body}"#,
        ),
    );
    spec.name = "new-issue".to_owned();
    spec.source = TriggerSource::Github;
    spec.events = vec![
        "issues.opened".to_owned(),
        "issue_comment.created".to_owned(),
    ];
    CompiledBinding::from_spec("t-gh", spec).expect("compiles")
}

#[test]
fn events_match_by_event_and_action() {
    let binding = new_issue_binding();
    assert!(binding.matches_event("issues", Some("opened")));
    assert!(binding.matches_event("issue_comment", Some("created")));
    assert!(!binding.matches_event("issues", Some("closed")));
    assert!(!binding.matches_event("pull_request", Some("opened")));
}

#[tokio::test]
async fn issues_opened_through_the_app_signature() {
    let body = fixture("github/issues_opened.json");
    let signed = headers(&[
        ("X-Hub-Signature-256", &sign(&body, APP_SECRET)),
        ("X-GitHub-Event", "issues"),
    ]);
    let outcome = evaluate(
        &new_issue_binding(),
        crate::support::PROJECT,
        &signed,
        &body,
        &FixedSecrets::new(),
        &limits(),
    )
    .await;
    assert_eq!(
        outcome.expect("dispatch"),
        Outcome::Dispatch {
            payload: Some(
                json!({"mode": "triage", "issue": 42, "repo": "acme/agents", "comment": null})
            )
        }
    );
}

#[tokio::test]
async fn issue_comment_created_preverified_by_the_webhook_function() {
    let body = fixture("github/issue_comment_created.json");
    let outcome = evaluate_verified(&new_issue_binding(), &body, &limits()).await;
    assert_eq!(
        outcome.expect("dispatch"),
        Outcome::Dispatch {
            payload: Some(
                json!({"mode": "triage", "issue": 42, "repo": "acme/agents", "comment": "/triage please"})
            )
        }
    );
    let mut other: serde_json::Value = serde_json::from_slice(&body).expect("json");
    other["comment"]["body"] = json!("thanks!");
    let other = serde_json::to_vec(&other).expect("json");
    let filtered = evaluate_verified(&new_issue_binding(), &other, &limits()).await;
    assert_eq!(filtered.expect("filtered"), Outcome::Filtered);
}
