//! Which manifests a sync registers, and under which project: registrations are keyed by
//! (repository, manifest path), so one repository may hold several (different manifests,
//! projects or refs), and a manifest is covered by at most one (the stores enforce it).

use astrolift_store::StateStore;
use astrolift_store::state::{RepoRegistration, covering_registration};

use crate::SyncError;
use crate::commands::register_manifest_command;
use crate::report::{Coverage, Mode, Uncovered};

/// The registrations a sync plans against.
#[derive(Debug, Clone)]
pub(crate) struct Scope {
    /// Apply mode: the registrations this sync applies (the caller chose them: the pushed
    /// ref's, through the right installation). `None` in check mode.
    applying: Option<Vec<Coverage>>,
    /// Every registration of the repository.
    registrations: Vec<RepoRegistration>,
}

impl Scope {
    /// Reads the repository's registrations (one keyed read).
    pub(crate) async fn read(
        mode: &Mode,
        repository: &str,
        state: &dyn StateStore,
    ) -> Result<Scope, SyncError> {
        let registrations = state.list_repository_registrations(repository).await?;
        let applying = match mode {
            Mode::Apply { registrations } => Some(registrations.clone()),
            Mode::Check => None,
        };
        Ok(Scope {
            applying,
            registrations,
        })
    }

    /// The project `manifest_path` registers under: that of the registration this sync
    /// applies that covers it (apply), or of the repository's registration that covers it
    /// (check). `None`: no such registration, so it is only checked.
    pub(crate) fn project_of(&self, manifest_path: &str) -> Option<String> {
        match &self.applying {
            Some(applying) => applying
                .iter()
                .find(|c| c.covers(manifest_path))
                .map(|c| c.project_id.clone()),
            None => covering_registration(&self.registrations, manifest_path)
                .map(|r| r.project_id.clone()),
        }
    }

    /// A check of a repository with no registration at all: its plan shows what registering
    /// every manifest would do (the check run says how to register).
    pub(crate) fn is_unregistered_check(&self) -> bool {
        self.applying.is_none() && self.registrations.is_empty()
    }

    /// The manifests among `manifests` that no registration of the repository covers, when
    /// it has registrations (a repository without any is told to register as a whole), each
    /// with the command that would cover it: for the synced ref when a registration follows
    /// it, else for the ref of the repository's first registration.
    pub(crate) fn uncovered<'m>(
        &self,
        repository: &str,
        git_ref: Option<&str>,
        manifests: impl Iterator<Item = &'m str>,
    ) -> Vec<Uncovered> {
        let Some(first) = self.registrations.first() else {
            return Vec::new();
        };
        let suggested_ref = git_ref
            .filter(|r| {
                self.registrations
                    .iter()
                    .any(|reg| reg.registered_ref == *r)
            })
            .unwrap_or(&first.registered_ref);
        manifests
            .filter(|m| covering_registration(&self.registrations, m).is_none())
            .map(|manifest| Uncovered {
                manifest: manifest.to_owned(),
                how_to_register: register_manifest_command(repository, suggested_ref, manifest),
            })
            .collect()
    }
}
