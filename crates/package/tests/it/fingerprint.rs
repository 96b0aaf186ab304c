//! The slice fingerprint stands for the archive bytes: same inputs, same
//! fingerprint; a changed byte, mode or path, another one. Reusing a stored
//! record gives exactly what building gives.

use astrolift_manifest::model::AgentManifest;
use astrolift_manifest::{Limits, MemTree};
use astrolift_package::{
    ContentHashes, FingerprintRecord, PreparedAgent, prepare_agent, write_archive_checked,
};

use crate::common::{brief, local_skill, manifest, package};

const FILES: &[(&str, &str)] = &[
    ("agents/a/astrolift.toml", "name = \"a\"\n"),
    ("agents/a/brief/README.md", "# a\n"),
    ("agents/a/brief/ctx.md", "context\n"),
    ("agents/a/skills/s/SKILL.md", "---\nname: s\n---\n"),
    ("agents/a/data/x.txt", "x"),
    ("agents/a/data/y.txt", "y"),
];

/// The test tree, with `rename` = (from, to) applied to one path.
fn tree_renaming(rename: (&str, &str)) -> MemTree {
    let mut tree = MemTree::new();
    for (path, content) in FILES {
        let path = if *path == rename.0 { rename.1 } else { path };
        tree.insert(path, *content, false);
    }
    tree.insert("agents/a/skills/s/scripts/run.sh", "#!/bin/sh\n", true);
    tree
}

fn tree() -> MemTree {
    tree_renaming(("", ""))
}

fn agent() -> AgentManifest {
    let mut agent = manifest("a", "agents/a");
    agent.brief = brief("agents/a/brief/README.md", &["agents/a/brief/ctx.md"]);
    agent.skills = vec![local_skill("s", "agents/a/skills/s")];
    agent
}

fn prepared(agent: &AgentManifest, tree: &MemTree) -> PreparedAgent {
    prepare_agent(agent, tree, &Limits::DEFAULT).unwrap_or_else(|d| panic!("{d:#?}"))
}

fn fingerprint(agent: &AgentManifest, tree: &MemTree) -> String {
    prepared(agent, tree).fingerprint
}

#[test]
fn building_from_a_prepared_agent_gives_the_plain_archive() {
    let (agent, tree) = (agent(), tree());
    let (_, plain, plain_bytes) = package(&agent, &tree);
    let mut bytes = Vec::new();
    let packaged = prepared(&agent, &tree)
        .package(&agent, &tree, &mut bytes)
        .expect("packaged");
    assert_eq!(packaged.output, plain);
    assert_eq!(bytes, plain_bytes, "bit-identical archive");
    let snapshot = astrolift_package::package_agent(&agent, &tree, &Limits::DEFAULT, Vec::new())
        .expect("packaged")
        .snapshot;
    assert_eq!(
        packaged.snapshot, snapshot,
        "hashes reused for the snapshot"
    );
}

#[test]
fn reusing_a_record_gives_what_building_gives() {
    let (agent, tree) = (agent(), tree());
    let built = prepared(&agent, &tree)
        .package(&agent, &tree, std::io::sink())
        .expect("packaged");
    let record = FingerprintRecord::new(&built.output).to_json();
    let again = prepared(&agent, &tree);
    let output = FingerprintRecord::output_for(&record, &again.slice).expect("record fits");
    let reused = again.reuse(&agent, &tree, output).expect("snapshot");
    assert_eq!(reused, built);
    assert_eq!(reused.snapshot.digest(), built.snapshot.digest());
}

#[test]
fn a_record_that_does_not_fit_is_refused() {
    let (agent, tree) = (agent(), tree());
    let built = prepared(&agent, &tree)
        .package(&agent, &tree, std::io::sink())
        .expect("packaged");
    let slice = prepared(&agent, &tree).slice;
    let mut record = FingerprintRecord::new(&built.output);
    record.files += 1;
    assert_eq!(
        FingerprintRecord::output_for(&record.to_json(), &slice),
        None
    );
    let mut record = FingerprintRecord::new(&built.output);
    record.format = "astrolift.slice-fingerprint/v0".into();
    assert_eq!(
        FingerprintRecord::output_for(&record.to_json(), &slice),
        None
    );
    let mut record = FingerprintRecord::new(&built.output);
    record.digest = "sha256:XYZ".into();
    assert_eq!(
        FingerprintRecord::output_for(&record.to_json(), &slice),
        None
    );
    assert_eq!(FingerprintRecord::output_for(b"not json", &slice), None);
}

#[test]
fn same_content_same_fingerprint() {
    assert_eq!(
        fingerprint(&agent(), &tree()),
        fingerprint(&agent(), &tree())
    );
    // A file outside the slice changes nothing.
    let mut tree = tree();
    tree.insert("agents/b/other.txt", "other", false);
    assert_eq!(
        fingerprint(&agent(), &tree),
        fingerprint(&agent(), &self::tree())
    );
    // Neither does the working tree's executable bit: modes come from rules.
    let mut tree = self::tree();
    tree.insert("agents/a/data/x.txt", "x", true);
    assert_eq!(
        fingerprint(&agent(), &tree),
        fingerprint(&agent(), &self::tree())
    );
}

#[test]
fn one_changed_byte_changes_the_fingerprint() {
    let base = fingerprint(&agent(), &tree());
    let mut tree = tree();
    tree.insert("agents/a/data/x.txt", "z", false);
    assert_ne!(fingerprint(&agent(), &tree), base);
}

#[test]
fn a_changed_mode_changes_the_fingerprint() {
    let base = fingerprint(&agent(), &tree());
    let mut agent = agent();
    agent.package.executables = vec!["data/x.txt".into()];
    assert_ne!(fingerprint(&agent, &tree()), base);
}

#[test]
fn a_changed_path_or_rule_changes_the_fingerprint() {
    let base = fingerprint(&agent(), &tree());
    let renamed = tree_renaming(("agents/a/data/x.txt", "agents/a/data/w.txt"));
    assert_ne!(
        fingerprint(&agent(), &renamed),
        base,
        "x.txt renamed to w.txt"
    );
    let mut excluding = agent();
    excluding.package.exclude.push("data/y.txt".into());
    assert_ne!(fingerprint(&excluding, &self::tree()), base);
}

#[test]
fn archiving_checks_the_hashed_bytes() {
    let (agent, tree) = (agent(), tree());
    let prepared = prepared(&agent, &tree);
    let mut changed = self::tree();
    changed.insert("agents/a/data/x.txt", "z", false);
    let result =
        write_archive_checked(&prepared.slice, &changed, std::io::sink(), &prepared.hashes);
    let error = result.expect_err("x.txt changed after it was hashed");
    assert!(error.to_string().contains("agents/a/data/x.txt"), "{error}");
    let unhashed = write_archive_checked(
        &prepared.slice,
        &tree,
        std::io::sink(),
        &ContentHashes::default(),
    );
    assert!(unhashed.is_err(), "a file without a hash is not archived");
}
