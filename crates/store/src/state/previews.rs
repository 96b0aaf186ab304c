//! Previews of a pull request's agents (docs/reference.md §7, "preview"): for an open pull
//! request of a registration with `previews`, one [`Preview`] per agent, keyed by
//! (repository, manifest path, pull request), pinned to the head commit it was packaged
//! from. A preview never changes the registered agent: it is a record of its own, under
//! its own name ([`preview_name`]).
//!
//! Tearing a preview down marks it `torn_down` (the record stays, as an agent's does) and
//! writes, in the same atomic write, an audit event `preview-closed`
//! ([`AuditAction::PreviewClosed`]). Those events are kept apart from the agents' audit
//! history, whose sequence numbers are agent versions, as drift acceptances are
//! ([`super::workspaces`]): keyed by (repository, manifest path, pull request, the
//! preview's version after the teardown), read with [`PreviewStore::list_preview_events`].
//!
//! One concern of the state store, reached through
//! [`StateStore::previews`](super::StateStore::previews); its contract suite is
//! `crates/store/tests/it/preview_contract.rs`, run on SQLite and DynamoDB.

use serde::{Deserialize, Serialize};

use super::model::{Agent, AgentStatus, AuditAction, AuditEvent, UnixSeconds};
use crate::{BoxFuture, StoreResult};

/// The longest preview name, in characters (docs/reference.md §7, "preview").
pub const MAX_PREVIEW_NAME_CHARS: usize = 64;

/// How often [`PreviewStore::tear_down_previews`] reads a preview again when a write of it
/// (a push to the pull request) came between its read and its teardown.
const MAX_TEARDOWN_ATTEMPTS: usize = 3;

/// The name of `agent`'s preview for pull request `pull_request`: `<agent>-pr<N>`, the
/// agent part cut (on a character boundary) so that the whole name is at most
/// [`MAX_PREVIEW_NAME_CHARS`] characters; the `-pr<N>` suffix is always whole.
pub fn preview_name(agent: &str, pull_request: u64) -> String {
    let suffix = format!("-pr{pull_request}");
    let room = MAX_PREVIEW_NAME_CHARS.saturating_sub(suffix.chars().count());
    let mut name: String = agent.chars().take(room).collect();
    name.push_str(&suffix);
    name
}

/// Whether a preview can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PreviewStatus {
    /// Recorded for the pull request's previewed head.
    Active,
    /// Its pull request was closed, it had no push for 7 days, or its agent was torn down.
    /// The record stays, so its version continues if the pull request is reopened.
    TornDown,
}

impl PreviewStatus {
    /// The wire name (`active`, `torn_down`).
    pub fn as_str(self) -> &'static str {
        match self {
            PreviewStatus::Active => "active",
            PreviewStatus::TornDown => "torn_down",
        }
    }
}

/// A pull request's preview of one agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Preview {
    /// `owner/name`.
    pub repository: String,
    /// The agent's manifest.
    pub manifest_path: String,
    /// The pull request's number.
    pub pull_request: u64,
    /// The project of the registration that covers the manifest.
    pub project_id: String,
    /// The agent's own name, as its manifest at the head names it.
    pub agent: String,
    /// [`preview_name`] of `agent` and `pull_request`.
    pub name: String,
    /// The head commit it was packaged from.
    pub head_sha: String,
    /// sha256 of its package snapshot.
    pub snapshot_hash: String,
    /// sha256 of its package archive.
    pub payload_digest: String,
    /// The layer key of its package's dependency files, as on an agent; `None` for a
    /// package that needs no layer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layer_key: Option<String>,
    /// Whether it can run.
    pub status: PreviewStatus,
    /// For a pull request from a fork: the login that approved this head with
    /// `/astrolift preview`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fork_approved_by: Option<String>,
    /// The last push (sync) of the pull request's head: reconcile tears down a preview
    /// without one for 7 days.
    pub pushed_at: UnixSeconds,
    /// When it was last written.
    pub updated_at: UnixSeconds,
    /// 1 on creation, +1 on every write.
    pub version: u64,
}

impl Preview {
    /// The agent record it runs as (what a dispatch of it, and `agents list --previews`,
    /// read): its own name, package, snapshot and layers, its head commit, under the
    /// registered agent's repository, manifest and project; active while it is.
    pub fn as_agent(&self) -> Agent {
        Agent {
            repository: self.repository.clone(),
            manifest_path: self.manifest_path.clone(),
            project_id: self.project_id.clone(),
            name: self.name.clone(),
            alias: None,
            status: match self.status {
                PreviewStatus::Active => AgentStatus::Active,
                PreviewStatus::TornDown => AgentStatus::TornDown,
            },
            snapshot_hash: self.snapshot_hash.clone(),
            payload_digest: self.payload_digest.clone(),
            commit: self.head_sha.clone(),
            version: self.version,
            updated_at: self.updated_at,
            bindings_digest: None,
            layer_key: self.layer_key.clone(),
            package_build: None,
        }
    }

    /// The record `put_preview` stores over `stored` (the record at its key, if any): this
    /// one, `active`, one version past the stored one.
    pub(crate) fn put_over(&self, stored: Option<u64>) -> Preview {
        Preview {
            status: PreviewStatus::Active,
            version: stored.map_or(1, |version| version + 1),
            ..self.clone()
        }
    }

    /// The record and audit event of its teardown at `at`, or `None` when it is not
    /// active.
    pub(crate) fn torn_down(&self, detail: &str, at: UnixSeconds) -> Option<(Preview, AuditEvent)> {
        if self.status != PreviewStatus::Active {
            return None;
        }
        let torn = Preview {
            status: PreviewStatus::TornDown,
            updated_at: at,
            version: self.version + 1,
            ..self.clone()
        };
        let event = AuditEvent {
            repository: self.repository.clone(),
            manifest_path: self.manifest_path.clone(),
            version: torn.version,
            action: AuditAction::PreviewClosed,
            commit: self.head_sha.clone(),
            snapshot_hash: self.snapshot_hash.clone(),
            previous_snapshot_hash: None,
            detail: format!(
                "preview {} of pull request #{}: {detail}",
                self.name, self.pull_request
            ),
            at,
        };
        Some((torn, event))
    }
}

/// Previews of pull requests' agents. Dyn-compatible.
///
/// Contract (the contract suite runs it on SQLite and DynamoDB):
/// - `put_preview` creates or replaces the preview of (repository, manifest path, pull
///   request), `active`, at the stored version + 1 (1 when new), whatever the given record
///   says of either; a put over a torn-down preview makes it active again;
/// - `close_preview` tears a preview down only while it is stored as given (same version,
///   `active`), writing the record and its `preview-closed` event in one atomic write;
/// - reads by key and by repository see the last write; `find_preview` reads, on DynamoDB,
///   an eventually consistent index;
/// - every read is keyed: by key, by repository, or by (project, name).
pub trait PreviewStore: Send + Sync {
    /// Creates or replaces the preview of (`preview.repository`, `preview.manifest_path`,
    /// `preview.pull_request`); returns what was stored (`active`, its version the stored
    /// one + 1).
    fn put_preview<'a>(&'a self, preview: &'a Preview) -> BoxFuture<'a, StoreResult<Preview>>;

    /// The preview of one manifest for one pull request, whatever its status.
    fn get_preview<'a>(
        &'a self,
        repository: &'a str,
        manifest_path: &'a str,
        pull_request: u64,
    ) -> BoxFuture<'a, StoreResult<Option<Preview>>>;

    /// Every preview of a repository, torn-down ones too, ordered by (pull request,
    /// manifest path).
    fn list_previews<'a>(&'a self, repository: &'a str)
    -> BoxFuture<'a, StoreResult<Vec<Preview>>>;

    /// The active previews of project `project_id` named `name` (a preview name, e.g.
    /// `triage-pr12`), ordered by (repository, pull request, manifest path).
    fn find_preview<'a>(
        &'a self,
        project_id: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<Preview>>>;

    /// The pull requests of `repository` with an active preview, ascending, each once:
    /// [`PreviewStore::list_previews`], which is in pull-request order.
    fn open_preview_pull_requests<'a>(
        &'a self,
        repository: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<u64>>> {
        Box::pin(async move {
            let mut open: Vec<u64> = self
                .list_previews(repository)
                .await?
                .iter()
                .filter(|p| p.status == PreviewStatus::Active)
                .map(|p| p.pull_request)
                .collect();
            open.dedup();
            Ok(open)
        })
    }

    /// Tears `preview` down if it is stored as given (same version, `active`): the record
    /// `torn_down` at its version + 1 and its `preview-closed` audit event (its detail
    /// `preview <name> of pull request #N: <detail>`), in one atomic write. Returns the
    /// torn-down record, or `None` (nothing written) when the stored one is not as given.
    fn close_preview<'a>(
        &'a self,
        preview: &'a Preview,
        detail: &'a str,
        at: UnixSeconds,
    ) -> BoxFuture<'a, StoreResult<Option<Preview>>>;

    /// The `preview-closed` events of one manifest's previews, ordered by (pull request,
    /// version).
    fn list_preview_events<'a>(
        &'a self,
        repository: &'a str,
        manifest_path: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<AuditEvent>>>;

    /// Tears down every active preview of pull request `pull_request` of `repository`
    /// ([`PreviewStore::close_preview`], each one atomic with its event); returns the
    /// torn-down records. Idempotent: a second call finds none active and writes nothing.
    fn tear_down_previews<'a>(
        &'a self,
        repository: &'a str,
        pull_request: u64,
        detail: &'a str,
        at: UnixSeconds,
    ) -> BoxFuture<'a, StoreResult<Vec<Preview>>> {
        Box::pin(async move {
            let previews = self.list_previews(repository).await?;
            let of_pull_request = previews
                .into_iter()
                .filter(|p| p.pull_request == pull_request)
                .collect();
            close_all(self, of_pull_request, detail, at).await
        })
    }
}

/// Tears down each active one of `previews` ([`PreviewStore::close_preview`]); one that
/// was written since it was read is read again and torn down as it is now, at most
/// [`MAX_TEARDOWN_ATTEMPTS`] times. Returns the torn-down records.
pub(crate) async fn close_all<S: PreviewStore + ?Sized>(
    store: &S,
    previews: Vec<Preview>,
    detail: &str,
    at: UnixSeconds,
) -> StoreResult<Vec<Preview>> {
    let mut torn_down = Vec::new();
    for preview in previews {
        let mut current = Some(preview);
        for _ in 0..MAX_TEARDOWN_ATTEMPTS {
            let Some(read) = current.take() else {
                break;
            };
            if read.status != PreviewStatus::Active {
                break;
            }
            if let Some(torn) = store.close_preview(&read, detail, at).await? {
                torn_down.push(torn);
                break;
            }
            current = store
                .get_preview(&read.repository, &read.manifest_path, read.pull_request)
                .await?;
        }
    }
    Ok(torn_down)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_preview_name_is_the_agent_and_the_pull_request() {
        assert_eq!(preview_name("triage", 12), "triage-pr12");
    }

    #[test]
    fn a_name_of_exactly_64_characters_is_kept_whole() {
        let agent = "a".repeat(MAX_PREVIEW_NAME_CHARS - "-pr7".len());
        let name = preview_name(&agent, 7);
        assert_eq!(name.chars().count(), MAX_PREVIEW_NAME_CHARS);
        assert_eq!(name, format!("{agent}-pr7"));
    }

    #[test]
    fn a_longer_name_loses_the_end_of_the_agent_part_and_keeps_the_suffix() {
        let agent = "b".repeat(MAX_PREVIEW_NAME_CHARS);
        let name = preview_name(&agent, 12345);
        assert_eq!(name.chars().count(), MAX_PREVIEW_NAME_CHARS);
        assert!(name.ends_with("b-pr12345"), "{name}");
        assert_eq!(preview_name(&agent, u64::MAX).chars().count(), 64);
    }

    #[test]
    fn a_name_is_cut_on_a_character_boundary() {
        // 2-byte characters: a cut by bytes would split one.
        let agent = "é".repeat(70);
        let name = preview_name(&agent, 3);
        assert_eq!(name.chars().count(), MAX_PREVIEW_NAME_CHARS);
        assert_eq!(name, format!("{}-pr3", "é".repeat(60)));
    }

    #[test]
    fn statuses_have_their_wire_names() {
        for status in [PreviewStatus::Active, PreviewStatus::TornDown] {
            assert_eq!(
                serde_json::to_value(status).ok(),
                Some(serde_json::json!(status.as_str()))
            );
        }
        assert_eq!(PreviewStatus::TornDown.as_str(), "torn_down");
    }

    #[test]
    fn the_closing_audit_action_is_preview_closed() {
        assert_eq!(
            serde_json::to_value(AuditAction::PreviewClosed).ok(),
            Some(serde_json::json!("preview-closed"))
        );
    }
}
