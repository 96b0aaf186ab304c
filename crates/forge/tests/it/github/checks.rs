//! Check runs: in progress, then completed with batched annotations.

use astrolift_fake_github::FakeCheckRun;
use astrolift_forge::github::{
    Annotation, AnnotationLevel, CheckRunOutput, Conclusion, MAX_OUTPUT_TEXT,
};

use super::{SHA, Setup, setup, with_run};

/// Warnings on columns 3 to 6 of lines 1..=count (what a diagnostic spanning
/// columns 3..7 becomes; crates/bot `annotations` makes them).
fn annotations(count: u32) -> Vec<Annotation> {
    (1..=count)
        .map(|line| Annotation {
            path: "agents/support/astrolift.toml".to_owned(),
            start_line: line,
            end_line: line,
            start_column: Some(3),
            end_column: Some(6),
            annotation_level: AnnotationLevel::Warning,
            title: "manifest/test-finding".to_owned(),
            message: format!("finding {line}"),
            raw_details: None,
        })
        .collect()
}

fn the_run(setup: &Setup) -> FakeCheckRun {
    let runs = setup.fake.check_runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    runs.into_iter().next().expect("one run")
}

#[tokio::test]
async fn a_run_is_created_in_progress_then_completed_with_120_annotations_in_3_batches() {
    let (setup, gh, repo, id) = with_run().await;
    let run = the_run(&setup);
    assert_eq!(
        (run.id, run.status.as_str(), run.name.as_str()),
        (id, "in_progress", "Astrolift")
    );
    assert_eq!(run.head_sha, SHA);

    let output = CheckRunOutput {
        title: "1 agent, 120 warnings".to_owned(),
        summary: "| agent | status |\n|---|---|\n| support | added |".to_owned(),
        text: Some("details".to_owned()),
        annotations: annotations(120),
        actions: Vec::new(),
    };
    let done = gh
        .complete(&repo, id, Conclusion::Neutral, output)
        .await
        .expect("completed");
    assert_eq!(
        (done.status.as_str(), done.conclusion.as_deref()),
        ("completed", Some("neutral"))
    );

    let patches = setup
        .fake
        .requests_to("PATCH", "/repos/octo/agents/check-runs/");
    let batch_sizes: Vec<usize> = patches
        .iter()
        .map(|r| {
            r.json()["output"]["annotations"]
                .as_array()
                .map_or(0, Vec::len)
        })
        .collect();
    assert_eq!(batch_sizes, [50, 50, 20]);
    assert!(
        patches[..2]
            .iter()
            .all(|r| r.json().get("conclusion").is_none())
    );
    assert_eq!(patches[2].json()["conclusion"], "neutral");

    let run = the_run(&setup);
    assert_eq!(
        (run.status.as_str(), run.conclusion.as_deref()),
        ("completed", Some("neutral"))
    );
    assert_eq!(run.annotations.len(), 120);
    assert_eq!(run.annotations[119]["start_line"], 120);
    assert_eq!(
        (
            run.annotations[0]["start_column"].as_u64(),
            run.annotations[0]["end_column"].as_u64()
        ),
        (Some(3), Some(6))
    );
    assert_eq!(run.annotations[0]["annotation_level"], "warning");
    assert_eq!(run.text.as_deref(), Some("details"));
    // 1 token request, 1 create, ⌈120/50⌉ = 3 updates.
    assert_eq!(setup.fake.requests().len(), 1 + 1 + 3);
}

#[tokio::test]
async fn a_70000_byte_summary_is_trimmed_with_a_note() {
    let (setup, gh, repo, id) = with_run().await;
    let output = CheckRunOutput {
        title: "t".repeat(300),
        summary: "ß".repeat(35_000),
        text: None,
        annotations: Vec::new(),
        actions: Vec::new(),
    };
    gh.complete(&repo, id, Conclusion::Success, output)
        .await
        .expect("accepted by the fake");
    let run = the_run(&setup);
    let summary = run.summary.expect("a summary");
    assert!(summary.len() <= MAX_OUTPUT_TEXT, "{}", summary.len());
    let kept = summary.split("\n\n…").next().map_or(0, str::len);
    assert!(
        summary.contains(&format!("{} bytes cut", 70_000 - kept)),
        "{}",
        &summary[kept..]
    );
    assert_eq!(run.title.map(|t| t.chars().count()), Some(255));
}

#[tokio::test]
async fn fail_run_completes_as_failure_with_the_explanation() {
    let (setup, gh, repo, id) = with_run().await;
    gh.fail_run(&repo, id, "S3 was unreachable: timed out after 3 attempts.")
        .await
        .expect("failed");
    let run = the_run(&setup);
    assert_eq!(
        (run.status.as_str(), run.conclusion.as_deref()),
        ("completed", Some("failure"))
    );
    assert!(
        run.summary
            .is_some_and(|s| s.contains("S3 was unreachable"))
    );
}

#[tokio::test]
async fn the_fake_refuses_bodies_github_would_refuse() {
    let setup = setup().await;
    let token = setup.installation().token().await.expect("token");
    let url = format!("{}/repos/octo/agents/check-runs", setup.fake.base_url());
    let too_many: Vec<serde_json::Value> = (1..=51)
        .map(|line| serde_json::json!({"path": "a", "start_line": line, "end_line": line, "annotation_level": "notice", "message": "m"}))
        .collect();
    let bodies = [
        serde_json::json!({"head_sha": SHA}),
        serde_json::json!({"name": "x", "head_sha": SHA, "status": "done"}),
        serde_json::json!({"name": "x", "head_sha": SHA, "output": {"title": "t"}}),
        serde_json::json!({"name": "x", "head_sha": SHA, "output": {"title": "t", "summary": "s", "annotations": too_many}}),
        serde_json::json!({"name": "x", "head_sha": SHA, "output": {"title": "t", "summary": "x".repeat(65_536)}}),
        serde_json::json!({"name": "x", "head_sha": SHA, "output": {"title": "t", "summary": "s", "annotations": [
            {"path": "a", "start_line": 1, "end_line": 2, "start_column": 1, "annotation_level": "notice", "message": "m"}]}}),
    ];
    let http = reqwest::Client::new();
    for body in bodies {
        let answer = http
            .post(&url)
            .bearer_auth(secrecy::ExposeSecret::expose_secret(&token))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .expect("answers");
        assert_eq!(answer.status().as_u16(), 422, "{body}");
        let error: serde_json::Value = answer.json_or_null().await;
        assert!(
            error["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("Invalid request.")),
            "{error}"
        );
        assert!(error["documentation_url"].is_string());
    }
    assert!(setup.fake.check_runs().is_empty());
}

trait JsonOrNull {
    async fn json_or_null(self) -> serde_json::Value;
}

impl JsonOrNull for reqwest::Response {
    async fn json_or_null(self) -> serde_json::Value {
        let bytes = self.bytes().await.unwrap_or_default();
        serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null)
    }
}
