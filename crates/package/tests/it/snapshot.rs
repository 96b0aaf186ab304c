//! The agent package snapshot and its canonical JSON.

use astrolift_manifest::model::{Container, SkillRef, Workload};
use astrolift_manifest::{Limits, MemTree};
use astrolift_package::snapshot::canonical_json;
use astrolift_package::{snapshot, write_archive};
use sha2::{Digest, Sha256};

use crate::common::{brief, local_skill, manifest, mem_tree};

fn tree() -> MemTree {
    mem_tree(&[
        ("agents/t/astrolift.toml", "name = \"triage\"\n"),
        (
            "agents/t/brief/README.md",
            "# Triage\nSee [sev](severity.md).\n",
        ),
        ("agents/t/brief/severity.md", "P1 > P2\n"),
        (
            "agents/t/skills/jira/SKILL.md",
            "---\nname: jira\n---\nUse Jira.\n",
        ),
        ("agents/t/skills/jira/scripts/search.sh", "#!/bin/sh\n"),
    ])
}

fn agent() -> astrolift_manifest::model::AgentManifest {
    let mut agent = manifest("triage", "agents/t");
    agent.brief = brief("agents/t/brief/README.md", &["agents/t/brief/severity.md"]);
    agent.skills = vec![
        local_skill("jira", "agents/t/skills/jira"),
        SkillRef::Catalogue {
            name: "web-search".to_owned(),
            version: "1.2.0".to_owned(),
        },
        SkillRef::Org {
            repo_alias: "platform".to_owned(),
            path: "skills/pager".to_owned(),
            git_ref: "v3".to_owned(),
        },
    ];
    agent.workload = Some(Workload {
        name: "triage".to_owned(),
        run_family: Some("harness".to_owned()),
        max_retries: Some(2),
        tool_timeout_seconds: Some(120),
        result_ttl_hours: Some(48),
        containers: vec![
            Container {
                name: "sidecar".to_owned(),
                is_primary: false,
                image_ref: "ghcr.io/acme/sidecar:1".to_owned(),
            },
            Container {
                name: "main".to_owned(),
                is_primary: true,
                image_ref: "ghcr.io/acme/triage@sha256:abc".to_owned(),
            },
        ],
    });
    agent
        .environment
        .insert("LOG_LEVEL".to_owned(), "info \"quoted\"\n".to_owned());
    agent
        .environment
        .insert("A_FIRST".to_owned(), "1".to_owned());
    agent
        .secrets
        .insert("JIRA_TOKEN".to_owned(), "secret://agents/jira".to_owned());
    agent
}

#[test]
fn snapshot_is_canonical_json_with_every_field() {
    let tree = tree();
    let agent = agent();
    let slice = astrolift_package::slice(&agent, &tree, &Limits::DEFAULT).expect("slice");
    let output = write_archive(&slice, &tree, std::io::sink()).expect("archive");
    let snapshot = snapshot(&agent, &slice, &tree, &output).expect("snapshot");
    let json = String::from_utf8(snapshot.canonical_json()).expect("utf8");
    assert!(!json.contains(": ") && !json.contains('\n'));
    // Re-canonicalizing a parsed copy is a fixed point.
    let parsed: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
    assert_eq!(canonical_json(&parsed), json.as_bytes());
    // The version leaves out the archive's own digest and size.
    let mut versioned = parsed.clone();
    let payload = versioned["payload"].as_object_mut().expect("a payload");
    assert!(payload.remove("digest").is_some() && payload.remove("size").is_some());
    assert_eq!(
        snapshot.digest(),
        hex::encode(Sha256::digest(canonical_json(&versioned)))
    );
    insta::assert_snapshot!("snapshot_json", json);
}

#[test]
fn local_skill_hash_is_a_sha256sum_listing() {
    let tree = tree();
    let agent = agent();
    let slice = astrolift_package::slice(&agent, &tree, &Limits::DEFAULT).expect("slice");
    let output = write_archive(&slice, &tree, std::io::sink()).expect("archive");
    let snapshot = snapshot(&agent, &slice, &tree, &output).expect("snapshot");
    let sha = |s: &str| hex::encode(Sha256::digest(s.as_bytes()));
    let listing = format!(
        "{}  SKILL.md\n{}  scripts/search.sh\n",
        sha("---\nname: jira\n---\nUse Jira.\n"),
        sha("#!/bin/sh\n")
    );
    let value = serde_json::to_value(&snapshot).expect("value");
    assert_eq!(value["skills"][0]["sha256"], sha(&listing));
    assert_eq!(value["skills"][1]["kind"], "catalogue");
    assert_eq!(value["runtime_image"], "ghcr.io/acme/triage@sha256:abc");
    assert_eq!(
        value["brief"]["context_files"][0]["sha256"],
        sha("P1 > P2\n")
    );
}

#[test]
fn any_change_changes_the_version() {
    let tree = tree();
    let version = |agent: &astrolift_manifest::model::AgentManifest, tree: &MemTree| {
        let slice = astrolift_package::slice(agent, tree, &Limits::DEFAULT).expect("slice");
        let output = write_archive(&slice, tree, std::io::sink()).expect("archive");
        snapshot(agent, &slice, tree, &output)
            .expect("snapshot")
            .digest()
    };
    let base = version(&agent(), &tree);
    assert_eq!(base, version(&agent(), &tree));
    let mut changed = agent();
    changed
        .secrets
        .insert("OTHER".to_owned(), "secret://x".to_owned());
    assert_ne!(base, version(&changed, &tree));
    let mut edited = tree.clone();
    edited.insert("agents/t/brief/severity.md", "P1 > P2 > P3\n", false);
    assert_ne!(base, version(&agent(), &edited));
}

#[test]
fn canonical_json_escapes_minimally_and_sorts_nested_keys() {
    let value = serde_json::json!({"b": [1, {"z": null, "a": true}], "a": "\u{1}é\"\\/"});
    assert_eq!(
        String::from_utf8(canonical_json(&value)).expect("utf8"),
        r#"{"a":"\u0001é\"\\/","b":[1,{"a":true,"z":null}]}"#
    );
}

/// A resolved remote skill adds its commit and content hash to its entry; an unresolved
/// one (and every local skill) is written exactly as before pins existed (the
/// `snapshot_json` snapshot above), so such agents keep their versions.
#[test]
fn resolved_remote_skills_are_pinned_and_unresolved_ones_unchanged() {
    use astrolift_package::{ContentHashes, SkillPin, SkillPins, skill_dir_sha256};
    let tree = tree();
    let agent = agent();
    let slice = astrolift_package::slice(&agent, &tree, &Limits::DEFAULT).expect("slice");
    let output = write_archive(&slice, &tree, std::io::sink()).expect("archive");
    let unpinned = snapshot(&agent, &slice, &tree, &output).expect("snapshot");
    let pinned_by = |pins: &SkillPins| {
        let hashes = ContentHashes::default();
        astrolift_package::snapshot_pinned(&agent, &slice, &tree, &output, &hashes, pins)
            .expect("snapshot")
    };
    let none = pinned_by(&SkillPins::new());
    assert_eq!(none.digest(), unpinned.digest());

    // The skill directory of a fetched skill repository, hashed like a local skill.
    let skills = mem_tree(&[
        ("skills/pager/SKILL.md", "---\nname: pager\n---\nPage.\n"),
        ("skills/pager/scripts/page.sh", "#!/bin/sh\n"),
    ]);
    let files = ["skills/pager/SKILL.md", "skills/pager/scripts/page.sh"].map(str::to_owned);
    let sha256 = skill_dir_sha256(&skills, "skills/pager", &files).expect("hashed");
    let sha = |s: &str| hex::encode(Sha256::digest(s.as_bytes()));
    let listing = format!(
        "{}  SKILL.md\n{}  scripts/page.sh\n",
        sha("---\nname: pager\n---\nPage.\n"),
        sha("#!/bin/sh\n")
    );
    assert_eq!(sha256, sha(&listing));
    let commit = "1".repeat(40);
    let mut pins = SkillPins::new();
    pins.insert(
        "platform/skills/pager@v3".to_owned(),
        SkillPin {
            commit: Some(commit.clone()),
            sha256: sha256.clone(),
        },
    );
    let pinned = pinned_by(&pins);
    assert_ne!(pinned.digest(), unpinned.digest());
    let value = serde_json::to_value(&pinned).expect("value");
    assert_eq!(value["skills"][2]["kind"], "org");
    assert_eq!(value["skills"][2]["git_ref"], "v3");
    assert_eq!(value["skills"][2]["commit"], commit);
    assert_eq!(value["skills"][2]["sha256"], sha256);
    assert!(value["skills"][1].get("commit").is_none(), "not resolved");
    // A plain local directory has no commit: its entry has the content hash only, so it
    // reads differently from an unresolved skill (neither) and a GitHub one (both).
    pins.insert(
        "platform/skills/pager@v3".to_owned(),
        SkillPin {
            commit: None,
            sha256: sha256.clone(),
        },
    );
    let local = pinned_by(&pins);
    let value = serde_json::to_value(&local).expect("value");
    assert!(value["skills"][2].get("commit").is_none(), "no commit");
    assert_eq!(value["skills"][2]["sha256"], sha256);
    assert_ne!(local.digest(), pinned.digest());
    assert_ne!(local.digest(), unpinned.digest());
}

/// The packager's own skill (the manifest crate's fixture, verbatim) packages with its
/// `metadata` in its snapshot entry as the skill model keeps it; a skill without
/// `metadata` has no such key (the `snapshot_json` snapshot above did not move).
#[test]
fn seed_002_skill_keeps_its_metadata_in_the_snapshot() {
    use astrolift_manifest::{DirTree, ValidateOptions, validate_repository};
    let dir = std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../manifest/tests/fixtures/skill-seed-002"
    ));
    let tree = DirTree::open(dir, 1000).expect("fixture");
    let validation = validate_repository(&tree, &ValidateOptions::default());
    assert!(!validation.has_errors(), "{:#?}", validation.diagnostics);
    let [agent] = validation.agents.as_slice() else {
        panic!("one agent expected");
    };
    let packaged =
        astrolift_package::package_agent(agent, &tree, &Limits::DEFAULT, std::io::sink())
            .unwrap_or_else(|d| panic!("{d:#?}"));
    let value = serde_json::to_value(&packaged.snapshot).expect("value");
    let skill = &value["skills"][0];
    assert_eq!(skill["name"], "packager.default");
    let autonoetic = skill["metadata"]["autonoetic"].as_str().unwrap_or_default();
    let written: serde_json::Value = serde_json::from_str(autonoetic).expect("JSON text");
    assert_eq!(written["agent"]["id"], "packager.default");
    assert_eq!(written["llm_overrides"]["temperature"], 0.1);
    let plain = serde_json::to_value(snapshot_of_jira()).expect("value");
    assert!(plain["skills"][0].get("metadata").is_none(), "{plain}");
}

fn snapshot_of_jira() -> astrolift_package::snapshot::Snapshot {
    let tree = tree();
    let agent = agent();
    let slice = astrolift_package::slice(&agent, &tree, &Limits::DEFAULT).expect("slice");
    let output = write_archive(&slice, &tree, std::io::sink()).expect("archive");
    snapshot(&agent, &slice, &tree, &output).expect("snapshot")
}

/// An archive of the same content compressed otherwise (another level, or another
/// compressor version) is the same version; the tar stream under it is what
/// `content_digest` names (`gunzip -c | sha256sum`), and a changed file is a new version.
#[test]
fn the_version_covers_the_content_not_the_compression() {
    use std::io::{Read as _, Write as _};
    let tree = tree();
    let agent = agent();
    let slice = astrolift_package::slice(&agent, &tree, &Limits::DEFAULT).expect("slice");
    let mut archive = Vec::new();
    let output = write_archive(&slice, &tree, &mut archive).expect("archive");
    let mut tar = Vec::new();
    flate2::read::GzDecoder::new(archive.as_slice())
        .read_to_end(&mut tar)
        .expect("gunzip");
    let tar_digest = format!("sha256:{}", hex::encode(Sha256::digest(&tar)));
    assert_eq!(output.content_digest, tar_digest);

    let mut fast = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(1));
    fast.write_all(&tar).expect("gzip");
    let recompressed = fast.finish().expect("gzip");
    assert_ne!(recompressed, archive);
    let other = astrolift_package::PackageOutput {
        digest: format!("sha256:{}", hex::encode(Sha256::digest(&recompressed))),
        size: recompressed.len() as u64,
        ..output.clone()
    };
    let built = snapshot(&agent, &slice, &tree, &output).expect("snapshot");
    let again = snapshot(&agent, &slice, &tree, &other).expect("snapshot");
    assert_ne!(
        built.canonical_json(),
        again.canonical_json(),
        "each names its archive"
    );
    assert_eq!(built.digest(), again.digest());
    assert_ne!(built.legacy_digest(), again.legacy_digest());

    let mut changed_tree = tree.clone();
    changed_tree.insert("agents/t/brief/severity.md", "P1 > P2 > P3\n", false);
    let changed_slice =
        astrolift_package::slice(&agent, &changed_tree, &Limits::DEFAULT).expect("slice");
    let changed_output =
        write_archive(&changed_slice, &changed_tree, std::io::sink()).expect("archive");
    assert_ne!(changed_output.content_digest, output.content_digest);
    let changed =
        snapshot(&agent, &changed_slice, &changed_tree, &changed_output).expect("snapshot");
    assert_ne!(changed.digest(), built.digest());
}
