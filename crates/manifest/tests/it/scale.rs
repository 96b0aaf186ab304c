//! A scaling check, not a benchmark: validation of a generated monorepo grows
//! linearly with the number of agents. Ignored by default; run with
//! `cargo test -p astrolift-manifest --release --test it scale -- --ignored --nocapture`.

use std::time::Instant;

use astrolift_manifest::MemTree;

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

#[test]
#[ignore = "timing; run in release with --ignored --nocapture"]
fn validation_scales_linearly() {
    let mut per_agent = Vec::new();
    for n in [100, 1_000, 10_000] {
        let tree = generated_monorepo(n);
        let start = Instant::now();
        let discovery = astrolift_manifest::discovery::discover(&tree, &Default::default());
        println!("{n:>6} agents: discovery {:?}", start.elapsed());
        drop(discovery);
        let start = Instant::now();
        let validation = validate(&tree);
        let elapsed = start.elapsed();
        assert_eq!(validation.agents.len(), n);
        assert!(
            !validation.has_errors(),
            "{:#?}",
            &validation.diagnostics[..3.min(validation.diagnostics.len())]
        );
        println!(
            "{n:>6} agents: {elapsed:?} ({:?} per agent)",
            elapsed / n as u32
        );
        per_agent.push(elapsed.as_secs_f64() / n as f64);
    }
    // Linear: the per-agent time at 10,000 stays within 3x of that at 1,000.
    assert!(per_agent[2] < per_agent[1] * 3.0, "{per_agent:?}");
}
