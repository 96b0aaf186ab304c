//! Prompt texts read from a package archive: local skills by their packaged directory, and
//! catalogue and organization skills the sync resolved (their snapshot entry has a
//! `commit`) from `skills/<name>/` and `skills/<alias>/<path>/`, in the snapshot's order.

use astrolift_dispatch::content::prompt_texts_from_archive;
use astrolift_dispatch::env::SnapshotView;
use astrolift_manifest::Limits;
use serde_json::json;

fn skill_md(name: &str, tools: &str, body: &str) -> String {
    format!("---\nname: {name}\ndescription: {name}.\nallowed-tools: {tools}\n---\n{body}\n")
}

/// A package archive holding `files` (package-relative path, text).
fn archive(files: &[(&str, String)]) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut builder = tar::Builder::new(gz);
    for (path, text) in files {
        let mut header = tar::Header::new_ustar();
        header.set_size(text.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder
            .append_data(&mut header, path, text.as_bytes())
            .expect("appended");
    }
    builder
        .into_inner()
        .and_then(|gz| gz.finish())
        .expect("archived")
}

#[test]
fn resolved_remote_skills_join_the_prompts_in_snapshot_order() {
    let commit = "1".repeat(40);
    let archive = archive(&[
        (
            "skills/emr/SKILL.md",
            skill_md("emr", "emr-search", "Read the chart."),
        ),
        (
            "skills/pr-review/SKILL.md",
            skill_md("pr-review", "gh emr-search", "Review the diff."),
        ),
        (
            "skills/steadymd/runbooks/clinical-triage/SKILL.md",
            skill_md("clinical-triage", "pager", "Page on P1."),
        ),
        (
            "skills/steadymd/runbooks/unpinned/SKILL.md",
            skill_md("unpinned", "never", "Not resolved."),
        ),
    ]);
    let snapshot = SnapshotView::from_json(&json!({
        "name": "triage",
        "payload": {"digest": "sha256:00", "size": archive.len()},
        "skills": [
            {"kind": "org", "repo_alias": "steadymd", "path": "runbooks/clinical-triage",
             "git_ref": "main", "commit": commit, "sha256": "aa"},
            {"kind": "local", "local_name": "emr", "name": "emr", "dir": "agents/t/skills/emr",
             "sha256": "bb"},
            {"kind": "catalogue", "name": "pr-review", "version": "1.2.0", "commit": commit,
             "sha256": "cc"},
            {"kind": "org", "repo_alias": "steadymd", "path": "runbooks/unpinned",
             "git_ref": "main"},
        ],
    }))
    .expect("a snapshot");
    let texts = prompt_texts_from_archive(&archive, &snapshot, &Limits::DEFAULT).expect("read");
    let skills: Vec<(&str, &str)> = texts
        .skills
        .iter()
        .map(|s| (s.name.as_str(), s.instructions.trim()))
        .collect();
    assert_eq!(
        skills,
        [
            ("clinical-triage", "Page on P1."),
            ("emr", "Read the chart."),
            ("pr-review", "Review the diff."),
        ],
        "resolved skills in order; the unpinned one is a reference only"
    );
    let tools: Vec<&str> = texts.tools.iter().map(|t| t.slug.as_str()).collect();
    assert_eq!(tools, ["pager", "emr-search", "gh", "emr-search"]);
}
