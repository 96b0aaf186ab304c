//! Webhook ingress: size limit, body decoding, signature, event parsing.

mod envelope;
mod events;
mod ingress;
mod signature;

pub use crate::account::User;
pub use envelope::{Envelope, Subject};
pub use events::{
    CheckRunEvent, CheckSuiteEvent, Comment, CommentedIssue, Event, HeadCommit, InstallationEvent,
    InstallationRef, InstallationRepositoriesEvent, IssueCommentEvent, IssuePullRequest, PingEvent,
    PullRequestEvent, PushEvent, RepositoryRef, RequestedAction, parse_delivery, parse_event,
};
pub use ingress::{Accepted, IngressError, WebhookRequest, accept};
pub use signature::{SignatureError, WebhookSecrets, sign, verify_signature};
