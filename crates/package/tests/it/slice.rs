//! The slice rules of docs/reference.md §6, one by one.

use astrolift_manifest::model::SharedMount;
use astrolift_manifest::tree::{EntryKind, FileEntry};
use astrolift_manifest::{Limits, MemTree};
use astrolift_package::{Slice, SliceError};

use crate::common::{brief, dests, local_skill, manifest, mem_tree};

fn build(
    agent: &astrolift_manifest::model::AgentManifest,
    tree: &MemTree,
) -> Result<Slice, Vec<SliceError>> {
    Slice::build(agent, tree, &Limits::DEFAULT)
}

fn errors(agent: &astrolift_manifest::model::AgentManifest, tree: &MemTree) -> Vec<SliceError> {
    build(agent, tree).expect_err("slice should fail")
}

fn shared(source: &str, mount: &str) -> SharedMount {
    SharedMount {
        source: source.to_owned(),
        mount: mount.to_owned(),
    }
}

#[test]
fn root_is_a_chroot_and_default_excludes_apply() {
    let tree = mem_tree(&[
        ("agents/a/astrolift.toml", "x"),
        ("agents/a/src/main.py", "x"),
        ("agents/a/src/__pycache__/main.cpython-312.pyc", "x"),
        ("agents/a/src/util.pyc", "x"),
        ("agents/a/node_modules/left-pad/index.js", "x"),
        ("agents/a/.DS_Store", "x"),
        ("agents/a/.git/config", "x"),
        ("agents/b/astrolift.toml", "x"),
        ("agents/ab/file", "x"),
        ("README.md", "x"),
    ]);
    let slice = build(&manifest("a", "agents/a"), &tree).unwrap();
    assert_eq!(
        dests(&slice),
        [("astrolift.toml", false), ("src/main.py", false)]
    );
    assert_eq!(slice.uncompressed_size, 2);
}

#[test]
fn include_and_exclude_match_relative_to_root() {
    let tree = mem_tree(&[
        ("a/astrolift.toml", "x"),
        ("a/brief/README.md", "x"),
        ("a/brief/deep/more.md", "x"),
        ("a/scripts/run.sh", "x"),
        ("a/scripts/nested/run.sh", "x"),
        ("a/scripts/tmp.tmp", "x"),
        ("a/fixtures/big.json", "x"),
        ("a/other.txt", "x"),
    ]);
    let mut agent = manifest("a", "a");
    agent.package.include = ["astrolift.toml", "brief/**", "scripts/**", "fixtures/**"]
        .map(String::from)
        .to_vec();
    agent.package.exclude = ["**/*.tmp", "fixtures/**"].map(String::from).to_vec();
    agent.package.executables = vec!["scripts/*.sh".to_owned()];
    let slice = build(&agent, &tree).unwrap();
    assert_eq!(
        dests(&slice),
        [
            ("astrolift.toml", false),
            ("brief/README.md", false),
            ("brief/deep/more.md", false),
            ("scripts/nested/run.sh", false),
            ("scripts/run.sh", true),
        ]
    );
}

#[test]
fn executables_decide_modes_not_the_source_bits() {
    let mut tree = MemTree::new();
    tree.insert("tool.sh", "x", true);
    tree.insert("run.sh", "x", false);
    let mut agent = manifest("a", "");
    agent.package.executables = vec!["run.sh".to_owned()];
    let slice = build(&agent, &tree).unwrap();
    assert_eq!(dests(&slice), [("run.sh", true), ("tool.sh", false)]);
}

#[test]
fn shared_mounts_bring_files_and_directories_across_the_boundary() {
    let tree = mem_tree(&[
        ("agents/a/astrolift.toml", "x"),
        ("shared/schemas/a.json", "x"),
        ("shared/schemas/sub/b.json", "x"),
        ("shared/schemas/node_modules/x.js", "x"),
        ("shared/LICENSE", "x"),
    ]);
    let mut agent = manifest("a", "agents/a");
    agent.package.shared = vec![
        shared("shared/schemas", "schemas"),
        shared("shared/LICENSE", "legal/LICENSE"),
    ];
    agent.package.executables = vec!["schemas/sub/*".to_owned()];
    let slice = build(&agent, &tree).unwrap();
    assert_eq!(
        dests(&slice),
        [
            ("astrolift.toml", false),
            ("legal/LICENSE", false),
            ("schemas/a.json", false),
            ("schemas/sub/b.json", true),
        ]
    );
    assert_eq!(slice.files[1].source, "shared/LICENSE");
}

#[test]
fn shared_mount_escapes_and_missing_sources_fail() {
    let tree = mem_tree(&[("a/astrolift.toml", "x"), ("shared/x", "x")]);
    let mut agent = manifest("a", "a");
    agent.package.shared = vec![
        shared("../outside", "x"),
        shared("shared/x", "../../etc/x"),
        shared("/etc/passwd", "passwd"),
        shared("shared/missing", "m"),
    ];
    let codes: Vec<_> = errors(&agent, &tree).iter().map(|e| e.code().id).collect();
    assert_eq!(
        codes,
        [
            "package/path-escape",
            "package/path-escape",
            "package/path-escape",
            "package/missing-source"
        ]
    );
}

#[test]
fn local_skills_bring_skill_md_scripts_references_and_assets() {
    let tree = mem_tree(&[
        ("astrolift.toml", "x"),
        ("skills/triage/SKILL.md", "x"),
        ("skills/triage/scripts/collect.sh", "x"),
        ("skills/triage/references/severity.md", "x"),
        ("skills/triage/assets/logo.png", "x"),
        ("skills/triage/assets/__pycache__/x.pyc", "x"),
        ("skills/triage/notes.txt", "x"),
    ]);
    let mut agent = manifest("a", "");
    agent.package.include = vec!["astrolift.toml".to_owned()];
    agent.skills = vec![local_skill("triage", "skills/triage")];
    let slice = build(&agent, &tree).unwrap();
    assert_eq!(
        dests(&slice),
        [
            ("astrolift.toml", false),
            ("skills/triage/SKILL.md", false),
            ("skills/triage/assets/logo.png", false),
            ("skills/triage/references/severity.md", false),
            ("skills/triage/scripts/collect.sh", true),
        ]
    );
    assert_eq!(slice.skills.len(), 1);
    assert_eq!(slice.skills[0].files.len(), 4);
}

#[test]
fn brief_and_context_files_are_packaged() {
    let tree = mem_tree(&[
        ("a/astrolift.toml", "x"),
        ("a/brief/README.md", "x"),
        ("a/brief/context.md", "x"),
    ]);
    let mut agent = manifest("a", "a");
    agent.package.include = vec!["astrolift.toml".to_owned()];
    agent.brief = brief("a/brief/README.md", &["a/brief/context.md"]);
    let slice = build(&agent, &tree).unwrap();
    assert_eq!(
        dests(&slice),
        [
            ("astrolift.toml", false),
            ("brief/README.md", false),
            ("brief/context.md", false)
        ]
    );
}

#[test]
fn without_a_package_table_only_skills_and_brief_are_packaged() {
    let tree = mem_tree(&[
        ("astrolift.toml", "x"),
        ("README.md", "x"),
        ("src/app.py", "x"),
        ("skills/s/SKILL.md", "x"),
    ]);
    let mut agent = manifest("a", "");
    agent.package.declared = false;
    agent.brief = brief("README.md", &[]);
    agent.skills = vec![local_skill("s", "skills/s")];
    let slice = build(&agent, &tree).unwrap();
    assert_eq!(
        dests(&slice),
        [("README.md", false), ("skills/s/SKILL.md", false)]
    );
}

#[test]
fn files_outside_root_need_a_shared_mount() {
    let tree = mem_tree(&[
        ("a/app/main.py", "x"),
        ("a/README.md", "x"),
        ("skills/s/SKILL.md", "x"),
    ]);
    let mut agent = manifest("a", "a");
    agent.package.root = "a/app".to_owned();
    agent.brief = brief("a/README.md", &[]);
    agent.skills = vec![local_skill("s", "skills/s")];
    let codes: Vec<_> = errors(&agent, &tree)
        .iter()
        .map(|e| e.to_string())
        .collect();
    assert_eq!(
        codes,
        [
            "skills/s/SKILL.md (local skill file) is outside [package] root",
            "a/README.md (brief) is outside [package] root",
        ]
    );
    agent.package.shared = vec![
        shared("a/README.md", "README.md"),
        shared("skills", "skills"),
    ];
    let slice = build(&agent, &tree).unwrap();
    assert_eq!(
        dests(&slice),
        [
            ("README.md", false),
            ("main.py", false),
            ("skills/s/SKILL.md", false)
        ]
    );
}

#[test]
fn two_sources_for_one_destination_fail_but_one_source_twice_does_not() {
    let tree = mem_tree(&[
        ("a/astrolift.toml", "x"),
        ("a/schemas/x.json", "mine"),
        ("a/skills/s/SKILL.md", "x"),
        ("shared/schemas/x.json", "theirs"),
    ]);
    let mut agent = manifest("a", "a");
    agent.skills = vec![local_skill("s", "a/skills/s")];
    agent.brief = brief("a/skills/s/SKILL.md", &[]);
    assert!(
        build(&agent, &tree).is_ok(),
        "same source, same destination"
    );

    agent.package.shared = vec![shared("shared/schemas", "schemas")];
    let errors = errors(&agent, &tree);
    assert_eq!(
        errors,
        [SliceError::DuplicateDestination {
            dest: "schemas/x.json".to_owned(),
            first: "a/schemas/x.json".to_owned(),
            second: "shared/schemas/x.json".to_owned(),
        }]
    );
}

#[test]
fn a_destination_cannot_be_a_file_and_a_directory() {
    let tree = mem_tree(&[("a/conf", "x"), ("shared/conf.d/x", "x")]);
    let mut agent = manifest("a", "a");
    agent.package.shared = vec![shared("shared/conf.d", "conf")];
    let errors = errors(&agent, &tree);
    assert_eq!(
        errors,
        [SliceError::FileAndDirectory {
            dest: "conf".to_owned()
        }]
    );
    assert_eq!(errors[0].code().id, "package/duplicate-destination");
}

#[test]
fn symlinks_and_special_files_in_the_slice_fail_excluded_ones_do_not() {
    let mut tree = mem_tree(&[("a/ok", "x")]);
    for (path, kind) in [
        ("a/link", EntryKind::Symlink),
        ("a/fifo", EntryKind::Other),
        ("a/node_modules/.bin/tool", EntryKind::Symlink),
    ] {
        tree.insert_entry(FileEntry {
            path: path.to_owned(),
            size: 0,
            executable: false,
            kind,
        });
    }
    let codes: Vec<_> = errors(&manifest("a", "a"), &tree)
        .iter()
        .map(|e| e.code().id)
        .collect();
    assert_eq!(codes, ["package/special-file", "package/symlink"]);
}

#[test]
fn empty_and_oversized_slices_fail() {
    let tree = mem_tree(&[("a/big", "0123456789"), ("b/.git/HEAD", "x")]);
    assert_eq!(errors(&manifest("b", "b"), &tree), [SliceError::Empty]);
    let limits = Limits {
        package_size: 5,
        ..Limits::DEFAULT
    };
    let errors = Slice::build(&manifest("a", "a"), &tree, &limits).unwrap_err();
    assert_eq!(errors, [SliceError::TooLarge { size: 10, limit: 5 }]);
}

#[test]
fn bad_globs_and_roots_are_reported_together() {
    let tree = mem_tree(&[("a/x", "x")]);
    let mut agent = manifest("a", "a");
    agent.package.include = vec!["a/{b".to_owned()];
    agent.package.root = "../up".to_owned();
    let codes: Vec<_> = errors(&agent, &tree).iter().map(|e| e.code().id).collect();
    assert_eq!(codes, ["package/invalid-glob", "package/path-escape"]);
}

#[test]
fn diagnostics_name_the_manifest_and_the_entry() {
    let tree = mem_tree(&[("a/conf", "x"), ("shared/conf.d/x", "x"), ("b/.git/x", "x")]);
    let mut agent = manifest("a", "a");
    agent.package.shared = vec![shared("shared/conf.d", "conf"), shared("../x", "y")];
    let mut all = astrolift_package::slice(&agent, &tree, &Limits::DEFAULT).unwrap_err();
    all.extend(astrolift_package::slice(&manifest("b", "b"), &tree, &Limits::DEFAULT).unwrap_err());
    insta::assert_json_snapshot!("slice_diagnostics", all);
}

#[cfg(unix)]
#[test]
fn a_symlink_in_a_local_directory_fails_only_its_agent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    std::fs::create_dir_all(root.join("a")).expect("mkdir");
    std::fs::create_dir_all(root.join("b")).expect("mkdir");
    std::fs::write(root.join("a/ok"), "x").expect("write");
    std::fs::write(root.join("b/ok"), "x").expect("write");
    std::os::unix::fs::symlink("/etc/passwd", root.join("a/passwd")).expect("symlink");
    let tree = astrolift_manifest::DirTree::open(root, 100).expect("open");
    let limits = Limits::DEFAULT;
    assert!(astrolift_package::slice(&manifest("b", "b"), &tree, &limits).is_ok());
    let diagnostics = astrolift_package::slice(&manifest("a", "a"), &tree, &limits).unwrap_err();
    assert_eq!(diagnostics.len(), 1);
    assert_eq!(diagnostics[0].code, "package/symlink");
    assert!(diagnostics[0].message.contains("a/passwd"));
}

#[test]
fn the_archive_writer_refuses_an_oversized_slice_before_writing() {
    let tree = mem_tree(&[("a/x", "0123456789")]);
    let mut slice = build(&manifest("a", "a"), &tree).unwrap();
    slice.size_limit = 5;
    let mut out = Vec::new();
    let error = astrolift_package::write_archive(&slice, &tree, &mut out).unwrap_err();
    assert!(matches!(
        error,
        astrolift_package::PackageError::TooLarge { size: 10, limit: 5 }
    ));
    assert!(out.is_empty(), "nothing written");
}
