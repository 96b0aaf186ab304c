//! Shared helpers: running the binary on fixture repositories, and a set of
//! hand-built diagnostics that exercise every corner of the renderers.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use astrolift_manifest::{AgentSummary, Diagnostic, MemTree, Severity, Span};

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// What one run of the binary gave.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Registers, in the stores `store_args` name, the skill sources the examples' catalogue
/// and organization skills resolve through when a sync fetches them
/// (`tests/fake-github/skill-repos/`, which `FakeGitHub::add_example_skill_repos` serves):
/// the aliases `steadymd` and `platform` of `project`, and the catalogue.
pub fn register_example_skill_sources(project: &str, store_args: &[&str]) {
    let aliases = ["steadymd", "platform"].map(|alias| {
        let args = ["skill-repo", "register", alias, "example/runbooks"];
        [&args[..], &["--project-id", project]].concat()
    });
    let catalogue = vec!["catalogue", "register", "example/catalogue"];
    for args in aliases.into_iter().chain([catalogue]) {
        let run = astrolift([&args[..], store_args].concat());
        assert_eq!(run.code, 0, "{}", run.stderr);
    }
}

/// `PATH` with the folder of the `astrolift` this build made first: what a shell a test
/// starts runs for `astrolift`.
pub fn path_with_astrolift() -> String {
    let binary = Path::new(env!("CARGO_BIN_EXE_astrolift"));
    let folder = binary.parent().unwrap_or(binary);
    let path = std::env::var("PATH").unwrap_or_default();
    format!("{}:{path}", folder.display())
}

/// Runs `astrolift` with `args`, colours forced neither on nor off.
pub fn astrolift<I, S>(args: I) -> Run
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let output = Command::new(env!("CARGO_BIN_EXE_astrolift"))
        .args(args)
        .env_remove("CLICOLOR_FORCE")
        .env_remove("NO_COLOR")
        .env_remove("RUST_LOG")
        // Without App credentials, whatever the environment: remote skills are unresolved.
        .env_remove("GITHUB_APP_ID")
        .output()
        .expect("the astrolift binary runs");
    run_of(output)
}

/// Defines the env spec `triage-prod`, which `examples/monorepo`'s triage
/// trigger names, for `project`, in the stores `store_args` name
/// (`--state …`, `--blobs …`): an agent may only name its project's env specs.
/// The env spec `triage-prod` that the example monorepo's triage trigger names, of
/// `project`, selecting the monorepo's own config manifest (`config/triage/config.toml`)
/// in `config_repo`, the name the test registers the monorepo under: a sync of it
/// packages the config, so a dispatch with the spec carries it.
pub fn define_triage_env_spec(project: &str, config_repo: &str, store_args: &[&str]) {
    let mut args = vec![
        "env-spec",
        "upsert",
        "triage-prod",
        "--agent-type",
        "claude",
        "--runtime",
        "claude-code",
        "--project-id",
        project,
        "--config-repo",
        config_repo,
        "--manifest-path",
        "config/triage/config.toml",
    ];
    args.extend_from_slice(store_args);
    let run = astrolift(args);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

pub fn run_of(output: Output) -> Run {
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// `astrolift validate <fixture> --format <format>`.
pub fn validate_fixture(name: &str, format: &str) -> Run {
    let dir = fixture(name);
    astrolift([
        "validate".as_ref(),
        dir.as_os_str(),
        "--format".as_ref(),
        format.as_ref(),
    ])
}

pub fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).expect("valid JSON")
}

fn span(line: u32, column: u32, end_line: u32, end_column: u32) -> Span {
    Span {
        line,
        column,
        end_line,
        end_column,
    }
}

/// The manifest the sample diagnostics point into.
pub const SAMPLE_MANIFEST: &str = r#"astrolift_version = 1
name = "émr-triage"
brief = "brief/README.md"

[secrets]
API_KEY = "sk-plain"

[package]
include = [
  "../outside/**",
]
"#;

/// A sample repository: the manifest above; the brief is deliberately absent.
pub fn sample_tree() -> MemTree {
    MemTree::from_files([("agents/triage/astrolift.toml", SAMPLE_MANIFEST)])
}

/// Diagnostics of every severity and span shape, with and without help, with
/// characters that every format must escape. Codes are made up (`demo/…`) so
/// snapshots do not depend on the catalogue's wording.
pub fn sample_diagnostics() -> Vec<Diagnostic> {
    let manifest = "agents/triage/astrolift.toml";
    vec![
        Diagnostic {
            severity: Severity::Error,
            code: "demo/invalid-name".into(),
            message: "`émr-triage` is not a slug: use a-z, 0-9 and `-`".into(),
            path: manifest.into(),
            span: span(2, 8, 2, 20),
            help: Some("try `emr-triage`".into()),
            fix: None,
        },
        Diagnostic {
            severity: Severity::Error,
            code: "demo/plaintext-secret".into(),
            message: "secret `API_KEY` is a plaintext value, not a secret:// reference".into(),
            path: manifest.into(),
            span: span(6, 11, 6, 21),
            help: None,
            fix: None,
        },
        Diagnostic {
            severity: Severity::Warning,
            code: "demo/path-escape".into(),
            message: "100% outside: `include` leaves the package,\nfirst via `..`".into(),
            path: manifest.into(),
            span: span(9, 11, 11, 2),
            help: Some("paths are relative to the manifest directory: a, b".into()),
            fix: None,
        },
        Diagnostic {
            severity: Severity::Notice,
            code: "demo/missing-brief".into(),
            message: "brief `brief/README.md` does not exist".into(),
            path: "agents/triage/brief/README.md".into(),
            span: Span::FILE,
            help: None,
            fix: None,
        },
    ]
}

pub fn sample_agents() -> Vec<AgentSummary> {
    vec![AgentSummary {
        name: "emr-triage".into(),
        manifest: "agents/triage/astrolift.toml".into(),
        alias: Some("triage".into()),
        enabled: true,
    }]
}

/// A SARIF log with the tool version replaced, so snapshots outlive releases.
pub fn without_version(mut sarif: serde_json::Value) -> serde_json::Value {
    sarif["runs"][0]["tool"]["driver"]["version"] = "[version]".into();
    sarif
}

/// The first line `astrolift serve` prints (`... listening on http://ADDR`)
/// and the URL at its end; panics unless it is a loopback URL.
pub fn read_serve_url(stdout: &mut impl std::io::BufRead) -> (String, String) {
    let mut line = String::new();
    stdout
        .read_line(&mut line)
        .expect("serve prints its address");
    let url = line
        .trim()
        .rsplit(' ')
        .next()
        .expect("an address")
        .to_owned();
    assert!(url.starts_with("http://127.0.0.1:"), "{line}");
    (line, url)
}

/// Copies the directory `from` (recursively) to `to`, created if absent.
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("fixture is readable") {
        let entry = entry.expect("fixture entry");
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// `ASTROLIFT_STATE` and `ASTROLIFT_BLOBS` for the embedded stores in `dir`
/// (`state.db`, `blobs/`), for `Command::envs`.
pub fn stores_env(dir: &Path) -> [(&'static str, String); 2] {
    [
        (
            "ASTROLIFT_STATE",
            format!("sqlite:{}", dir.join("state.db").display()),
        ),
        (
            "ASTROLIFT_BLOBS",
            format!("file:{}", dir.join("blobs").display()),
        ),
    ]
}
