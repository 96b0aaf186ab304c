//! Every kind of command the tool suggests (`astrolift_sync::commands`, and the
//! commands the CLI's own messages name) is pasted into `sh -c` here, against the
//! embedded stores, and does what the message says (README.md, "The CLI"; every
//! suggested command can be pasted and runs). Values that come from a webhook or a
//! path are hostile: quotes, spaces, `$(…)` and backticks stay data.

use std::path::Path;
use std::process::Command;

use astrolift_sync::commands::{
    EXAMPLE_AGENT_TYPE, EXAMPLE_RUNTIME, env_spec_upsert_command, env_spec_upsert_with_config,
    register_command, register_manifest_command, unregister_command,
};

use crate::support::{Run, run_of};

/// A ref a webhook could carry: if the shell expanded any of it, `pwned` would appear.
const HOSTILE_REF: &str = "feat/it's a \"ref\" `touch pwned` $(touch pwned)";

/// Runs `command` with `sh -c` in `dir`, the `astrolift` this build made first on `PATH`.
fn paste(dir: &Path, command: &str) -> Run {
    let output = Command::new("sh")
        .args(["-c", command])
        .current_dir(dir)
        .env("PATH", crate::support::path_with_astrolift())
        .env_remove("ASTROLIFT_STATE")
        .env_remove("ASTROLIFT_BLOBS")
        .env_remove("GITHUB_APP_ID")
        .output()
        .expect("sh runs");
    let run = run_of(output);
    assert!(
        !dir.join("pwned").exists(),
        "the shell ran part of `{command}`"
    );
    run
}

/// The first `` `astrolift …` `` command quoted in `text`.
fn quoted_command(text: &str) -> &str {
    let start = text.find("`astrolift ").expect("a suggested command") + 1;
    let end = text[start..].find('`').expect("its closing backtick");
    &text[start..start + end]
}

#[test]
fn register_and_unregister_suggestions_do_what_they_say() {
    let dir = tempfile::tempdir().expect("temp dir");
    let repository = "octo/agents";
    let manifest = "agents/it's here/astrolift.toml";

    let register = paste(dir.path(), &register_command(repository, HOSTILE_REF));
    assert_eq!(register.code, 0, "{}", register.stderr);
    assert!(register.stdout.contains(HOSTILE_REF), "{}", register.stdout);
    let one = paste(
        dir.path(),
        &register_manifest_command("octo/other", HOSTILE_REF, manifest),
    );
    assert_eq!(one.code, 0, "{}", one.stderr);

    // Each unregister finds exactly the registration the register made, once.
    for (repo, path) in [(repository, None), ("octo/other", Some(manifest))] {
        let removed = paste(dir.path(), &unregister_command(repo, path));
        assert_eq!(removed.code, 0, "{}", removed.stderr);
        let again = paste(dir.path(), &unregister_command(repo, path));
        assert_eq!(again.code, 2, "nothing left to remove: {}", again.stdout);
    }
}

#[test]
fn env_spec_suggestions_define_the_spec_they_name() {
    let dir = tempfile::tempdir().expect("temp dir");
    // Names and project ids are plain by their rules; a config path is anything a
    // repository holds.
    let project = "team.a+b@x";
    let config_path = "config/it's $(touch pwned)/config.toml";
    let plain = env_spec_upsert_command(
        "triage_prod.v2",
        project,
        EXAMPLE_AGENT_TYPE,
        EXAMPLE_RUNTIME,
    );
    let with_config = env_spec_upsert_with_config(
        "triage-config",
        project,
        EXAMPLE_AGENT_TYPE,
        EXAMPLE_RUNTIME,
        Some(("octo/agents", config_path)),
    );
    for (name, command) in [("triage_prod.v2", plain), ("triage-config", with_config)] {
        let run = paste(dir.path(), &command);
        assert_eq!(run.code, 0, "{command}: {}", run.stderr);
        let show = crate::support::astrolift([
            "env-spec",
            "show",
            name,
            "--format",
            "json",
            "--state",
            &format!(
                "sqlite:{}",
                dir.path().join(".astrolift/state.db").display()
            ),
        ]);
        assert_eq!(show.code, 0, "{}", show.stderr);
        let spec = crate::support::json(&show.stdout);
        assert_eq!(spec["project_id"], project, "{spec}");
        assert_eq!(spec["runtime"], EXAMPLE_RUNTIME, "{spec}");
        if name == "triage-config" {
            assert_eq!(spec["manifest_path"], config_path, "{spec}");
        }
    }
}

/// The help of `trigger/env-spec-not-in-project` on `check --apply`: pasted, the check
/// then registers the agent it refused.
#[test]
fn the_missing_env_spec_help_fixes_the_check() {
    let dir = tempfile::tempdir().expect("temp dir");
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/monorepo");
    crate::support::copy_tree(&examples, &dir.path().join("monorepo"));
    let check = |dir: &Path| paste(dir, "astrolift check --apply monorepo --format json");

    let refused = check(dir.path());
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    let report = crate::support::json(&refused.stdout);
    let help = report["diagnostics"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|d| d["code"] == "trigger/env-spec-not-in-project")
        .and_then(|d| d["help"].as_str())
        .expect("the help names a command")
        .to_owned();
    let defined = paste(dir.path(), quoted_command(&help));
    assert_eq!(defined.code, 0, "{}", defined.stderr);

    let registered = check(dir.path());
    assert_eq!(registered.code, 0, "{}", registered.stdout);
}

/// `validate --fix --dry-run` on a folder of repositories names the command for the first
/// repository below it; pasted, it runs there: a dry run of that repository, which says
/// there is nothing to fix (exit 0) or prints the diff of its fixes (exit 1; the first
/// example, `examples/layers`, has one: its packager keeps the skill name `packager.default`).
#[test]
fn the_fix_on_a_folder_suggestion_runs_on_the_repository() {
    let dir = tempfile::tempdir().expect("temp dir");
    let folder = dir.path().join("it's examples");
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    crate::support::copy_tree(&examples, &folder);

    let run = paste(
        dir.path(),
        "astrolift validate --fix --dry-run \"it's examples\"",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let suggested = quoted_command(&run.stderr);
    let pasted = paste(dir.path(), suggested);
    let nothing_to_fix = pasted.code == 0 && pasted.stderr.starts_with("nothing to fix in ");
    let a_diff = pasted.code == 1 && pasted.stdout.starts_with("--- a/");
    assert!(
        nothing_to_fix || a_diff,
        "{suggested}: exit {}\n{}\n{}",
        pasted.code,
        pasted.stdout,
        pasted.stderr
    );
}
