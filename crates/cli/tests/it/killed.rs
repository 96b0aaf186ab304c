//! The sync process killed at random points: `astrolift check
//! --apply` on a 20-agent monorepo is killed after a range of delays, then run
//! again to completion. Every time, the registered agents (with their
//! versions, which count their changes) and the referenced archives equal
//! those of one clean run.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::support::{astrolift, json};

const KILL_AFTER_MS: [u64; 6] = [5, 40, 120, 300, 700, 1500];

fn generate_monorepo(out: &Path) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/gen_monorepo.py");
    let status = Command::new("python3")
        .arg(script)
        .arg("20")
        .arg(out)
        .stdout(Stdio::null())
        .status()
        .expect("python3 runs");
    assert!(status.success());
}

fn stores(home: &Path) -> [String; 4] {
    [
        "--state".into(),
        format!("sqlite:{}", home.join("state.db").display()),
        "--blobs".into(),
        format!("file:{}", home.join("blobs").display()),
    ]
}

fn apply(repo: &Path, home: &Path) -> crate::support::Run {
    let mut args = vec![
        "check".to_owned(),
        "--apply".into(),
        repo.display().to_string(),
    ];
    args.extend(stores(home));
    args.extend([
        "--commit".into(),
        "c0ffee".into(),
        "--format".into(),
        "json".into(),
    ]);
    astrolift(args)
}

/// Agents without timestamps (their `version` counts their changes); asserts their archives exist.
fn registered(home: &Path) -> Vec<Value> {
    let mut args = vec![
        "agents".to_owned(),
        "list".into(),
        "--format".into(),
        "json".into(),
    ];
    args.extend(stores(home));
    let run = astrolift(args);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let mut agents = json(&run.stdout).as_array().cloned().unwrap_or_default();
    for agent in &mut agents {
        let digest = agent["payload_digest"].as_str().unwrap_or_default();
        let archive = home
            .join("blobs/packages/sha256")
            .join(format!("{}.tar.gz", digest.trim_start_matches("sha256:")));
        assert!(archive.is_file(), "{} is stored", archive.display());
        if let Some(object) = agent.as_object_mut() {
            object.remove("updated_at");
        }
    }
    agents
}

#[test]
fn a_sync_killed_at_any_point_converges_on_the_clean_state() {
    let work = tempfile::tempdir().expect("temp dir");
    let repo = work.path().join("repo");
    generate_monorepo(&repo);
    let clean_home = work.path().join("clean");
    assert_eq!(apply(&repo, &clean_home).code, 0);
    let clean = registered(&clean_home);
    assert_eq!(clean.len(), 20);

    for (index, delay) in KILL_AFTER_MS.into_iter().enumerate() {
        let home = work.path().join(format!("killed-{index}"));
        let mut args = vec![
            "check".to_owned(),
            "--apply".into(),
            repo.display().to_string(),
        ];
        args.extend(stores(&home));
        args.extend([
            "--commit".into(),
            "c0ffee".into(),
            "--format".into(),
            "json".into(),
        ]);
        let mut child = Command::new(env!("CARGO_BIN_EXE_astrolift"))
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("astrolift starts");
        std::thread::sleep(Duration::from_millis(delay));
        let _ = child.kill();
        let _ = child.wait();
        let rerun = apply(&repo, &home);
        assert_eq!(
            rerun.code, 0,
            "after a kill at {delay} ms: {}",
            rerun.stderr
        );
        assert_eq!(registered(&home), clean, "after a kill at {delay} ms");
    }
}
