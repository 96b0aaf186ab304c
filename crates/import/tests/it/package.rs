//! `astrolift_package`: packaging the imported layout gives the digest of
//! the original archive, with and without the snapshot, whether or not the
//! archive holds its own manifest.

use astrolift_import::{Format, Imported, Source, SourceFile, import};
use astrolift_manifest::{
    DirTree, Limits, MemTree, SourceTree, ValidateOptions, validate_repository,
};
use astrolift_package::package_agent;
use proptest::prelude::*;

use crate::support::{IMAGE, options};

/// Validates `tree` and packages its one agent: (archive, snapshot JSON, digest).
fn package_one(tree: &dyn astrolift_package::PayloadTree) -> (Vec<u8>, Vec<u8>, String) {
    let validation = validate_repository(tree, &ValidateOptions::default());
    let errors: Vec<_> = validation
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(validation.agents.len(), 1);
    let mut archive = Vec::new();
    let packaged = package_agent(&validation.agents[0], tree, &Limits::DEFAULT, &mut archive)
        .unwrap_or_else(|d| panic!("{d:?}"));
    (
        archive,
        packaged.snapshot.canonical_json(),
        packaged.output.digest,
    )
}

fn import_archive(archive: &[u8], snapshot: Option<&[u8]>) -> Imported {
    let source = Source::Package {
        archive: SourceFile {
            path: "agent.tar.gz",
            bytes: archive,
        },
        snapshot: snapshot.map(|bytes| SourceFile {
            path: "agent.snapshot.json",
            bytes,
        }),
    };
    // Without the snapshot, the image comes from `--image`, as a user would give it.
    let options = options(snapshot.is_none(), None);
    import(Format::AstroliftPackage, source, &options).unwrap_or_else(|e| panic!("{e}"))
}

fn round_trip(tree: &dyn astrolift_package::PayloadTree) -> Vec<Imported> {
    let (archive, snapshot, digest) = package_one(tree);
    let mut imports = Vec::new();
    for snapshot in [Some(snapshot.as_slice()), None] {
        let imported = import_archive(&archive, snapshot);
        let (_, _, again) = package_one(&imported.to_tree());
        assert_eq!(again, digest, "with snapshot: {}", snapshot.is_some());
        imports.push(imported);
    }
    imports
}

#[test]
fn the_single_agent_example_round_trips() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/single-agent");
    let tree = DirTree::open(root, 10_000).expect("example");
    let imports = round_trip(&tree);
    // The archive holds its own astrolift.toml: nothing is generated.
    assert!(
        imports.iter().all(|i| i.gaps.is_empty()),
        "{:?}",
        imports[0].gaps
    );
    assert_eq!(imports[0].agents, ["pr-reviewer"]);
}

fn rooted_agent() -> MemTree {
    let mut tree = MemTree::new();
    let manifest = format!(
        "astrolift_version = 1\nname = \"rooted\"\nbrief = \"app/brief/README.md\"\nskills = [{{ emr = \"skills/emr\" }}, \"pr-review@1.2.0\"]\n\n[[workloads]]\nname = \"rooted\"\nkind = \"agent\"\nrun_family = \"task\"\nmax_retries = 2\n\n  [[workloads.containers]]\n  name = \"agent\"\n  is_primary = true\n  image_ref = \"{IMAGE}\"\n\n[environment]\nLOG_LEVEL = \"debug\"\n\n[secrets]\nTOKEN = \"secret://agents/token\"\n\n[package]\nroot = \"app\"\ninclude = [\"**\"]\nexclude = [\"**/*.tmp\"]\nexecutables = [\"bin/*\"]\n"
    );
    tree.insert("astrolift.toml", manifest, false);
    tree.insert(
        "app/brief/README.md",
        "# Rooted\n\nSee [notes](notes.md).\n",
        false,
    );
    tree.insert("app/brief/notes.md", "notes\n", false);
    tree.insert(
        "app/skills/emr/SKILL.md",
        "---\nname: emr\ndescription: EMR work.\n---\n\nDo EMR things.\n",
        false,
    );
    tree.insert(
        "app/skills/emr/scripts/pull.sh",
        "#!/bin/sh\necho pull\n",
        false,
    );
    tree.insert("app/bin/tool", "#!/bin/sh\n", false);
    tree.insert("app/data/odd [name] {x}.txt", "odd\n", false);
    tree.insert("app/scratch.tmp", "excluded\n", false);
    tree
}

#[test]
fn an_archive_without_its_manifest_round_trips_through_a_generated_one() {
    let imports = round_trip(&rooted_agent());
    let with_snapshot = &imports[0];
    let manifest =
        String::from_utf8_lossy(&with_snapshot.files["astrolift.toml"].bytes).into_owned();
    assert!(manifest.contains("name = \"rooted\""), "{manifest}");
    assert!(manifest.contains(IMAGE), "the snapshot's image is kept");
    assert!(
        manifest.contains("\"pr-review@1.2.0\""),
        "catalogue skills are kept"
    );
    assert!(manifest.contains("TOKEN = \"secret://agents/token\""));
    assert!(!with_snapshot.files.contains_key("scratch.tmp"));
    let codes: Vec<&str> = with_snapshot.gaps.iter().map(|g| g.code.as_str()).collect();
    assert_eq!(codes, ["import/manifest-generated"]);
    // Without the snapshot, `--image` gave the image.
    let codes: Vec<&str> = imports[1].gaps.iter().map(|g| g.code.as_str()).collect();
    assert_eq!(codes, ["import/manifest-generated"]);
}

#[test]
fn a_snapshot_of_another_archive_is_refused() {
    let (archive, _, _) = package_one(&rooted_agent());
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/single-agent");
    let (_, other_snapshot, _) = package_one(&DirTree::open(root, 10_000).expect("example"));
    let source = Source::Package {
        archive: SourceFile {
            path: "agent.tar.gz",
            bytes: &archive,
        },
        snapshot: Some(SourceFile {
            path: "other.json",
            bytes: &other_snapshot,
        }),
    };
    let error =
        import(Format::AstroliftPackage, source, &options(false, None)).expect_err("mismatch");
    assert!(
        error.to_string().contains("does not match the archive"),
        "{error}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Any set of files, any executable globs, any root: importing the
    /// package and packaging it again gives the same digest.
    #[test]
    fn packaging_the_import_gives_the_original_digest(
        files in prop::collection::btree_map("[a-z]{1,6}(/[a-z]{1,6}){0,2}\\.(sh|md|txt)", "[ -~]{0,40}", 1..12),
        rooted in any::<bool>(),
    ) {
        let root = if rooted { "pkg" } else { "." };
        let prefix = if rooted { "pkg/" } else { "" };
        let mut tree = MemTree::new();
        tree.insert(
            "astrolift.toml",
            format!("astrolift_version = 1\nname = \"p\"\n\n[[workloads]]\nname = \"p\"\nkind = \"agent\"\n\n  [[workloads.containers]]\n  name = \"agent\"\n  is_primary = true\n  image_ref = \"{IMAGE}\"\n\n[package]\nroot = \"{root}\"\nexecutables = [\"**/*.sh\"]\n"),
            false,
        );
        for (path, content) in &files {
            // A directory and a file of one name cannot both exist.
            if files.keys().any(|other| other.starts_with(&format!("{path}/"))) || path == "astrolift.toml" {
                continue;
            }
            tree.insert(format!("{prefix}{path}"), content.clone(), false);
        }
        prop_assume!(tree.entries().len() > 1);
        round_trip(&tree);
    }
}
