//! The envelope of a delivery: the fields every reader of a webhook needs,
//! whatever its event, read once when the delivery is accepted.
//!
//! Ingress reads the repository and action from it (for every event, handled
//! or not), the trust policy of GitHub-sourced triggers its sender, the
//! sender's `author_association` and whether it comes from a fork, and
//! reporting its installation and subject (the issue or pull request a
//! result is reported to). The event kinds we act on have their own payload
//! model, one per kind, in `events`.
//!
//! Everything is optional and read leniently: GitHub sends these fields on
//! some events only. The body is scanned once; serde skips every other field
//! without building it. A verified body whose envelope fields have another
//! shape than GitHub's (never seen from GitHub) is *unreadable*: it names no
//! repository, sender, installation or subject, so it fans out to no binding
//! and is judged untrusted (the policy fails closed).

use serde::Deserialize;

/// What every reader of a delivery needs (see the module docs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Envelope {
    /// False when the body's envelope fields could not be read (see the module docs).
    pub readable: bool,
    /// `action`, on the events that have one.
    pub action: Option<String>,
    /// `repository.full_name`.
    pub repository: Option<String>,
    /// `sender.login`.
    pub sender: Option<String>,
    /// `installation.id`: the App installation that delivered the event.
    pub installation_id: Option<u64>,
    /// The sender's `author_association`: GitHub reports it on the objects
    /// of an event, not on its sender, so it is that of the first object
    /// the sender authored, in this order: `comment`, `review`,
    /// `pull_request`, `issue`, `discussion` (logins compared without case).
    /// `None` when the sender authored none of them (`push`, a label added
    /// by someone else, …).
    pub author_association: Option<String>,
    /// The event carries a pull request whose head repository is not its
    /// base repository (compared by id, else by full name), or whose head
    /// repository is gone (a deleted fork).
    pub fork: bool,
    /// The issue or pull request the event is about, if any.
    pub subject: Option<Subject>,
}

/// The issue or pull request an event is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject {
    /// The pull request's number when the event has one, else the issue's.
    pub number: u64,
    /// The pull request's head commit; `None` for an issue.
    pub head_sha: Option<String>,
}

impl Envelope {
    /// The envelope of `body`. `Err` only when the body is not a JSON object
    /// with, if any, a string `action`: such a delivery cannot be routed, and
    /// the webhook answers 400.
    pub fn read(body: &[u8]) -> Result<Self, serde_json::Error> {
        match serde_json::from_slice::<Wire>(body) {
            Ok(wire) => Ok(wire.into_envelope()),
            // The envelope's other fields have a shape GitHub never sends: the
            // action still routes the delivery, nothing else is believed.
            Err(_) => Ok(Envelope {
                action: serde_json::from_slice::<ActionOnly>(body)?.action,
                ..Envelope::default()
            }),
        }
    }
}

/// The `action` of any payload, without reading the rest.
#[derive(Deserialize)]
struct ActionOnly {
    #[serde(default)]
    action: Option<String>,
}

/// The body as the envelope reads it: a few optional fields (serde skips the
/// rest without building it).
#[derive(Debug, Default, Deserialize)]
struct Wire {
    action: Option<String>,
    repository: Option<Repository>,
    sender: Option<User>,
    installation: Option<Installation>,
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
struct Installation {
    id: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
struct Authored {
    user: Option<User>,
    author_association: Option<String>,
    number: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
struct PullRequest {
    user: Option<User>,
    author_association: Option<String>,
    number: Option<u64>,
    head: Option<Branch>,
    base: Option<Branch>,
}

#[derive(Debug, Default, Deserialize)]
struct Branch {
    sha: Option<String>,
    repo: Option<Repository>,
}

#[derive(Debug, Default, Deserialize)]
struct Repository {
    id: Option<u64>,
    full_name: Option<String>,
}

impl Wire {
    fn into_envelope(self) -> Envelope {
        let sender = self.sender.as_ref().and_then(|s| s.login.clone());
        let author_association = sender
            .as_deref()
            .and_then(|login| self.association_of(login))
            .map(str::to_owned);
        let fork = self.pull_request.as_ref().is_some_and(is_fork);
        let subject = self.subject();
        Envelope {
            readable: true,
            action: self.action,
            repository: self.repository.and_then(|r| r.full_name),
            sender,
            installation_id: self.installation.and_then(|i| i.id),
            author_association,
            fork,
            subject,
        }
    }

    /// The `author_association` of the first object `login` authored.
    fn association_of<'w>(&'w self, login: &str) -> Option<&'w str> {
        let by_sender = |user: &Option<User>| {
            user.as_ref()
                .and_then(|u| u.login.as_deref())
                .is_some_and(|l| l.eq_ignore_ascii_case(login))
        };
        let authored = |a: &'w Option<Authored>| {
            a.as_ref()
                .map(|a| (&a.user, a.author_association.as_deref()))
        };
        let pull = self
            .pull_request
            .as_ref()
            .map(|p| (&p.user, p.author_association.as_deref()));
        [
            authored(&self.comment),
            authored(&self.review),
            pull,
            authored(&self.issue),
            authored(&self.discussion),
        ]
        .into_iter()
        .flatten()
        .find(|(user, _)| by_sender(user))
        .and_then(|(_, association)| association)
    }

    /// The pull request when there is one (with its head), else the issue.
    fn subject(&self) -> Option<Subject> {
        if let Some(pull) = &self.pull_request {
            return Some(Subject {
                number: pull.number?,
                head_sha: pull.head.as_ref().and_then(|h| h.sha.clone()),
            });
        }
        let number = self.issue.as_ref()?.number?;
        Some(Subject {
            number,
            head_sha: None,
        })
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
