//! The GitHub events we act on, read leniently: one payload model per event
//! kind. What every event shares (repository, action, sender, installation)
//! is the [`Envelope`], read once before the payload model.
//!
//! Hand-written serde structs rather than octocrab's webhook models: we need a
//! handful of fields, and every field we do not strictly need is optional, so
//! that a payload GitHub changes tomorrow (or a GitHub Enterprise version that
//! lacks a field) is still accepted. Unknown fields are ignored by serde.

use serde::{Deserialize, Serialize};

use super::envelope::Envelope;
use crate::account::User;

/// The repository an event is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepositoryRef {
    pub id: u64,
    pub full_name: String,
    #[serde(default)]
    pub default_branch: Option<String>,
    #[serde(default)]
    pub fork: bool,
    #[serde(default)]
    pub private: bool,
}

/// The App installation that delivered an event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstallationRef {
    pub id: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushEvent {
    /// `refs/heads/main`, `refs/tags/v1`.
    #[serde(rename = "ref")]
    pub git_ref: String,
    pub before: String,
    pub after: String,
    #[serde(default)]
    pub deleted: bool,
    #[serde(default)]
    pub forced: bool,
    pub repository: RepositoryRef,
    #[serde(default)]
    pub installation: Option<InstallationRef>,
    /// Null when the push deletes a ref (and absent in some older payloads).
    #[serde(default)]
    pub head_commit: Option<HeadCommit>,
}

/// The commit a push leaves its ref at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeadCommit {
    pub id: String,
    /// ISO 8601 with an offset: `2019-05-15T15:20:30-05:00` or `…Z`.
    #[serde(default)]
    pub timestamp: Option<String>,
}

impl PushEvent {
    /// The head commit's time in unix seconds; `None` when the push has no
    /// head commit or its timestamp is missing or unreadable.
    pub fn head_commit_time(&self) -> Option<i64> {
        let timestamp = self.head_commit.as_ref()?.timestamp.as_deref()?;
        let parsed = timestamp.parse::<jiff::Timestamp>().ok()?;
        Some(parsed.as_second())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullRequestEvent {
    pub action: String,
    pub number: u64,
    pub pull_request: PullRequest,
    pub repository: RepositoryRef,
    #[serde(default)]
    pub installation: Option<InstallationRef>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullRequest {
    pub head: PullRequestBranch,
    pub base: PullRequestBranch,
    #[serde(default)]
    pub draft: bool,
    /// Whether a `closed` pull request was merged.
    #[serde(default)]
    pub merged: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullRequestBranch {
    pub sha: String,
    #[serde(rename = "ref")]
    pub git_ref: String,
    /// Null when the head repository was deleted.
    #[serde(default)]
    pub repo: Option<RepositoryRef>,
}

impl PullRequestEvent {
    /// True when the head branch lives in another repository (or a deleted one):
    /// such pull requests are checked, never applied.
    pub fn is_fork(&self) -> bool {
        self.pull_request
            .head
            .repo
            .as_ref()
            .is_none_or(|head| head.id != self.repository.id)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckSuiteEvent {
    pub action: String,
    pub check_suite: CheckSuite,
    pub repository: RepositoryRef,
    #[serde(default)]
    pub installation: Option<InstallationRef>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckSuite {
    pub id: u64,
    pub head_sha: String,
    #[serde(default)]
    pub head_branch: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckRunEvent {
    pub action: String,
    pub check_run: CheckRun,
    pub repository: RepositoryRef,
    #[serde(default)]
    pub installation: Option<InstallationRef>,
    /// The button clicked, on `requested_action`.
    #[serde(default)]
    pub requested_action: Option<RequestedAction>,
    /// Who clicked or re-requested.
    #[serde(default)]
    pub sender: Option<User>,
}

impl CheckRunEvent {
    /// The identifier of the button clicked, on `requested_action`.
    pub fn requested_identifier(&self) -> Option<&str> {
        (self.action == "requested_action")
            .then_some(self.requested_action.as_ref())
            .flatten()
            .map(|a| a.identifier.as_str())
    }

    /// A click on our "Accept drift" button
    /// ([`crate::github::ACCEPT_DRIFT`]); another app's identifier is not ours.
    pub fn requests_accept_drift(&self) -> bool {
        self.action == "requested_action"
            && self
                .requested_action
                .as_ref()
                .is_some_and(|a| a.identifier == crate::github::ACCEPT_DRIFT)
    }
}

/// A check run's requested action, as its delivery names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestedAction {
    pub identifier: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckRun {
    pub id: u64,
    pub head_sha: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub check_suite: Option<CheckSuite>,
}

/// An `issue_comment` delivery with action `created`: a comment on an issue or a pull
/// request (GitHub models a pull request's conversation as its issue's), which may hold
/// `/astrolift` command lines (docs/reference.md §17).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IssueCommentEvent {
    pub action: String,
    pub comment: Comment,
    pub issue: CommentedIssue,
    pub repository: RepositoryRef,
    #[serde(default)]
    pub installation: Option<InstallationRef>,
    pub sender: User,
}

impl IssueCommentEvent {
    /// True when the comment is on a pull request (`issue.pull_request` is present).
    pub fn is_on_pull_request(&self) -> bool {
        self.issue.pull_request.is_some()
    }

    /// True when a bot sent the event or wrote the comment: its commands are never run,
    /// so that no App (ours above all, whose replies list the commands) drives another.
    pub fn by_a_bot(&self) -> bool {
        self.sender.is_bot() || self.comment.user.is_bot()
    }
}

/// The comment of an `issue_comment` delivery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Comment {
    pub id: u64,
    /// The comment's Markdown as written; empty when GitHub sends none.
    #[serde(default, deserialize_with = "null_as_default")]
    pub body: String,
    pub user: User,
}

/// The issue a comment is on: a pull request's when `pull_request` is present.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommentedIssue {
    pub number: u64,
    /// `open` or `closed`.
    #[serde(default)]
    pub state: Option<String>,
    /// Present only on a pull request's issue.
    #[serde(default)]
    pub pull_request: Option<IssuePullRequest>,
}

/// The `issue.pull_request` of a comment on a pull request: links only, no head or base
/// (`Installation::pull_request` reads those).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IssuePullRequest {
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    pub html_url: Option<String>,
    /// When it was merged; null while it is not.
    #[serde(default)]
    pub merged_at: Option<String>,
}

/// A string field that GitHub may send as `null`: read as its default.
fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstallationEvent {
    /// `created`, `deleted`, `suspend`, `unsuspend`, `new_permissions_accepted`.
    pub action: String,
    pub installation: Installation,
    #[serde(default)]
    pub repositories: Vec<RepositoryName>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Installation {
    pub id: u64,
    #[serde(default)]
    pub account: Option<Account>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Account {
    /// An enterprise account has a `slug` where users and organizations have a `login`.
    #[serde(alias = "slug")]
    pub login: String,
    #[serde(default)]
    pub id: Option<u64>,
}

/// The short repository objects of installation events.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepositoryName {
    pub id: u64,
    pub full_name: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstallationRepositoriesEvent {
    /// `added` or `removed`.
    pub action: String,
    pub installation: Installation,
    #[serde(default)]
    pub repositories_added: Vec<RepositoryName>,
    #[serde(default)]
    pub repositories_removed: Vec<RepositoryName>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PingEvent {
    #[serde(default)]
    pub zen: Option<String>,
    #[serde(default)]
    pub hook_id: Option<u64>,
}

/// A webhook, typed. Events and actions we do not handle are `Ignored`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    Push(PushEvent),
    PullRequest(PullRequestEvent),
    CheckSuite(CheckSuiteEvent),
    CheckRun(CheckRunEvent),
    Installation(InstallationEvent),
    InstallationRepositories(InstallationRepositoriesEvent),
    Ping(PingEvent),
    /// A new comment on an issue or a pull request (action `created` only); acknowledged
    /// without a sync ([`Event::wants_sync`] is false): the bot routes it itself.
    IssueComment(IssueCommentEvent),
    /// Acknowledged and not acted on (though a GitHub-sourced trigger may bind it).
    Ignored {
        event: String,
        action: Option<String>,
    },
}

const PULL_REQUEST_ACTIONS: &[&str] = &[
    "opened",
    "synchronize",
    "reopened",
    "ready_for_review",
    "closed",
];
const CHECK_SUITE_ACTIONS: &[&str] = &["requested", "rerequested"];
const CHECK_RUN_ACTIONS: &[&str] = &["rerequested", "requested_action"];
const ISSUE_COMMENT_ACTIONS: &[&str] = &["created"];

/// Parses the body of an `X-GitHub-Event: <event_name>` delivery into its
/// typed event (see [`parse_delivery`], which also returns the envelope).
pub fn parse_event(event_name: &str, body: &[u8]) -> Result<Event, serde_json::Error> {
    parse_delivery(event_name, body).map(|(_, event)| event)
}

/// Reads a delivery's [`Envelope`], then, for the events and actions we
/// handle, its payload model: the envelope is read once and gives the action
/// the payload model is chosen by.
///
/// Unknown events, and known events with actions we do not handle, are
/// `Event::Ignored`. A handled event whose payload lacks a field we need is an
/// error (the webhook answers 400), as is a body that is not a JSON object;
/// except a comment, which is then `Ignored` (see below).
pub fn parse_delivery(
    event_name: &str,
    body: &[u8],
) -> Result<(Envelope, Event), serde_json::Error> {
    let envelope = Envelope::read(body)?;
    let action = envelope.action.as_deref();
    let handled = |actions: &[&str]| action.is_some_and(|a| actions.contains(&a));
    let ignored = || Event::Ignored {
        event: event_name.to_owned(),
        action: envelope.action.clone(),
    };
    let event = match event_name {
        "push" => Event::Push(serde_json::from_slice(body)?),
        "pull_request" if handled(PULL_REQUEST_ACTIONS) => {
            Event::PullRequest(serde_json::from_slice(body)?)
        }
        "check_suite" if handled(CHECK_SUITE_ACTIONS) => {
            Event::CheckSuite(serde_json::from_slice(body)?)
        }
        "check_run" if handled(CHECK_RUN_ACTIONS) => Event::CheckRun(serde_json::from_slice(body)?),
        "installation" => Event::Installation(serde_json::from_slice(body)?),
        "installation_repositories" => {
            Event::InstallationRepositories(serde_json::from_slice(body)?)
        }
        "ping" => Event::Ping(serde_json::from_slice(body)?),
        // Lenient, unlike the kinds above: GitHub-sourced triggers bind
        // `issue_comment.created` and read the raw body, not this model, so a comment
        // the model cannot read is `Ignored` (still fanned out), never a 400.
        "issue_comment" if handled(ISSUE_COMMENT_ACTIONS) => match serde_json::from_slice(body) {
            Ok(comment) => Event::IssueComment(comment),
            Err(_) => ignored(),
        },
        _ => ignored(),
    };
    Ok((envelope, event))
}

impl Event {
    /// The repository a sync would run for, when the event asks for one, or that a
    /// comment's commands are about.
    pub fn repository(&self) -> Option<&RepositoryRef> {
        match self {
            Event::Push(e) => Some(&e.repository),
            Event::PullRequest(e) => Some(&e.repository),
            Event::CheckSuite(e) => Some(&e.repository),
            Event::CheckRun(e) => Some(&e.repository),
            Event::IssueComment(e) => Some(&e.repository),
            _ => None,
        }
    }

    /// True for the events that become a sync job (202); false for those only
    /// acknowledged (200): ping, ignored events, pushes that delete a branch, and
    /// comments (whose commands the bot routes itself).
    pub fn wants_sync(&self) -> bool {
        match self {
            Event::Push(push) => !push.deleted,
            Event::PullRequest(_) | Event::CheckSuite(_) => true,
            Event::CheckRun(run) => run.action == "rerequested" || run.requests_accept_drift(),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn push_with_head_commit(head_commit: &str) -> PushEvent {
        let body = format!(
            r#"{{"ref":"refs/heads/main","before":"a","after":"b",
            "repository":{{"id":1,"full_name":"o/r"}},"head_commit":{head_commit}}}"#
        );
        match parse_event("push", body.as_bytes()) {
            Ok(Event::Push(push)) => push,
            other => panic!("expected a push, got {other:?}"),
        }
    }

    fn comment_delivery(action: &str, pull_request: &str, sender_type: &str) -> String {
        format!(
            r#"{{"action":"{action}",
            "issue":{{"number":7,"state":"open"{pull_request}}},
            "comment":{{"id":42,"body":"/astrolift help","user":{{"login":"mona","type":"User"}}}},
            "repository":{{"id":1,"full_name":"o/r"}},"installation":{{"id":9}},
            "sender":{{"login":"mona","type":"{sender_type}"}}}}"#
        )
    }

    fn comment_event(body: &str) -> Event {
        parse_event("issue_comment", body.as_bytes()).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_created_comment_on_a_pull_request_is_typed() {
        let on_pull = r#","pull_request":{"url":"https://api.github.com/repos/o/r/pulls/7"}"#;
        let event = comment_event(&comment_delivery("created", on_pull, "User"));
        let Event::IssueComment(comment) = &event else {
            panic!("expected a comment, got {event:?}")
        };
        assert!(comment.is_on_pull_request());
        assert!(!comment.by_a_bot());
        assert_eq!(comment.comment.id, 42);
        assert_eq!(comment.comment.body, "/astrolift help");
        assert_eq!(comment.comment.user.login, "mona");
        assert_eq!(comment.issue.number, 7);
        assert_eq!(comment.issue.state.as_deref(), Some("open"));
        assert_eq!(comment.installation.as_ref().map(|i| i.id), Some(9));
        assert_eq!(event.repository().map(|r| r.id), Some(1));
        assert!(!event.wants_sync());
    }

    #[test]
    fn a_comment_on_an_issue_and_one_by_a_bot_say_so() {
        let Event::IssueComment(on_issue) = comment_event(&comment_delivery("created", "", "User"))
        else {
            panic!("expected a comment")
        };
        assert!(!on_issue.is_on_pull_request());
        let Event::IssueComment(by_bot) = comment_event(&comment_delivery("created", "", "Bot"))
        else {
            panic!("expected a comment")
        };
        assert!(by_bot.by_a_bot());
        let authored_by_bot = comment_delivery("created", "", "User").replace(
            r#""login":"mona","type":"User"}}"#,
            r#""login":"app[bot]","type":"Bot"}}"#,
        );
        let Event::IssueComment(authored) = comment_event(&authored_by_bot) else {
            panic!("expected a comment")
        };
        assert!(authored.by_a_bot());
    }

    #[test]
    fn other_comment_actions_and_unreadable_comments_are_ignored() {
        for action in ["edited", "deleted"] {
            let event = comment_event(&comment_delivery(action, "", "User"));
            assert_eq!(
                event,
                Event::Ignored {
                    event: "issue_comment".to_owned(),
                    action: Some(action.to_owned())
                }
            );
        }
        let no_comment = r#"{"action":"created","repository":{"id":1,"full_name":"o/r"}}"#;
        assert!(matches!(comment_event(no_comment), Event::Ignored { .. }));
        assert!(parse_event("issue_comment", b"not json").is_err());
    }

    #[test]
    fn a_null_comment_body_is_empty() {
        let body = comment_delivery("created", "", "User").replace(r#""/astrolift help""#, "null");
        let Event::IssueComment(comment) = comment_event(&body) else {
            panic!("expected a comment")
        };
        assert_eq!(comment.comment.body, "");
    }

    #[test]
    fn head_commit_time_honours_the_offset() {
        let push = push_with_head_commit(r#"{"id":"b","timestamp":"2019-05-15T15:20:30-05:00"}"#);
        assert_eq!(push.head_commit_time(), Some(1_557_951_630));
    }

    #[test]
    fn head_commit_time_is_none_when_missing_or_unreadable() {
        for head_commit in [
            "null",
            r#"{"id":"b"}"#,
            r#"{"id":"b","timestamp":null}"#,
            r#"{"id":"b","timestamp":"yesterday"}"#,
        ] {
            assert_eq!(push_with_head_commit(head_commit).head_commit_time(), None);
        }
    }
}
