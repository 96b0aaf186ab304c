//! The trust policy of GitHub-sourced bindings.
//!
//! A GitHub event is **trusted** when it is not a pull request from a fork
//! and its sender's `author_association` is `OWNER`, `MEMBER` or
//! `COLLABORATOR`. A binding fires for an untrusted event only with
//! `allow_untrusted = true`; the dispatch records `sender` and `trusted`.
//!
//! The facts come from the delivery's envelope
//! ([`astrolift_forge::webhook::Envelope`], read once when the delivery is
//! accepted): its sender, the sender's `author_association` (that of the
//! first object the sender authored: `comment`, `review`, `pull_request`,
//! `issue`, `discussion`) and whether it is a pull request from a fork. An
//! event with no known association (`push`, `issues.labeled` by someone other
//! than the author, …) is untrusted: the policy fails closed, and a
//! binding for such events says `allow_untrusted = true` when the event
//! itself is limited to people with access (only they can push or label).
//! A body that is not a JSON object, or whose envelope is unreadable, is
//! untrusted, with no sender.

use astrolift_forge::webhook::Envelope;

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

/// The verdict on a delivery's envelope (see the module docs).
pub fn judge(envelope: &Envelope) -> Trust {
    if !envelope.readable {
        return untrusted(None, "the event is not a JSON object");
    }
    let sender = envelope.sender.clone();
    if envelope.fork {
        return untrusted(sender, "a pull request from a fork");
    }
    if sender.is_none() {
        return untrusted(None, "the event has no sender");
    }
    match envelope.author_association.as_deref() {
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

/// The verdict on a GitHub event body: its envelope read, then [`judge`]d.
pub fn assess(body: &[u8]) -> Trust {
    match Envelope::read(body) {
        Ok(envelope) => judge(&envelope),
        Err(_) => untrusted(None, "the event is not a JSON object"),
    }
}

fn untrusted(sender: Option<String>, reason: &str) -> Trust {
    Trust {
        sender,
        trusted: false,
        reason: reason.to_owned(),
    }
}
