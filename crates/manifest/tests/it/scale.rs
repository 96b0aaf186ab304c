//! A generated monorepo (N agents, each with a brief, a context file and two
//! local skills, behind a federation file) validates clean.

use std::time::Instant;

use astrolift_manifest::{MemTree, SourceTree};

use crate::support::validate;

/// A monorepo of `n` agents, each with a brief and two local skills, behind a federation file.
pub fn generated_monorepo(n: usize) -> MemTree {
    let mut tree = MemTree::new();
    let mut federation = String::from(
        "schema = \"astrolift.agent.federation/v1\"\nname = \"generated\"\ninclude = [\"agents/*/astrolift.toml\"]\nauto_register_new = true\n",
    );
    for i in 0..n {
        let name = format!("agent-{i}");
        let dir = format!("agents/{name}");
        if i % 2 == 0 {
            federation.push_str(&format!(
                "\n[[agents]]\nmanifest = \"{dir}/astrolift.toml\"\nalias = \"a{i}\"\n"
            ));
        }
        let manifest = format!(
            "astrolift_version = 1\nname = \"{name}\"\nbrief = \"brief/README.md\"\nskills = [{{ one = \"skills/one\" }}, \"./skills/two\"]\n\n[[workloads]]\nname = \"{name}\"\nkind = \"agent\"\n\n  [[workloads.containers]]\n  is_primary = true\n  image_ref = \"ghcr.io/example/agent:1\"\n"
        );
        tree.insert(format!("{dir}/astrolift.toml"), manifest, false);
        tree.insert(
            format!("{dir}/brief/README.md"),
            "# Brief\n\nSee [notes](notes.md).\n",
            false,
        );
        tree.insert(format!("{dir}/brief/notes.md"), "# Notes\n", false);
        for skill in ["one", "two"] {
            let text = format!("---\nname: {skill}\ndescription: Skill {skill}.\n---\n# {skill}\n");
            tree.insert(format!("{dir}/skills/{skill}/SKILL.md"), text, false);
        }
    }
    tree.insert("astrolift.agents.toml", federation, false);
    tree
}

/// A generated monorepo validates clean and its models come out in
/// selection order. Timing is printed, not asserted (CI machines are shared);
/// for the scaling figures run it in release with a larger N:
/// `ASTROLIFT_SCALE_N=10000 cargo test -p astrolift-manifest --release --test it scale -- --nocapture`.
#[test]
fn generated_monorepo_validates_clean() {
    let n = std::env::var("ASTROLIFT_SCALE_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let tree = generated_monorepo(n);
    let start = Instant::now();
    let validation = validate(&tree);
    let elapsed = start.elapsed();
    println!("{n} agents validated in {elapsed:?}");
    assert_eq!(validation.agents.len(), n);
    assert!(
        validation.diagnostics.is_empty(),
        "{:#?}",
        validation.diagnostics.first()
    );
    assert_eq!(validation.agents[0].alias.as_deref(), Some("a0"));
}

/// Manifests of a large repository are read on several threads (one part per
/// core); the result is in selection order all the same, and a name taken by
/// the first agent is reported on the last one, which another thread read.
#[test]
fn a_large_repository_reads_in_parallel_and_keeps_selection_order() {
    let n = 300;
    let mut tree = generated_monorepo(n);
    // agent-99 is selected last (an included manifest, in path order);
    // agent-0 first (listed in the federation file).
    let last = "agents/agent-99/astrolift.toml".to_owned();
    let text = String::from_utf8(tree.read(&last, u64::MAX).expect("manifest").into_owned())
        .expect("utf-8")
        .replace("name = \"agent-99\"", "name = \"agent-0\"");
    tree.insert(last.clone(), text, false);
    let validation = validate(&tree);
    let paths: Vec<&str> = validation
        .agents
        .iter()
        .map(|agent| agent.manifest.as_str())
        .collect();
    // Selection order: the federation file's `[[agents]]` (the even ones, as
    // listed), then the rest of its `include` glob, in path order.
    let path = |i: usize| format!("agents/agent-{i}/astrolift.toml");
    let mut included: Vec<String> = (1..n).step_by(2).map(path).collect();
    included.sort_unstable();
    let expected: Vec<String> = (0..n).step_by(2).map(path).chain(included).collect();
    assert_eq!(paths, expected, "selection order");
    let duplicates: Vec<_> = validation
        .diagnostics
        .iter()
        .map(|d| (d.code.as_str(), d.path.as_str()))
        .collect();
    assert_eq!(duplicates, [("manifest/duplicate-name", last.as_str())]);
}
