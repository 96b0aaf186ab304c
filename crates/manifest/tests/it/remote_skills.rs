//! Remote skills resolved against fetched skill repositories (`tests/remote_skills/`): the
//! three forms of one agent resolve, and every failure of another is one diagnostic on the
//! manifest line naming its reference.

use astrolift_manifest::model::AgentManifest;
use astrolift_manifest::remote_skill::{Fetched, RemoteSkillSources, resolve_remote_skills};
use astrolift_manifest::{DirTree, Limits, Severity};

use crate::support::{crate_dir, validate};

const RUNBOOKS_SHA: &str = "1111111111111111111111111111111111111111";
const CATALOGUE_SHA: &str = "2222222222222222222222222222222222222222";

fn open(name: &str) -> DirTree {
    let dir = crate_dir().join("tests/remote_skills").join(name);
    DirTree::open(&dir, Limits::DEFAULT.tarball_files).expect("a fixture repository")
}

/// The project registered `steadymd` (fetched) and `ghost` (the App is not installed on
/// it); `other` is another project's alias, so this one does not see it.
struct Sources {
    runbooks: DirTree,
    catalogue: DirTree,
}

impl RemoteSkillSources for Sources {
    fn organization(&self, alias: &str, git_ref: &str) -> Option<Fetched<'_>> {
        match (alias, git_ref) {
            ("steadymd", "main") => Some(Fetched::Tree {
                repository: "steadymd/runbooks".to_owned(),
                commit: Some(RUNBOOKS_SHA.to_owned()),
                tree: &self.runbooks,
            }),
            ("steadymd", _) => Some(Fetched::UnknownRef {
                repository: "steadymd/runbooks".to_owned(),
            }),
            ("ghost", _) => Some(Fetched::NotInstalled {
                repository: "ghost/skills".to_owned(),
            }),
            _ => None,
        }
    }

    fn catalogue(&self) -> Option<Fetched<'_>> {
        Some(Fetched::Tree {
            repository: "astrolift/catalogue".to_owned(),
            commit: Some(CATALOGUE_SHA.to_owned()),
            tree: &self.catalogue,
        })
    }
}

/// Nothing can be asked: a local run without App credentials.
struct Offline;

impl RemoteSkillSources for Offline {
    fn organization(&self, _: &str, _: &str) -> Option<Fetched<'_>> {
        Some(offline())
    }
    fn catalogue(&self) -> Option<Fetched<'_>> {
        Some(offline())
    }
}

fn offline() -> Fetched<'static> {
    Fetched::Unresolved {
        reason: "no GitHub App credentials (GITHUB_APP_ID) are configured".to_owned(),
    }
}

fn agent(name: &str) -> AgentManifest {
    let validation = validate(&open("agents"));
    let errors: Vec<_> = validation
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    validation
        .agents
        .into_iter()
        .find(|a| a.name == name)
        .expect("the agent is discovered")
}

fn sources() -> Sources {
    Sources {
        runbooks: open("runbooks"),
        catalogue: open("catalogue"),
    }
}

#[test]
fn the_three_forms_resolve_in_manifest_order() {
    let mut diagnostics = Vec::new();
    let resolved = resolve_remote_skills(
        &agent("good"),
        &sources(),
        &Limits::DEFAULT,
        &mut diagnostics,
    );
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    let summary: Vec<_> = resolved
        .iter()
        .map(|r| {
            (
                r.reference.as_str(),
                r.repository.as_str(),
                r.commit.as_deref().unwrap_or_default(),
                r.dir.as_str(),
                r.package_dir.as_str(),
                r.skill.name.as_str(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (
                "pr-review@1.2.0",
                "astrolift/catalogue",
                CATALOGUE_SHA,
                "skills/pr-review/1.2.0",
                "skills/pr-review",
                "pr-review"
            ),
            (
                "steadymd/runbooks/clinical-triage@main",
                "steadymd/runbooks",
                RUNBOOKS_SHA,
                "runbooks/clinical-triage",
                "skills/steadymd/runbooks/clinical-triage",
                "clinical-triage"
            ),
        ]
    );
    assert_eq!(
        resolved[1].files,
        [
            "runbooks/clinical-triage/SKILL.md",
            "runbooks/clinical-triage/scripts/triage.sh"
        ],
        "SKILL.md and its skill directories, nothing else"
    );
    assert_eq!(resolved[1].skill.allowed_tools, ["emr-search", "pager"]);
    assert_eq!(
        resolved[1].skill.instructions.trim(),
        "Page the on-call clinician for P1."
    );
}

#[test]
fn every_failure_is_an_error_on_the_reference_line() {
    let mut diagnostics = Vec::new();
    let resolved = resolve_remote_skills(
        &agent("bad"),
        &sources(),
        &Limits::DEFAULT,
        &mut diagnostics,
    );
    assert!(resolved.is_empty());
    assert!(diagnostics.iter().all(|d| d.severity == Severity::Error));
    insta::assert_json_snapshot!(diagnostics);
}

#[test]
fn without_credentials_remote_skills_are_unresolved_warnings() {
    let mut diagnostics = Vec::new();
    let resolved =
        resolve_remote_skills(&agent("good"), &Offline, &Limits::DEFAULT, &mut diagnostics);
    assert!(resolved.is_empty());
    assert!(
        diagnostics
            .iter()
            .all(|d| d.severity == Severity::Warning && d.code == "skill/unresolved")
    );
    insta::assert_json_snapshot!(diagnostics);
}

/// A symlink in a remote skill's directories fails the reference, as it fails a local
/// skill's package: the skill is never packaged without it.
#[test]
fn a_symlink_in_a_remote_skill_is_an_error() {
    use astrolift_manifest::tree::{EntryKind, FileEntry, MemTree};
    let mut runbooks = MemTree::new();
    runbooks.insert(
        "runbooks/clinical-triage/SKILL.md",
        "---\nname: clinical-triage\ndescription: Triage.\n---\nPage.\n",
        false,
    );
    runbooks.insert_entry(FileEntry {
        path: "runbooks/clinical-triage/scripts/escape.sh".to_owned(),
        size: 0,
        executable: false,
        kind: EntryKind::Symlink,
    });
    struct One(MemTree);
    impl RemoteSkillSources for One {
        fn organization(&self, _: &str, _: &str) -> Option<Fetched<'_>> {
            Some(Fetched::Tree {
                repository: "steadymd/runbooks".to_owned(),
                commit: Some(RUNBOOKS_SHA.to_owned()),
                tree: &self.0,
            })
        }
        fn catalogue(&self) -> Option<Fetched<'_>> {
            None
        }
    }
    let mut diagnostics = Vec::new();
    let resolved = resolve_remote_skills(
        &agent("good"),
        &One(runbooks),
        &Limits::DEFAULT,
        &mut diagnostics,
    );
    assert!(resolved.is_empty());
    let found: Vec<(&str, &str)> = diagnostics
        .iter()
        .map(|d| (d.code.as_str(), d.message.as_str()))
        .collect();
    assert_eq!(
        found,
        [
            (
                "skill/no-catalogue",
                "skill `pr-review@1.2.0`: no catalogue is registered"
            ),
            (
                "skill/invalid-remote",
                "skill `steadymd/runbooks/clinical-triage@main`: `steadymd/runbooks` at 1111111: \
                 `runbooks/clinical-triage/scripts/escape.sh` is a symlink or special file; a \
                 skill holds regular files only"
            ),
        ]
    );
}
