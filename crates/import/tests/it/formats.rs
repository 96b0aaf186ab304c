//! Each fixture imported in its default mode (and multi-agent graphs in
//! both modes): the gaps and the files, as snapshots.

use astrolift_import::{Format, Mode};

use crate::support::{dump, graph_fixtures, import_dir, import_file, options};

#[test]
fn graph_fixtures_in_their_default_mode() {
    for (format, path) in graph_fixtures() {
        let imported = import_file(format, &path, &options(false, None));
        let name = path.replace(['/', '.'], "-");
        insta::assert_snapshot!(name, dump(&imported));
    }
}

#[test]
fn multi_agent_graphs_flattened() {
    for (format, path) in [
        (Format::Langflow, "langflow/multi-agent.json"),
        (Format::Flowise, "flowise/agentflow-support-desk.json"),
    ] {
        let imported = import_file(format, path, &options(true, Some(Mode::Flatten)));
        assert_eq!(imported.agents.len(), 1, "{path}");
        let name = format!("flatten-{}", path.replace(['/', '.'], "-"));
        insta::assert_snapshot!(name, dump(&imported));
    }
}

#[test]
fn multi_agent_graphs_default_to_a_federation_with_a_workflow() {
    let imported = import_file(
        Format::Langflow,
        "langflow/multi-agent.json",
        &options(true, None),
    );
    assert_eq!(imported.agents, ["researcher", "writer", "editor"]);
    let workflow =
        String::from_utf8_lossy(&imported.files["workflows/research-team.toml"].bytes).into_owned();
    // The edges: researcher -> (prompt) -> writer -> (custom code) -> editor.
    assert!(
        workflow.contains("name = \"writer\"\nagent = \"writer\"\nneeds = [\"researcher\"]"),
        "{workflow}"
    );
    assert!(
        workflow.contains("name = \"editor\"\nagent = \"editor\"\nneeds = [\"writer\"]"),
        "{workflow}"
    );
}

#[test]
fn agents_md_file_and_directory() {
    let single = import_file(
        Format::AgentsMd,
        "agents_md/single/AGENTS.md",
        &options(false, None),
    );
    insta::assert_snapshot!("agents-md-single", dump(&single));
    let repo = import_dir("agents_md/repo", &options(false, None));
    insta::assert_snapshot!("agents-md-repo", dump(&repo));
}

#[test]
fn name_option_names_the_agent() {
    let mut with_name = options(true, None);
    with_name.name = Some("triage".to_owned());
    let imported = import_file(
        Format::Flowise,
        "flowise/chatflow-tool-agent.json",
        &with_name,
    );
    assert_eq!(imported.agents, ["triage"]);
    let manifest = String::from_utf8_lossy(&imported.files["astrolift.toml"].bytes).into_owned();
    assert!(manifest.contains("name = \"triage\""));
    assert!(manifest.contains(crate::support::IMAGE));
    assert!(
        !imported
            .gaps
            .iter()
            .any(|g| g.code == "import/runtime-image-required")
    );
}

#[test]
fn credentials_are_never_echoed() {
    for (format, path) in graph_fixtures() {
        let imported = import_file(format, &path, &options(true, None));
        let everything = dump(&imported);
        for secret in [
            "sk-live-not-a-real-key-0000",
            "OPENAI_API_KEY",
            "ASTRA_DB_APPLICATION_TOKEN",
            "5e1b2c3d",
            "7f00aa11",
            "c0c0c0c0",
        ] {
            assert!(!everything.contains(secret), "{path} echoes `{secret}`");
        }
    }
}

/// A Flowise agentflow's user messages (docs/import.md): one with text besides its
/// variables is a skill of its agent, or the brief of an agent with no instructions;
/// one of variables only (`{{ question }}`) is the run's input and writes nothing.
#[test]
fn flowise_user_messages_with_text_are_kept() {
    let imported = import_file(
        Format::Flowise,
        "flowise/agentflow-user-messages.json",
        &options(true, None),
    );
    let text = |path: &str| String::from_utf8_lossy(&imported.files[path].bytes).into_owned();
    let supervisor = text("agents/supervisor/skills/user-message-of-supervisor/SKILL.md");
    assert!(supervisor.contains("Given the conversation above, who should act next?"));
    let answer = text("agents/generate-final-answer/brief/README.md");
    assert!(answer.contains("Given the above conversations, generate a detail solution"));
    let title_files: Vec<&String> = imported
        .files
        .keys()
        .filter(|p| p.starts_with("agents/title/") || p.starts_with("agents/software-engineer/"))
        .collect();
    assert_eq!(
        title_files,
        [
            "agents/software-engineer/astrolift.toml",
            "agents/software-engineer/brief/README.md",
            "agents/title/astrolift.toml",
            "agents/title/brief/README.md",
        ]
    );
}
