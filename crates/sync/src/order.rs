//! Commit order: which of two commits of one ref came later, by ancestry.
//!
//! The rule (docs/reference.md, "Registration order"): a push applies unless its head
//! is an ancestor of the commit already registered for the ref. A fast-forward
//! (the push's `before` is the registered commit) applies without asking; a
//! force push (the two have diverged) applies; a re-run of the registered
//! commit applies and writes nothing new. Committer timestamps never decide:
//! the committer writes them.
//!
//! This crate stays free of GitHub: the caller passes a [`CommitOrder`]
//! oracle (the bot's asks GitHub's compare API). Without one (local CLI runs
//! on a checkout the operator chose) the pushed commit applies.

use std::fmt::Debug;
use std::future::Future;
use std::pin::Pin;

/// Where the pushed commit stands relative to the registered one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// The pushed commit descends from the registered one.
    Newer,
    /// The pushed commit is an ancestor of the registered one: a late push.
    Older,
    /// Neither descends from the other: a force push.
    Diverged,
    /// The same commit.
    Same,
}

/// Why two commits could not be compared.
#[derive(Debug, thiserror::Error)]
#[error("cannot compare commits {registered} and {pushed}: {reason}")]
pub struct OrderError {
    pub registered: String,
    pub pushed: String,
    pub reason: String,
    /// True when asking again may succeed (an outage, a rate limit).
    pub retryable: bool,
}

/// The answer of [`CommitOrder::compare`] (boxed: the trait is used as `dyn`).
pub type OrderFuture<'a> = Pin<Box<dyn Future<Output = Result<Order, OrderError>> + Send + 'a>>;

/// Answers where `pushed` stands relative to `registered` in one repository.
pub trait CommitOrder: Debug + Send + Sync {
    fn compare<'a>(&'a self, registered: &'a str, pushed: &'a str) -> OrderFuture<'a>;
}
