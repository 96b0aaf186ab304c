//! Golden digests, checked in: an accidental change of the archive or
//! snapshot format (header fields, order, gzip framing, level, chunking,
//! canonical JSON) changes these and fails here. The `v1` version of each is the one an
//! `astrolift.snapshot/v1` snapshot had: it must never change, as registered agents are
//! matched by it.

use std::path::Path;

use astrolift_manifest::model::{AgentManifest, SharedMount};
use astrolift_manifest::{DirTree, Limits, ValidateOptions, validate_repository};
use astrolift_package::{PayloadTree, package_agent};

use crate::common::{brief, local_skill, manifest};

fn fixtures() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures"))
}

fn line(agent: &AgentManifest, tree: &dyn PayloadTree) -> String {
    let packaged = package_agent(agent, tree, &Limits::DEFAULT, std::io::sink())
        .unwrap_or_else(|d| panic!("{}: {d:#?}", agent.name));
    let output = &packaged.output;
    format!(
        "{}: payload {} ({} files, {} bytes) content {} version {} (v1 {})",
        agent.name,
        output.digest,
        output.files,
        output.size,
        output.content_digest,
        packaged.snapshot.digest(),
        packaged.snapshot.legacy_digest()
    )
}

/// Hand-built manifest over a fixture tree: independent of the parser.
#[test]
fn golden_fixture_digest() {
    let tree = DirTree::open(fixtures().join("golden"), 1000).expect("fixture");
    let mut agent = manifest("golden", "agent");
    agent.brief = brief("agent/brief/README.md", &["agent/brief/notes.md"]);
    agent.skills = vec![local_skill("lint", "agent/skills/lint")];
    agent.package.executables = vec!["bin/*".to_owned()];
    agent.package.shared = vec![SharedMount {
        source: "shared/schemas".to_owned(),
        mount: "schemas".to_owned(),
    }];
    insta::assert_snapshot!("golden_fixture", line(&agent, &tree));
}

/// The README quickstart repositories, through the real parser.
#[test]
fn golden_example_repositories() {
    let examples = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples"));
    let mut lines = Vec::new();
    for example in ["single-agent", "monorepo"] {
        let tree = DirTree::open(examples.join(example), 10_000).expect("example");
        let validation = validate_repository(&tree, &ValidateOptions::default());
        assert!(
            !validation.has_errors(),
            "{example}: {:#?}",
            validation.diagnostics
        );
        for agent in &validation.agents {
            lines.push(format!("{example}/{}", line(agent, &tree)));
        }
    }
    insta::assert_snapshot!("golden_examples", lines.join("\n"));
}

#[test]
fn the_default_limits_package_the_examples() {
    assert_eq!(Limits::DEFAULT.package_size, 256 * 1024 * 1024);
}
