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
    pub sender: Option<Sender>,
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

/// The user who caused an event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sender {
    pub login: String,
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
    /// Acknowledged and not acted on (though a GitHub-sourced trigger may bind it).
    Ignored {
        event: String,
        action: Option<String>,
    },
}

const PULL_REQUEST_ACTIONS: &[&str] = &["opened", "synchronize", "reopened", "ready_for_review"];
const CHECK_SUITE_ACTIONS: &[&str] = &["requested", "rerequested"];
const CHECK_RUN_ACTIONS: &[&str] = &["rerequested", "requested_action"];

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
/// error (the webhook answers 400), as is a body that is not a JSON object.
pub fn parse_delivery(
    event_name: &str,
    body: &[u8],
) -> Result<(Envelope, Event), serde_json::Error> {
    let envelope = Envelope::read(body)?;
    let action = envelope.action.as_deref();
    let handled = |actions: &[&str]| action.is_some_and(|a| actions.contains(&a));
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
        _ => Event::Ignored {
            event: event_name.to_owned(),
            action: envelope.action.clone(),
        },
    };
    Ok((envelope, event))
}

impl Event {
    /// The repository a sync would run for, when the event asks for one.
    pub fn repository(&self) -> Option<&RepositoryRef> {
        match self {
            Event::Push(e) => Some(&e.repository),
            Event::PullRequest(e) => Some(&e.repository),
            Event::CheckSuite(e) => Some(&e.repository),
            Event::CheckRun(e) => Some(&e.repository),
            _ => None,
        }
    }

    /// True for the events that become a sync job (202); false for those only
    /// acknowledged (200): ping, ignored events, and pushes that delete a branch.
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
