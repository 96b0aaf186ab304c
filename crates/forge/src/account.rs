//! A GitHub account as the REST API and webhook payloads name it: an event's sender, the
//! author of a comment, a review, a reaction or a pull request. One type for all of them,
//! shared by [`crate::webhook`] and [`crate::github`].

use serde::{Deserialize, Serialize};

/// A GitHub account.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct User {
    pub login: String,
    /// `User`, `Bot` (an App, GitHub Actions), `Organization` or `Mannequin`; absent from
    /// some older payloads.
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
}

impl User {
    /// True for an App or GitHub Actions: a person cannot act as an account of type `Bot`.
    pub fn is_bot(&self) -> bool {
        self.kind.as_deref() == Some("Bot")
    }
}

/// True when `author` is a bot: what a comment or review whose author may be gone (null)
/// answers.
pub(crate) fn by_a_bot(author: Option<&User>) -> bool {
    author.is_some_and(User::is_bot)
}
