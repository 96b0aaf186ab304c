//! Writing `astrolift.lock` (docs/reference.md §5.7): the entries a lock should hold for a
//! repository's agents, what `astrolift lock` writes and what an update pull request
//! commits.
//!
//! Every remote reference is resolved at its ref (the lock's pins are not used), through the
//! caller's fetcher, as a sync resolves it; then, reference by reference:
//! - a reference the [`Update`] does not move keeps its entry (the pin stays);
//! - any other gets the entry of what it resolved to: repository, path, ref, commit and the
//!   tree hash of the skill's files ([`astrolift_manifest::lock::skill_tree_hash`]), each read once;
//! - a reference that does not resolve keeps its entry, if it had one, and its findings are
//!   in [`Relocked::diagnostics`] (the caller writes nothing when one is an error);
//! - an entry no agent references is dropped.

use std::collections::{BTreeMap, BTreeSet};

use astrolift_manifest::lock::{
    HashedFile, Lock, LockEntry, hashed_files, render_lock, skill_tree_hash,
};
use astrolift_manifest::model::{AgentManifest, SkillRef};
use astrolift_manifest::remote_skill::RemoteSkill;
use astrolift_manifest::{Diagnostic, Limits, Span};
use astrolift_store::state::SkillSourceStore;

use crate::SyncError;
use crate::skills::{SkillContext, SkillFetcher, resolve_skills};

/// Which pins a relock moves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Update {
    /// None: only references without an entry are pinned (`astrolift lock`).
    Missing,
    /// Every one (`astrolift lock --update`).
    All,
    /// These references (`astrolift lock --update REFERENCE...`).
    References(BTreeSet<String>),
    /// The references pinned into one source, `repository` at `git_ref`, whose ref moved
    /// (an update pull request).
    Source { repository: String, git_ref: String },
}

impl Update {
    pub(crate) fn moves(&self, entry: &LockEntry) -> bool {
        match self {
            Update::Missing => false,
            Update::All => true,
            Update::References(references) => references.contains(&entry.reference),
            Update::Source {
                repository,
                git_ref,
                // GitHub names repositories case-insensitively; a push names its own spelling.
            } => entry.repository.eq_ignore_ascii_case(repository) && entry.git_ref == *git_ref,
        }
    }
}

/// A pin that moved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MovedPin {
    pub reference: String,
    pub repository: String,
    /// The skill's directory.
    pub path: String,
    pub old_commit: Option<String>,
    pub new_commit: Option<String>,
    /// Files of the skill's directory added, removed or changed between the two; `None`
    /// when the old commit could not be read.
    pub files_changed: Option<usize>,
}

/// What a relock found.
#[derive(Debug, Clone, Default)]
pub struct Relocked {
    /// The lock's entries, by reference.
    pub entries: BTreeMap<String, LockEntry>,
    /// The pins that changed commit or tree hash, by reference.
    pub moved: Vec<MovedPin>,
    /// References pinned that had no entry.
    pub added: usize,
    /// Entries dropped because no agent references them.
    pub dropped: usize,
    /// The findings of resolution.
    pub diagnostics: Vec<Diagnostic>,
}

impl Relocked {
    /// The lock's canonical text.
    pub fn text(&self) -> String {
        render_lock(self.entries.values())
    }

    /// Whether the lock should not be written: a finding is an error, or a reference is
    /// `skill/unresolved` (nothing was read, so there is nothing to pin).
    pub fn is_blocked(&self) -> bool {
        let unresolved = astrolift_manifest::remote_skill::UNRESOLVED.id;
        self.diagnostics
            .iter()
            .any(|d| d.is_error() || d.code == unresolved)
    }
}

/// What a relock reads from.
#[derive(Clone, Copy)]
pub struct RelockSources<'s> {
    pub state: &'s dyn SkillSourceStore,
    pub fetcher: &'s dyn SkillFetcher,
    pub limits: &'s Limits,
    /// Why an organization reference of an agent without a project is unresolved.
    pub no_project: &'s str,
}

impl std::fmt::Debug for RelockSources<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RelockSources")
            .field("fetcher", &self.fetcher)
            .finish_non_exhaustive()
    }
}

/// The lock `agents` (each with the project it registers under) should have, from `current`
/// moved as `update` says (see the module docs).
pub async fn relock(
    agents: &[(&AgentManifest, Option<String>)],
    current: Option<&Lock>,
    update: &Update,
    sources: &RelockSources<'_>,
) -> Result<Relocked, SyncError> {
    let context = SkillContext {
        state: sources.state,
        fetcher: Some(sources.fetcher),
        limits: sources.limits,
        no_project: sources.no_project,
        lock: None,
    };
    let mut relocked = Relocked::default();
    let (skills, _) = resolve_skills(agents, &context, &mut relocked.diagnostics).await?;
    let catalogue_ref = match sources.state.get_catalogue().await? {
        Some(catalogue) => catalogue.registered_ref,
        None => String::new(),
    };
    let mut resolved: BTreeMap<String, LockEntry> = BTreeMap::new();
    // Each resolved skill's file digests, by reference: what a moved pin's changed files
    // are counted against.
    let mut digests: BTreeMap<String, Digests> = BTreeMap::new();
    for ((manifest, _), agent) in agents.iter().zip(&skills) {
        for (skill, tree) in agent.iter() {
            let git_ref = ref_of(manifest, skill, &catalogue_ref);
            let limit = sources.limits.package_size;
            match hashed_files(tree.as_ref(), &skill.dir, &skill.files, limit) {
                Ok(files) => {
                    let tree_hash = skill_tree_hash(&files);
                    digests.insert(skill.reference.clone(), digests_of(&files));
                    resolved.insert(skill.reference.clone(), entry_of(skill, git_ref, tree_hash));
                }
                Err((path, error)) => relocked.diagnostics.push(Diagnostic::new(
                    &astrolift_manifest::lock::HASH_MISMATCH,
                    &manifest.manifest,
                    manifest
                        .reference_spans
                        .get(&skill.reference)
                        .copied()
                        .unwrap_or(Span::FILE),
                    format!(
                        "skill `{}`: `{path}` cannot be read to hash it: {error}",
                        skill.reference
                    ),
                )),
            }
        }
    }
    let referenced: BTreeSet<String> = agents
        .iter()
        .flat_map(|(manifest, _)| {
            manifest
                .skills
                .iter()
                .filter_map(SkillRef::remote_reference)
        })
        .collect();
    // The old commits' trees, fetched once per (repository, commit) however many moved pins
    // share one (a lock may pin many skills of one repository at one commit).
    let mut old_trees = OldTrees::new();
    for reference in referenced {
        let old = current.and_then(|lock| lock.entry(&reference));
        let new = resolved.remove(&reference);
        let entry = match (old, new) {
            (Some(old), Some(new)) if update.moves(old) => {
                if old.commit != new.commit || old.tree_hash != new.tree_hash {
                    let files_changed = files_changed(old, &digests, sources, &mut old_trees).await;
                    relocked.moved.push(MovedPin {
                        reference: reference.clone(),
                        repository: new.repository.clone(),
                        path: new.path.clone(),
                        old_commit: old.commit.clone(),
                        new_commit: new.commit.clone(),
                        files_changed,
                    });
                }
                new
            }
            (Some(old), _) => old.clone(),
            (None, Some(new)) => {
                relocked.added += 1;
                new
            }
            (None, None) => continue,
        };
        relocked.entries.insert(reference, entry);
    }
    relocked.dropped = current.map_or(0, |lock| {
        lock.entries
            .keys()
            .filter(|reference| !relocked.entries.contains_key(*reference))
            .count()
    });
    Ok(relocked)
}

/// Old commits' trees by (repository, pinned ref); `None`: it could not be read.
type OldTrees = BTreeMap<(String, String), Option<crate::skills::SkillTree>>;

/// Each file's content digest, by path relative to its skill's directory.
type Digests = BTreeMap<String, [u8; 32]>;

fn digests_of(files: &[HashedFile]) -> Digests {
    files
        .iter()
        .map(|file| (file.path.clone(), file.digest))
        .collect()
}

/// How many files of `old`'s skill directory differ at its new pin (`digests` of the new
/// files, by reference): the old commit fetched once more and its directory's files
/// compared. `None` when it cannot be read.
async fn files_changed(
    old: &LockEntry,
    digests: &BTreeMap<String, Digests>,
    sources: &RelockSources<'_>,
    old_trees: &mut OldTrees,
) -> Option<usize> {
    let new = digests.get(&old.reference)?;
    let key = (old.repository.clone(), old.pinned_ref().to_owned());
    if !old_trees.contains_key(&key) {
        let fetched = sources.fetcher.fetch(&key.0, &key.1).await.ok();
        let tree = match fetched {
            Some(crate::skills::SkillFetch::Tree { tree, .. }) => Some(tree),
            _ => None,
        };
        old_trees.insert(key.clone(), tree);
    }
    let tree = old_trees.get(&key)?.as_ref()?;
    let files: Vec<String> = tree
        .entries_under(&old.path)
        .iter()
        .filter(|entry| entry.kind == astrolift_manifest::EntryKind::File)
        .map(|entry| entry.path.clone())
        .collect();
    let limit = sources.limits.package_size;
    let before = digests_of(&hashed_files(tree.as_ref(), &old.path, &files, limit).ok()?);
    let paths: BTreeSet<&String> = before.keys().chain(new.keys()).collect();
    Some(
        paths
            .into_iter()
            .filter(|path| before.get(*path) != new.get(*path))
            .count(),
    )
}

/// The ref `skill` was resolved from: an organization reference's own, or the catalogue's.
fn ref_of(manifest: &AgentManifest, skill: &RemoteSkill, catalogue_ref: &str) -> String {
    manifest
        .skills
        .iter()
        .find_map(|written| match written {
            SkillRef::Org { git_ref, .. }
                if written.remote_reference().as_deref() == Some(skill.reference.as_str()) =>
            {
                Some(git_ref.clone())
            }
            _ => None,
        })
        .unwrap_or_else(|| catalogue_ref.to_owned())
}

fn entry_of(skill: &RemoteSkill, git_ref: String, tree_hash: String) -> LockEntry {
    LockEntry {
        reference: skill.reference.clone(),
        repository: skill.repository.clone(),
        path: skill.dir.clone(),
        git_ref,
        commit: skill.commit.clone(),
        tree_hash,
        span: Span::FILE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(reference: &str, repository: &str) -> LockEntry {
        LockEntry {
            reference: reference.to_owned(),
            repository: repository.to_owned(),
            path: "skills/x".to_owned(),
            git_ref: "main".to_owned(),
            commit: None,
            tree_hash: String::new(),
            span: Span::FILE,
        }
    }

    #[test]
    fn each_update_moves_the_pins_it_names() {
        let pinned = entry("x@1", "Acme/Skills");
        assert!(!Update::Missing.moves(&pinned));
        assert!(Update::All.moves(&pinned));
        assert!(Update::References(["x@1".to_owned()].into()).moves(&pinned));
        assert!(!Update::References(["y@1".to_owned()].into()).moves(&pinned));
        let source = |repository: &str, git_ref: &str| Update::Source {
            repository: repository.to_owned(),
            git_ref: git_ref.to_owned(),
        };
        assert!(
            source("acme/skills", "main").moves(&pinned),
            "GitHub ignores case"
        );
        assert!(!source("acme/skills", "dev").moves(&pinned));
        assert!(!source("acme/other", "main").moves(&pinned));
    }
}
