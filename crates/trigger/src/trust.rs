//! The trust policy of GitHub-sourced bindings.
//!
//! A GitHub event is **trusted** when it is not a pull request from a fork
//! and its sender's `author_association` is `OWNER`, `MEMBER` or
//! `COLLABORATOR`. A binding fires for an untrusted event only with
//! `allow_untrusted = true`; the dispatch records `sender` and `trusted`.
//!
//! - **Fork.** The event carries a `pull_request` whose head repository is
//!   not its base repository (compared by id, else by full name), or whose
//!   head repository is gone (a deleted fork).
//! - **The sender's association.** GitHub reports `author_association` on
//!   the objects of an event, not on its sender; the sender's is that of the
//!   object the sender authored, looked up in this order: `comment`,
//!   `review`, `pull_request`, `issue`, `discussion` (the first whose
//!   `user.login` is the sender's). An event with no such object (`push`,
//!   `issues.labeled` by someone other than the issue's author, …) has no
//!   known association and is untrusted: the policy fails closed, and a
//!   binding for such events says `allow_untrusted = true` when the event
//!   itself is limited to people with access (only they can push or label).
//! - A body that is not JSON is untrusted, with no sender.
//!
//! The body is read into a few optional fields only (serde skips the rest
//! without building it), so the cost is one scan of the body.

use serde::Deserialize;

/// The associations that make a sender trusted.
pub const TRUSTED_ASSOCIATIONS: &[&str] = &["OWNER", "MEMBER", "COLLABORATOR"];

/// The trust verdict on one GitHub event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trust {
    /// The sender's login, when the event names one.
    pub sender: Option<String>,
    pub trusted: bool,
    /// Why it is untrusted (for logs and the 403 body); empty when trusted.
    pub reason: String,
}

#[derive(Debug, Default, Deserialize)]
struct Event {
    sender: Option<User>,
    comment: Option<Authored>,
    review: Option<Authored>,
    pull_request: Option<PullRequest>,
    issue: Option<Authored>,
    discussion: Option<Authored>,
}

#[derive(Debug, Default, Deserialize)]
struct User {
    login: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct Authored {
    user: Option<User>,
    author_association: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct PullRequest {
    user: Option<User>,
    author_association: Option<String>,
    head: Option<Branch>,
    base: Option<Branch>,
}

#[derive(Debug, Default, Deserialize)]
struct Branch {
    repo: Option<Repository>,
}

#[derive(Debug, Default, Deserialize)]
struct Repository {
    id: Option<u64>,
    full_name: Option<String>,
}

/// The verdict on a GitHub event body (see the module docs).
pub fn assess(body: &[u8]) -> Trust {
    let Ok(event) = serde_json::from_slice::<Event>(body) else {
        return untrusted(None, "the event is not a JSON object");
    };
    let sender = event.sender.as_ref().and_then(|s| s.login.clone());
    if let Some(pull) = &event.pull_request
        && is_fork(pull)
    {
        return untrusted(sender, "a pull request from a fork");
    }
    let Some(login) = sender.as_deref() else {
        return untrusted(None, "the event has no sender");
    };
    match sender_association(&event, login) {
        Some(association) if TRUSTED_ASSOCIATIONS.contains(&association) => Trust {
            sender,
            trusted: true,
            reason: String::new(),
        },
        Some(association) => {
            let reason = format!("the sender's author_association is {association}");
            untrusted(sender, &reason)
        }
        None => untrusted(sender, "the sender's author_association is unknown"),
    }
}

fn untrusted(sender: Option<String>, reason: &str) -> Trust {
    Trust {
        sender,
        trusted: false,
        reason: reason.to_owned(),
    }
}

/// A pull request whose head repository is not its base repository.
fn is_fork(pull: &PullRequest) -> bool {
    fn repo(branch: &Option<Branch>) -> Option<&Repository> {
        branch.as_ref().and_then(|b| b.repo.as_ref())
    }
    let (Some(head), Some(base)) = (repo(&pull.head), repo(&pull.base)) else {
        // No head repository: the fork was deleted. No base: not a full
        // pull request object, so no fork to judge.
        return pull.head.is_some() && repo(&pull.head).is_none();
    };
    match (head.id, base.id) {
        (Some(head), Some(base)) => head != base,
        _ => !head
            .full_name
            .as_deref()
            .zip(base.full_name.as_deref())
            .is_some_and(|(h, b)| h.eq_ignore_ascii_case(b)),
    }
}

/// The `author_association` of the first object `login` authored.
fn sender_association<'e>(event: &'e Event, login: &str) -> Option<&'e str> {
    let by_sender = |user: &Option<User>| {
        user.as_ref()
            .and_then(|u| u.login.as_deref())
            .is_some_and(|l| l.eq_ignore_ascii_case(login))
    };
    let authored = |a: &'e Option<Authored>| a.as_ref().map(|a| (&a.user, &a.author_association));
    let pull = event
        .pull_request
        .as_ref()
        .map(|p| (&p.user, &p.author_association));
    [
        authored(&event.comment),
        authored(&event.review),
        pull,
        authored(&event.issue),
        authored(&event.discussion),
    ]
    .into_iter()
    .flatten()
    .find(|(user, _)| by_sender(user))
    .and_then(|(_, association)| association.as_deref())
}
