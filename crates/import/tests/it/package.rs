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
    package_named(tree, None)
}

/// Validates `tree` and packages the agent `name` (its one agent when `None`).
fn package_named(
    tree: &dyn astrolift_package::PayloadTree,
    name: Option<&str>,
) -> (Vec<u8>, Vec<u8>, String) {
    let validation = validate_repository(tree, &ValidateOptions::default());
    let errors: Vec<_> = validation
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    let agent = match name {
        Some(name) => validation.agents.iter().find(|a| a.name == name),
        None => {
            assert_eq!(validation.agents.len(), 1);
            validation.agents.first()
        }
    };
    let agent = agent.unwrap_or_else(|| panic!("no agent {name:?}"));
    let mut archive = Vec::new();
    let packaged = package_agent(agent, tree, &Limits::DEFAULT, &mut archive)
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
    round_trip_named(tree, None)
}

/// Packages the agent `name` of `tree`, imports the archive with and without its
/// snapshot, and packages each import again: the same digest.
fn round_trip_named(
    tree: &dyn astrolift_package::PayloadTree,
    name: Option<&str>,
) -> Vec<Imported> {
    let (archive, snapshot, digest) = package_named(tree, name);
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

fn example(name: &str) -> DirTree {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    DirTree::open(root.join(name), 10_000).expect("example")
}

/// Every agent of every example: package, import, package gives the digest again. The
/// monorepo's reporter mounts `shared/schemas/finding.json` at `schemas/finding.json`
/// (`[[package.shared]]`): the import puts it back at its source path, and only there.
#[test]
fn every_example_agent_round_trips() {
    for (name, agents) in [
        ("single-agent", &["pr-reviewer"][..]),
        ("monorepo", &["emr-triage", "weekly-reporter"][..]),
    ] {
        let tree = example(name);
        for agent in agents {
            round_trip_named(&tree, Some(agent));
        }
    }
    let imports = round_trip_named(&example("monorepo"), Some("weekly-reporter"));
    let schema = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../examples/monorepo/shared/schemas/finding.json"),
    )
    .expect("the example's schema");
    let reporter = &imports[0];
    assert_eq!(
        reporter
            .files
            .get("shared/schemas/finding.json")
            .map(|f| &f.bytes),
        Some(&schema)
    );
    assert!(!reporter.files.contains_key("schemas/finding.json"));
    assert!(reporter.gaps.is_empty(), "{:?}", reporter.gaps);
}

/// A directory mount comes back as the directory, file by file; a mount whose source the
/// package also includes (the same file twice) is one file at the source.
#[test]
fn shared_directories_and_included_sources_round_trip() {
    let mut tree = MemTree::new();
    tree.insert(
        "astrolift.toml",
        format!("astrolift_version = 1\nname = \"mounts\"\n\n[[workloads]]\nname = \"mounts\"\nkind = \"agent\"\n\n  [[workloads.containers]]\n  name = \"agent\"\n  is_primary = true\n  image_ref = \"{IMAGE}\"\n\n[package]\ninclude = [\"astrolift.toml\", \"notes/**\"]\nexecutables = [\"tools/**\"]\n\n[[package.shared]]\nsource = \"lib/tools\"\nmount = \"tools\"\n\n[[package.shared]]\nsource = \"notes/a.md\"\nmount = \"copy/a.md\"\n"),
        false,
    );
    tree.insert("lib/tools/run.sh", "#!/bin/sh\n", false);
    tree.insert("lib/tools/deep/x.txt", "x\n", false);
    tree.insert("notes/a.md", "a\n", false);
    let imports = round_trip(&tree);
    let paths: Vec<&String> = imports[0].files.keys().collect();
    assert_eq!(
        paths,
        [
            "astrolift.toml",
            "lib/tools/deep/x.txt",
            "lib/tools/run.sh",
            "notes/a.md"
        ]
    );
}

/// A root manifest whose shared source is also an archived file with other bytes cannot
/// be put back: an error, and nothing is written.
#[test]
fn a_shared_source_that_clashes_with_an_archived_file_is_refused() {
    let manifest = "astrolift_version = 1\nname = \"clash\"\n\n[[package.shared]]\nsource = \"data.json\"\nmount = \"m/data.json\"\n";
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::default(),
    ));
    for (path, bytes) in [
        ("astrolift.toml", manifest.as_bytes()),
        ("data.json", b"{}".as_slice()),
        ("m/data.json", b"[]".as_slice()),
    ] {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder
            .append_data(&mut header, path, bytes)
            .expect("an entry");
    }
    let archive = builder
        .into_inner()
        .and_then(|gz| gz.finish())
        .expect("an archive");
    let source = Source::Package {
        archive: SourceFile {
            path: "clash.tar.gz",
            bytes: &archive,
        },
        snapshot: None,
    };
    let error = import(Format::AstroliftPackage, source, &options(true, None)).expect_err("clash");
    assert!(
        error
            .to_string()
            .contains("`data.json` is also an archived file"),
        "{error}"
    );
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
