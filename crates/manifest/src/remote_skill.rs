//! Remote skills (docs/reference.md §5.1, "Remote skills"): a catalogue reference (`"name@version"`) or an
//! organization one (`"alias/path/to/skill@ref"`) resolved against skill repositories the
//! caller has already fetched.
//!
//! Pure like the rest of the crate: the caller looks up the registrations (the agent's
//! project's alias, the deployment's catalogue), resolves each ref to a commit and reads each
//! repository's tree once, and answers through [`RemoteSkillSources`]. This module reads the
//! skill directory out of that tree, validates its `SKILL.md` like a local skill's, lists the
//! files packaged with it, and reports each failure once, as a diagnostic on the manifest
//! line that names the reference ([`AgentManifest::reference_spans`]).
//!
//! Decisions where the issue is silent:
//! - an alias of another project is reported exactly like an unknown alias (as env specs of
//!   another project are), so no tenant learns which aliases another project registered;
//! - a catalogue skill lives in `skills/<name>/<version>/` and its `name` must be `<name>`;
//!   an unknown name is reported with the names the catalogue has, an unknown version with
//!   the versions of that name (semver order);
//! - a `SKILL.md` that does not validate is one error on the reference, naming the first
//!   finding in the skill repository (and how many more there are); warnings there are not
//!   repeated; a symlink or special file in the skill's directories is an error too (as it
//!   fails a local skill's package), never silently left out;
//! - a source that cannot be asked here (a local run without App credentials) makes the
//!   reference a `skill/unresolved` warning stating why, never an error.

use std::collections::BTreeSet;

use crate::diagnostic::{Code, Diagnostic, Severity, Span};
use crate::limits::Limits;
use crate::lock::{self, LOCK_FILE, LockEntry};
use crate::model::{AgentManifest, LocalSkill, SkillRef};
use crate::paths;
use crate::skill;
use crate::tree::{EntryKind, SourceTree};

pub const UNKNOWN_REPO_ALIAS: Code = Code::new(
    "skill/unknown-repo-alias",
    Severity::Error,
    "An organization skill names an alias the agent's project has not registered.",
);
pub const REPO_NOT_INSTALLED: Code = Code::new(
    "skill/repo-not-installed",
    Severity::Error,
    "The App is not installed on the skill repository (or cannot read it).",
);
pub const UNKNOWN_REF: Code = Code::new(
    "skill/unknown-ref",
    Severity::Error,
    "The skill reference's ref names no commit of its repository.",
);
pub const MISSING_REMOTE_SKILL: Code = Code::new(
    "skill/missing-remote",
    Severity::Error,
    "The path of an organization skill has no SKILL.md at the resolved commit.",
);
pub const NO_CATALOGUE: Code = Code::new(
    "skill/no-catalogue",
    Severity::Error,
    "A catalogue skill is referenced and no catalogue is registered.",
);
pub const NOT_IN_CATALOGUE: Code = Code::new(
    "skill/not-in-catalogue",
    Severity::Error,
    "The catalogue has no skill of that name, or not that version; the message lists what exists.",
);
pub const INVALID_REMOTE_SKILL: Code = Code::new(
    "skill/invalid-remote",
    Severity::Error,
    "The SKILL.md of a catalogue or organization skill does not validate.",
);
pub const TOO_MANY_REPOSITORIES: Code = Code::new(
    "skill/too-many-repositories",
    Severity::Error,
    "The repository's agents name more skill repositories (distinct repository and ref) than one sync fetches.",
);
pub const UNRESOLVED: Code = Code::new(
    "skill/unresolved",
    Severity::Warning,
    "A catalogue or organization skill could not be resolved here; the message says why.",
);

/// The codes of this module, for the catalogue.
pub const CODES: &[&Code] = &[
    &UNKNOWN_REPO_ALIAS,
    &REPO_NOT_INSTALLED,
    &UNKNOWN_REF,
    &MISSING_REMOTE_SKILL,
    &NO_CATALOGUE,
    &NOT_IN_CATALOGUE,
    &INVALID_REMOTE_SKILL,
    &TOO_MANY_REPOSITORIES,
    &UNRESOLVED,
];

/// What the caller found for one skill repository at one ref.
pub enum Fetched<'t> {
    /// Its tree at `commit`, the commit the ref named.
    Tree {
        /// `owner/name`, or `file:PATH` for a local directory.
        repository: String,
        /// 40 hex digits; `None` for a tree no commit names (a local directory that is not
        /// a Git checkout, docs/reference.md §5.1).
        commit: Option<String>,
        tree: &'t dyn SourceTree,
    },
    /// The App is not installed on `repository`, or cannot read it.
    NotInstalled { repository: String },
    /// The ref names no commit of `repository`.
    UnknownRef { repository: String },
    /// It was not fetched: the sync already fetched `limit` skill repositories
    /// ([`Limits::skill_repositories`]).
    OverLimit { limit: usize },
    /// It could not be asked here; `reason` says why (no App credentials, say, or a local
    /// `file:` source where only the CLI reads them).
    Unresolved { reason: String },
}

impl std::fmt::Debug for Fetched<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fetched::Tree {
                repository, commit, ..
            } => f
                .debug_struct("Tree")
                .field("repository", repository)
                .field("commit", commit)
                .finish_non_exhaustive(),
            Fetched::NotInstalled { repository } => f
                .debug_struct("NotInstalled")
                .field("repository", repository)
                .finish(),
            Fetched::UnknownRef { repository } => f
                .debug_struct("UnknownRef")
                .field("repository", repository)
                .finish(),
            Fetched::OverLimit { limit } => {
                f.debug_struct("OverLimit").field("limit", limit).finish()
            }
            Fetched::Unresolved { reason } => f
                .debug_struct("Unresolved")
                .field("reason", reason)
                .finish(),
        }
    }
}

/// The skill repositories of one agent's project, as the caller fetched them.
pub trait RemoteSkillSources {
    /// The repository the project registered as `alias`, at `git_ref`; `None` when the
    /// project has no such alias.
    fn organization(&self, alias: &str, git_ref: &str) -> Option<Fetched<'_>>;
    /// The catalogue at its registered ref; `None` when no catalogue is registered.
    fn catalogue(&self) -> Option<Fetched<'_>>;
    /// How the repository's lock pins `skill` (written `reference`): [`LockPin::Unlocked`] when
    /// the repository has no lock (docs/reference.md §5.7).
    fn pin(&self, _skill: &SkillRef, _reference: &str) -> LockPin<'_> {
        LockPin::Unlocked
    }
    /// The repository of a locked entry at its pinned commit (at its ref for an entry
    /// without one).
    fn locked(&self, _entry: &LockEntry) -> Fetched<'_> {
        Fetched::Unresolved {
            reason: "the lock is not read here".to_owned(),
        }
    }
}

/// How the repository's lock pins one reference (docs/reference.md §5.7).
#[derive(Debug, Clone, Copy)]
pub enum LockPin<'l> {
    /// The repository has no lock: the reference resolves at its ref.
    Unlocked,
    /// Resolved at the entry's commit, then its tree hash verified.
    Locked(&'l LockEntry),
    /// The lock has no entry for it (`lock/missing-entry`).
    Missing,
    /// The entry's repository is not the one the reference's alias or the catalogue names
    /// now; `None`: none is registered (`lock/unknown-source`). Nothing is fetched.
    OtherSource {
        entry: &'l LockEntry,
        registered: Option<&'l str>,
    },
}

/// A resolved catalogue or organization skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteSkill {
    /// The reference as the manifest writes it.
    pub reference: String,
    /// `owner/name` of the repository it was read from (`file:PATH` for a local directory).
    pub repository: String,
    /// The commit it was read at; `None` when no commit names the tree (a local directory
    /// that is not a Git checkout).
    pub commit: Option<String>,
    /// Its directory in that repository.
    pub dir: String,
    /// Where the package holds it: `skills/<alias>/<path>` or `skills/<name>`.
    pub package_dir: String,
    /// Its frontmatter and instructions.
    pub skill: LocalSkill,
    /// The regular files packaged with it (paths in the repository), in tree order.
    pub files: Vec<String>,
}

/// Where a package holds the catalogue skill `name` (package-relative): `skills/<name>`.
pub fn catalogue_package_dir(name: &str) -> String {
    format!("skills/{name}")
}

/// Where a package holds the organization skill `alias/path` (package-relative):
/// `skills/<alias>/<path>`.
pub fn org_package_dir(alias: &str, path: &str) -> String {
    format!("skills/{alias}/{path}")
}

/// Resolves every catalogue and organization skill of `manifest`, in manifest order. A
/// reference that does not resolve is left out, with its diagnostic in `diagnostics`.
pub fn resolve_remote_skills(
    manifest: &AgentManifest,
    sources: &dyn RemoteSkillSources,
    limits: &Limits,
    diagnostics: &mut Vec<Diagnostic>,
) -> Vec<RemoteSkill> {
    let mut resolved = Vec::new();
    for skill in &manifest.skills {
        let Some(reference) = skill.remote_reference() else {
            continue;
        };
        let mut at = Reporter {
            manifest,
            reference: &reference,
            diagnostics: &mut *diagnostics,
        };
        let pin = sources.pin(skill, &reference);
        if !at.pin_allows(pin) {
            continue;
        }
        let found = match skill {
            SkillRef::Org {
                repo_alias,
                path,
                git_ref,
            } => resolve_org(sources, pin, repo_alias, path, git_ref, limits, &mut at),
            SkillRef::Catalogue { name, version } => {
                resolve_catalogue(sources, pin, name, version, limits, &mut at)
            }
            SkillRef::Local { .. } => None,
        };
        resolved.extend(found.filter(|skill| at.verified(pin, skill, sources, limits)));
    }
    resolved
}

/// Reports findings about one reference on its manifest line.
struct Reporter<'r> {
    manifest: &'r AgentManifest,
    reference: &'r str,
    diagnostics: &'r mut Vec<Diagnostic>,
}

impl Reporter<'_> {
    /// Whether `pin` lets the reference be fetched; its refusal reported.
    fn pin_allows(&mut self, pin: LockPin<'_>) -> bool {
        match pin {
            LockPin::Unlocked | LockPin::Locked(_) => true,
            LockPin::Missing => {
                let help =
                    "pin it: `astrolift lock` (or `astrolift lock --update` to move every pin)";
                let message = format!("`{LOCK_FILE}` has no entry for it");
                self.report(&lock::MISSING_ENTRY, message, Some(help));
                false
            }
            LockPin::OtherSource { entry, registered } => {
                let now = registered.map_or_else(
                    || "no repository is registered for it now".to_owned(),
                    |repository| format!("it names `{repository}` now"),
                );
                let message = format!(
                    "`{LOCK_FILE}` line {} pins it in `{}`, but {now}",
                    entry.span.line, entry.repository
                );
                let help =
                    "re-pin it from the registered source: `astrolift lock --update REFERENCE`";
                self.report(&lock::UNKNOWN_SOURCE, message, Some(help));
                false
            }
        }
    }

    /// Whether `skill`, resolved under `pin`, has the locked tree hash; a mismatch (or a
    /// file that cannot be read to hash it) reported.
    fn verified(
        &mut self,
        pin: LockPin<'_>,
        skill: &RemoteSkill,
        sources: &dyn RemoteSkillSources,
        limits: &Limits,
    ) -> bool {
        let LockPin::Locked(entry) = pin else {
            return true;
        };
        let Fetched::Tree { tree, .. } = sources.locked(entry) else {
            return false;
        };
        match lock::tree_hash_of(tree, &skill.dir, &skill.files, limits.package_size) {
            Ok(hash) if hash == entry.tree_hash => true,
            Ok(hash) => {
                let message = format!(
                    "its files hash to `{hash}`, not the `{}` that `{LOCK_FILE}` line {} pins",
                    entry.tree_hash, entry.span.line
                );
                let help =
                    "if the change is wanted, re-pin it: `astrolift lock --update REFERENCE`";
                self.report(&lock::HASH_MISMATCH, message, Some(help));
                false
            }
            Err((path, error)) => {
                let message = format!("`{path}` cannot be read to verify the lock: {error}");
                self.report(&lock::HASH_MISMATCH, message, None);
                false
            }
        }
    }

    fn report(&mut self, code: &Code, message: String, help: Option<&str>) {
        let span = self
            .manifest
            .reference_spans
            .get(self.reference)
            .copied()
            .unwrap_or(Span::FILE);
        let mut diagnostic = Diagnostic::new(
            code,
            &self.manifest.manifest,
            span,
            format!("skill `{}`: {message}", self.reference),
        );
        diagnostic.help = help.map(str::to_owned);
        self.diagnostics.push(diagnostic);
    }

    /// The tree of `fetched`, or its failure reported.
    fn tree<'t>(&mut self, fetched: Fetched<'t>) -> Option<Source<'t>> {
        match fetched {
            Fetched::Tree {
                repository,
                commit,
                tree,
            } => Some(Source {
                repository,
                commit,
                tree,
            }),
            Fetched::NotInstalled { repository } => {
                let help = "install the App on the repository (or add it to the installation)";
                self.report(
                    &REPO_NOT_INSTALLED,
                    format!("the App cannot read `{repository}`"),
                    Some(help),
                );
                None
            }
            Fetched::UnknownRef { repository } => {
                let message = format!("no branch, tag or commit of `{repository}` has this name");
                self.report(&UNKNOWN_REF, message, None);
                None
            }
            Fetched::OverLimit { limit } => {
                let message = format!(
                    "not fetched: the agents of this repository name more than {limit} skill \
                     repositories (distinct repository and ref)"
                );
                let help = "use fewer refs of the same skill repository (`@main` for all, say)";
                self.report(&TOO_MANY_REPOSITORIES, message, Some(help));
                None
            }
            Fetched::Unresolved { reason } => {
                self.report(&UNRESOLVED, format!("not resolved: {reason}"), None);
                None
            }
        }
    }
}

fn resolve_org(
    sources: &dyn RemoteSkillSources,
    pin: LockPin<'_>,
    alias: &str,
    path: &str,
    git_ref: &str,
    limits: &Limits,
    at: &mut Reporter<'_>,
) -> Option<RemoteSkill> {
    let fetched = match pin {
        LockPin::Locked(entry) => Some(sources.locked(entry)),
        _ => sources.organization(alias, git_ref),
    };
    let Some(fetched) = fetched else {
        let help = "register it: `astrolift skill-repo register ALIAS OWNER/REPO --project-id P`";
        let message = format!("the agent's project has no skill repository aliased `{alias}`");
        at.report(&UNKNOWN_REPO_ALIAS, message, Some(help));
        return None;
    };
    let source = at.tree(fetched)?;
    if !source.tree.is_file(&paths::join(path, skill::SKILL_FILE)) {
        let message = format!(
            "`{}` has no `{path}/SKILL.md`{}",
            source.repository,
            at_commit(source.commit.as_deref())
        );
        at.report(&MISSING_REMOTE_SKILL, message, None);
        return None;
    }
    let package_dir = org_package_dir(alias, path);
    read_remote(
        &source,
        path,
        paths::file_name(path),
        package_dir,
        limits,
        at,
    )
}

fn resolve_catalogue(
    sources: &dyn RemoteSkillSources,
    pin: LockPin<'_>,
    name: &str,
    version: &str,
    limits: &Limits,
    at: &mut Reporter<'_>,
) -> Option<RemoteSkill> {
    let fetched = match pin {
        LockPin::Locked(entry) => Some(sources.locked(entry)),
        _ => sources.catalogue(),
    };
    let Some(fetched) = fetched else {
        let help = "register one: `astrolift catalogue register OWNER/REPO [--ref main]`";
        at.report(
            &NO_CATALOGUE,
            "no catalogue is registered".to_owned(),
            Some(help),
        );
        return None;
    };
    let source = at.tree(fetched)?;
    let dir = format!("skills/{name}/{version}");
    if !source.tree.is_file(&paths::join(&dir, skill::SKILL_FILE)) {
        let message = not_in_catalogue(source.tree, name, version);
        at.report(&NOT_IN_CATALOGUE, message, None);
        return None;
    }
    read_remote(&source, &dir, name, catalogue_package_dir(name), limits, at)
}

/// What the catalogue has instead of `name@version`.
fn not_in_catalogue(tree: &dyn SourceTree, name: &str, version: &str) -> String {
    let versions = skill_versions(tree, &format!("skills/{name}"));
    if !versions.is_empty() {
        return format!(
            "the catalogue has no version {version} of `{name}`; it has {}",
            versions.join(", ")
        );
    }
    let names: BTreeSet<&str> = tree
        .entries_under("skills")
        .iter()
        .filter_map(|e| e.path.strip_prefix("skills/")?.split('/').next())
        .collect();
    let names: Vec<&str> = names.into_iter().collect();
    format!(
        "the catalogue has no skill `{name}`; it has {}",
        if names.is_empty() {
            "none".to_owned()
        } else {
            names.join(", ")
        }
    )
}

/// The versions `<dir>/<version>/SKILL.md` of one catalogue skill, in semver order.
fn skill_versions(tree: &dyn SourceTree, dir: &str) -> Vec<String> {
    let prefix = format!("{dir}/");
    let mut versions: Vec<semver::Version> = tree
        .entries_under(dir)
        .iter()
        .filter_map(|e| e.path.strip_prefix(&prefix)?.strip_suffix("/SKILL.md"))
        .filter_map(|version| semver::Version::parse(version).ok())
        .collect();
    versions.sort();
    versions.iter().map(ToString::to_string).collect()
}

/// A fetched skill repository.
struct Source<'t> {
    repository: String,
    commit: Option<String>,
    tree: &'t dyn SourceTree,
}

/// Reads and checks the skill in `dir` of `source`; a `SKILL.md` with errors is one error on
/// the reference.
fn read_remote(
    source: &Source<'_>,
    dir: &str,
    expected_name: &str,
    package_dir: String,
    limits: &Limits,
    at: &mut Reporter<'_>,
) -> Option<RemoteSkill> {
    let mut findings = Vec::new();
    let skill = skill::read_skill_named(source.tree, limits, dir, expected_name, &mut findings);
    let errors: Vec<&Diagnostic> = findings
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .collect();
    if let Some(first) = errors.first() {
        let more = match errors.len() - 1 {
            0 => String::new(),
            n => format!(" (and {n} more)"),
        };
        let message = format!(
            "`{}`{}: {}:{}:{}: [{}] {}{more}",
            source.repository,
            at_commit(source.commit.as_deref()),
            first.path,
            first.span.line,
            first.span.column,
            first.code,
            first.message
        );
        at.report(&INVALID_REMOTE_SKILL, message, None);
        return None;
    }
    let entries = skill::skill_entries(source.tree, dir);
    if let Some(link) = entries.iter().find(|e| e.kind != EntryKind::File) {
        // As for a local skill: a link or special file fails the agent, never a partial skill.
        let message = format!(
            "`{}`{}: `{}` is a symlink or special file; a skill holds regular files only",
            source.repository,
            at_commit(source.commit.as_deref()),
            link.path
        );
        at.report(&INVALID_REMOTE_SKILL, message, None);
        return None;
    }
    let files = entries.into_iter().map(|e| e.path.clone()).collect();
    Some(RemoteSkill {
        reference: at.reference.to_owned(),
        repository: source.repository.clone(),
        commit: source.commit.clone(),
        dir: dir.to_owned(),
        package_dir,
        skill: skill?,
        files,
    })
}

/// ` at <commit>` (its first 7 characters, as GitHub shows it), or nothing for a tree no
/// commit names (it is read as it is on disk).
fn at_commit(commit: Option<&str>) -> String {
    commit.map_or_else(String::new, |commit| {
        format!(" at {}", commit.get(..7).unwrap_or(commit))
    })
}
