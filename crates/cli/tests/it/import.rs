//! `astrolift import`: each format end to end (the layout validates and
//! registers with `check --apply` on the embedded stores), and bad input
//! (exit 2, nothing written).

use std::path::{Path, PathBuf};

use crate::support::{Run, astrolift, json};

const IMAGE: &str = "ghcr.io/calliopeai/astrolift-agent-claude-code-vnc:latest";

fn import_fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../import/tests/fixtures")
        .join(path)
}

fn import(from: &str, source: &Path, out: &Path, extra: &[&str]) -> Run {
    let mut args: Vec<String> = vec![
        "import".into(),
        "--from".into(),
        from.into(),
        source.display().to_string(),
        "--out".into(),
        out.display().to_string(),
    ];
    args.extend(extra.iter().map(|a| (*a).to_owned()));
    astrolift(args)
}

/// `check --apply` on embedded stores under `stores`: the agents registered.
fn check_apply(repo: &Path, stores: &Path) -> Vec<(String, String)> {
    let run = astrolift([
        "check".to_owned(),
        "--apply".to_owned(),
        repo.display().to_string(),
        "--format".to_owned(),
        "json".to_owned(),
        format!("--state=sqlite:{}", stores.join("state.db").display()),
        format!("--blobs=file:{}", stores.join("blobs").display()),
    ]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let report = json(&run.stdout);
    assert_eq!(report["applied"], true);
    report["plan"]
        .as_array()
        .expect("plan")
        .iter()
        .map(|e| {
            (
                e["agent"].as_str().unwrap_or_default().to_owned(),
                e["status"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn validate_errors(repo: &Path) -> Vec<serde_json::Value> {
    let run = astrolift([
        "validate".as_ref(),
        repo.as_os_str(),
        "--format".as_ref(),
        "json".as_ref(),
    ]);
    json(&run.stdout)["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .filter(|d| d["severity"] == "error")
        .cloned()
        .collect()
}

#[test]
fn every_graph_format_imports_validates_and_registers() {
    for (from, source, agents) in [
        (
            "langflow",
            "langflow/single-agent.json",
            vec!["support-agent"],
        ),
        (
            "langflow",
            "langflow/multi-agent.json",
            vec!["researcher", "writer", "editor"],
        ),
        (
            "flowise",
            "flowise/chatflow-tool-agent.json",
            vec!["chatflow-tool-agent"],
        ),
        (
            "flowise",
            "flowise/agentflow-support-desk.json",
            vec!["detect-intent", "refund-agent", "sales-agent", "summarize"],
        ),
        ("agents_md", "agents_md/repo", vec!["repo"]),
        ("agents_md", "agents_md/single/AGENTS.md", vec!["single"]),
    ] {
        let dir = tempfile::tempdir().expect("temp dir");
        let out = dir.path().join("out");
        let run = import(
            from,
            &import_fixture(source),
            &out,
            &["--image", IMAGE, "--format", "json"],
        );
        assert_eq!(run.code, 0, "{source}: {}", run.stderr);
        let report = json(&run.stdout);
        let names: Vec<&str> = report["agents"]
            .as_array()
            .expect("agents")
            .iter()
            .filter_map(|a| a["name"].as_str())
            .collect();
        assert_eq!(names, agents, "{source}");
        assert!(
            report["diagnostics"]
                .as_array()
                .is_some_and(|d| !d.is_empty()),
            "{source}: gaps are reported"
        );
        assert_eq!(
            validate_errors(&out),
            Vec::<serde_json::Value>::new(),
            "{source}"
        );
        let plan = check_apply(&out, &dir.path().join("stores"));
        let added: Vec<&str> = plan
            .iter()
            .filter(|(_, s)| s == "added")
            .map(|(a, _)| a.as_str())
            .collect();
        let mut expected = agents.clone();
        expected.sort();
        let mut added_sorted = added.clone();
        added_sorted.sort();
        assert_eq!(added_sorted, expected, "{source}: {plan:?}");
    }
}

#[test]
fn without_an_image_the_gap_is_printed_for_humans() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("out");
    let run = import(
        "flowise",
        &import_fixture("flowise/chatflow-tool-agent.json"),
        &out,
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("import/runtime-image-required"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("import/unresolved-tool"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("wrote 3 files to"), "{}", run.stdout);
    // Credentials are named, never shown.
    assert!(!run.stdout.contains("5e1b2c3d"), "{}", run.stdout);
}

#[test]
fn an_agent_package_round_trips_to_the_same_digest() {
    let dir = tempfile::tempdir().expect("temp dir");
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/single-agent");
    let stores = dir.path().join("stores");
    let archive = dir.path().join("agent.tar.gz");
    let packaged = astrolift([
        "package".to_owned(),
        example.display().to_string(),
        "--manifest".to_owned(),
        "astrolift.toml".to_owned(),
        "--out".to_owned(),
        archive.display().to_string(),
    ]);
    assert_eq!(packaged.code, 0, "{}", packaged.stderr);
    let digest = json(&packaged.stdout)["digest"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(digest.starts_with("sha256:"), "{}", packaged.stdout);
    let out = dir.path().join("out");
    let run = import("astrolift_package", &archive, &out, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let again = dir.path().join("again.tar.gz");
    let repackaged = astrolift([
        "package".to_owned(),
        out.display().to_string(),
        "--manifest".to_owned(),
        "astrolift.toml".to_owned(),
        "--out".to_owned(),
        again.display().to_string(),
    ]);
    assert_eq!(repackaged.code, 0, "{}", repackaged.stderr);
    assert_eq!(
        json(&repackaged.stdout)["digest"].as_str(),
        Some(digest.as_str())
    );
    check_apply(&out, &stores);
}

fn assert_refused(run: &Run, out: &Path, what: &str) {
    assert_eq!(run.code, 2, "{what}: {}\n{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("nothing was written"),
        "{what}: {}",
        run.stderr
    );
    assert!(!out.exists(), "{what}: {} was created", out.display());
}

#[test]
fn bad_input_exits_2_and_writes_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("out");
    let cases: Vec<(&str, PathBuf, &str)> = vec![
        ("langflow", import_fixture("bad/not-json.yaml"), "not JSON"),
        (
            "langflow",
            import_fixture("flowise/chatflow-tool-agent.json"),
            "--from flowise",
        ),
        (
            "flowise",
            import_fixture("langflow/multi-agent.json"),
            "--from langflow",
        ),
        (
            "flowise",
            import_fixture("bad/truncated.json"),
            "ends early",
        ),
        (
            "astrolift_package",
            import_fixture("langflow/single-agent.json"),
            "not gzip",
        ),
        ("agents_md", import_fixture("bad"), "no AGENTS.md"),
    ];
    for (from, source, message) in cases {
        let run = import(from, &source, &out, &[]);
        assert_refused(&run, &out, message);
        assert!(run.stderr.contains(message), "{message}: {}", run.stderr);
    }
    let huge = dir.path().join("huge.json");
    let file = std::fs::File::create(&huge).expect("create");
    file.set_len(50 * 1024 * 1024).expect("sparse 50 MiB file");
    let run = import("langflow", &huge, &out, &[]);
    assert_refused(&run, &out, "50 MiB");
    assert!(run.stderr.contains("over the"), "{}", run.stderr);
    // An AGENTS.md becomes the brief: over the brief's 1 MiB it is refused, as a file and
    // in a directory, so that no import writes a layout that cannot validate.
    let agents_dir = dir.path().join("big");
    std::fs::create_dir_all(&agents_dir).expect("mkdir");
    let big = agents_dir.join("AGENTS.md");
    std::fs::write(&big, format!("# Big\n{}\n", "x".repeat(2_000_000))).expect("writes");
    for source in [&big, &agents_dir] {
        let run = import("agents_md", source, &out, &[]);
        assert_refused(&run, &out, "2 MB AGENTS.md");
        assert!(run.stderr.contains("1048576-byte limit"), "{}", run.stderr);
    }
    let run = import(
        "langflow",
        &import_fixture("langflow/single-agent.json"),
        &out,
        &["--name", "Bad Name"],
    );
    assert_refused(&run, &out, "bad name");
}

#[test]
fn an_archive_with_an_escaping_path_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut header = tar::Header::new_old();
    let name = b"../escape.txt";
    header.as_old_mut().name[..name.len()].copy_from_slice(name);
    header.set_size(0);
    header.set_mode(0o644);
    header.set_entry_type(tar::EntryType::Regular);
    header.set_cksum();
    let mut tar_bytes = header.as_bytes().to_vec();
    tar_bytes.extend_from_slice(&[0u8; 1024]);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, &tar_bytes).expect("gzip");
    let archive = dir.path().join("evil.tar.gz");
    std::fs::write(&archive, gz.finish().expect("gzip")).expect("write");
    let out = dir.path().join("out");
    let run = import("astrolift_package", &archive, &out, &[]);
    assert_refused(&run, &out, "escaping path");
    assert!(run.stderr.contains("escapes the package"), "{}", run.stderr);
    assert!(!dir.path().join("escape.txt").exists());
}

#[test]
fn existing_files_need_force() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).expect("out");
    std::fs::write(out.join("astrolift.toml"), "mine\n").expect("write");
    let source = import_fixture("langflow/basic-prompting.json");
    let run = import("langflow", &source, &out, &[]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("already exists (pass --force"),
        "{}",
        run.stderr
    );
    assert_eq!(
        std::fs::read_to_string(out.join("astrolift.toml"))
            .ok()
            .as_deref(),
        Some("mine\n")
    );
    assert!(!out.join("brief").exists(), "nothing else was written");
    let run = import("langflow", &source, &out, &["--force", "--image", IMAGE]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        std::fs::read_to_string(out.join("astrolift.toml"))
            .unwrap_or_default()
            .contains(IMAGE)
    );
    assert!(out.join("brief/README.md").is_file());
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .expect("list")
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(".astrolift-import-")
        })
        .collect();
    assert!(leftovers.is_empty(), "the staging directory is removed");
}

/// One AGENTS.md imported alone carries none of the files it links: each such link is
/// kept as text (`import/unresolved-link`), so the layout validates (docs/import.md).
#[test]
fn one_agents_md_with_links_gives_a_layout_that_validates() {
    let dir = tempfile::tempdir().expect("temp dir");
    let source = dir.path().join("AGENTS.md");
    std::fs::write(
        &source,
        "# Proj\n\nSee [testing](docs/testing.md), [`api`](api.md) and [the site](https://example.com).\n",
    )
    .expect("writes");
    let out = dir.path().join("out");
    let run = import(
        "agents_md",
        &source,
        &out,
        &["--image", "ghcr.io/acme/agent:1"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout
            .matches("warning[import/unresolved-link]")
            .count(),
        2,
        "{}",
        run.stdout
    );
    let brief = std::fs::read_to_string(out.join("brief/README.md")).expect("a brief");
    assert_eq!(
        brief,
        "# Proj\n\nSee `[testing](docs/testing.md)`, ``[`api`](api.md)`` and [the site](https://example.com).\n"
    );
    let validated = astrolift(["validate".to_owned(), out.display().to_string()]);
    assert_eq!(validated.code, 0, "{}", validated.stdout);
    assert!(
        validated
            .stdout
            .ends_with("0 errors, 0 warnings, 0 notices; 1 agent\n"),
        "{}",
        validated.stdout
    );
}
