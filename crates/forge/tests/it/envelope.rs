//! The envelope every reader of a delivery shares: read from the real
//! payload corpus (a snapshot line each), and the trust and report facts on
//! hand-made bodies.

use astrolift_forge::webhook::{Envelope, Subject, parse_delivery};
use serde_json::{Value, json};

use crate::payload_corpus::corpus;

fn read(body: &Value) -> Envelope {
    Envelope::read(body.to_string().as_bytes()).expect("a JSON object")
}

fn line(envelope: &Envelope) -> String {
    let subject = envelope.subject.as_ref().map(|s| {
        let head = s
            .head_sha
            .as_deref()
            .map_or("-", |h| h.get(..12).unwrap_or(h));
        format!("#{}@{head}", s.number)
    });
    format!(
        "readable={} action={:?} repo={:?} sender={:?} installation={:?} association={:?} fork={} subject={}",
        envelope.readable,
        envelope.action,
        envelope.repository,
        envelope.sender,
        envelope.installation_id,
        envelope.author_association,
        envelope.fork,
        subject.as_deref().unwrap_or("-"),
    )
}

#[test]
fn every_real_payload_has_a_readable_envelope() {
    let lines: Vec<String> = corpus()
        .iter()
        .map(|payload| {
            let (envelope, _) = parse_delivery(&payload.event_name, &payload.body)
                .unwrap_or_else(|e| panic!("{} refused: {e}", payload.name));
            assert!(envelope.readable, "{}", payload.name);
            format!("{} -> {}", payload.name, line(&envelope))
        })
        .collect();
    insta::assert_snapshot!("envelope_corpus", lines.join("\n"));
}

#[test]
fn an_issue_event_names_its_issue_a_pull_request_its_head() {
    let issue = read(&json!({"installation": {"id": 31}, "issue": {"number": 7}}));
    assert_eq!(issue.installation_id, Some(31));
    assert_eq!(
        issue.subject,
        Some(Subject {
            number: 7,
            head_sha: None
        })
    );
    let pull = read(&json!({
        "installation": {"id": 31},
        "issue": {"number": 1},
        "pull_request": {"number": 9, "head": {"sha": "abc"}},
    }));
    assert_eq!(
        pull.subject,
        Some(Subject {
            number: 9,
            head_sha: Some("abc".into())
        })
    );
}

#[test]
fn an_event_without_installation_or_subject_names_none() {
    let no_installation = read(&json!({"issue": {"number": 7}}));
    assert_eq!(no_installation.installation_id, None);
    let no_subject = read(&json!({"installation": {"id": 31}}));
    assert_eq!(no_subject.subject, None);
}

#[test]
fn the_senders_association_is_that_of_the_first_object_they_authored() {
    let event = read(&json!({
        "sender": {"login": "Alice"},
        "comment": {"user": {"login": "bob"}, "author_association": "OWNER"},
        "issue": {"user": {"login": "alice"}, "author_association": "CONTRIBUTOR"},
        "discussion": {"user": {"login": "alice"}, "author_association": "MEMBER"},
    }));
    assert_eq!(event.sender.as_deref(), Some("Alice"));
    assert_eq!(event.author_association.as_deref(), Some("CONTRIBUTOR"));
    let push = read(&json!({"sender": {"login": "alice"}, "pusher": {"name": "alice"}}));
    assert_eq!(push.author_association, None);
}

#[test]
fn a_pull_request_from_another_or_a_deleted_repository_is_a_fork() {
    let pull = |head: Value, base: Value| {
        read(&json!({"pull_request": {"head": head, "base": base}})).fork
    };
    let repo = |id: u64, name: &str| json!({"repo": {"id": id, "full_name": name}});
    assert!(!pull(repo(1, "o/r"), repo(1, "o/r")));
    assert!(pull(repo(2, "f/r"), repo(1, "o/r")));
    assert!(
        pull(json!({"repo": null}), repo(1, "o/r")),
        "a deleted fork"
    );
    let by_name = |name: &str| json!({"repo": {"full_name": name}});
    assert!(!pull(by_name("O/R"), by_name("o/r")));
    assert!(pull(by_name("f/r"), by_name("o/r")));
    assert!(!read(&json!({"issue": {"number": 1}})).fork);
}

#[test]
fn a_body_of_another_shape_is_unreadable_and_still_routed_by_its_action() {
    let odd = read(&json!({"action": "opened", "sender": 5, "repository": {"full_name": "o/r"}}));
    assert!(!odd.readable);
    assert_eq!(odd.action.as_deref(), Some("opened"));
    assert_eq!(
        (odd.repository, odd.sender, odd.subject),
        (None, None, None)
    );
    assert!(Envelope::read(b"not json").is_err());
    assert!(Envelope::read(br#"{"action": 5}"#).is_err());
}
