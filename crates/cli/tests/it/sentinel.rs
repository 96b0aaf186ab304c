//! Secrets: the serve end-to-end flow (a push that registers, a
//! pull request, bad signatures, trigger calls) with sentinel secret values,
//! debug JSON logs on. No sentinel, no installation token and no line of the
//! App private key may appear in serve's output, in any request it sent to
//! GitHub (check-run bodies included), in its answers, or in stored state.

use astrolift_fake_github::FakeGitHub;
use astrolift_forge::webhook::sign;
use serde_json::{Value, json};

use crate::serve_process::{
    INSTALLATION, ServeProcess, ServeSetup, completed_runs, fake_github_with,
};

const WEBHOOK_SECRET: &str = "SENTINEL-webhook-1f6e0c2b9d";
const PREVIOUS_SECRET: &str = "SENTINEL-previous-8a41d7e3c5";
const TRIGGER_SECRET: &str = "SENTINEL-trigger-5b93f0aa71";
const MAIN_SHA: &str = "5555555555555555555555555555555555555555";
const BRANCH_SHA: &str = "6666666666666666666666666666666666666666";
/// The agents' own secrets (examples/monorepo: `secret://agents/anthropic`, `secret://agents/jira`).
const ANTHROPIC_SECRET: &str = "SENTINEL-anthropic-3c7d91e04b";
const JIRA_SECRET: &str = "SENTINEL-jira-e25a6f8d10";
/// Every secret serve is given besides `GITHUB_WEBHOOK_SECRET`, as the variables that carry
/// it: the test looks for exactly these values, so it never looks for one it did not set.
const CONFIGURED: &[(&str, &str)] = &[
    ("GITHUB_WEBHOOK_SECRET_PREVIOUS", PREVIOUS_SECRET),
    ("ASTROLIFT_SECRET_AGENTS_JIRA_HOOK", TRIGGER_SECRET),
    ("ASTROLIFT_SECRET_AGENTS_ANTHROPIC", ANTHROPIC_SECRET),
    ("ASTROLIFT_SECRET_AGENTS_JIRA", JIRA_SECRET),
];
/// The fake issues installation tokens as `ghs_fake<serial>`.
const TOKEN_PREFIX: &str = "ghs_fake";

fn pull_request(sha: &str) -> Vec<u8> {
    let repository = json!({ "id": 4001, "full_name": "octo/agents", "default_branch": "main",
                             "fork": false, "private": true, "name": "agents",
                             "owner": { "login": "octo", "id": 1 } });
    let body = json!({
        "action": "opened", "number": 3,
        "pull_request": {
            "number": 3, "draft": false,
            "head": { "sha": sha, "ref": "feature", "repo": repository },
            "base": { "sha": MAIN_SHA, "ref": "main", "repo": repository },
        },
        "repository": repository,
        "installation": { "id": INSTALLATION },
    });
    serde_json::to_vec(&body).expect("json")
}

/// Every value that must never leave serve: the webhook secret and the configured
/// sentinels, the token prefix, and each base64 line of the App private key.
fn secrets(github: &FakeGitHub) -> Vec<String> {
    let mut secrets: Vec<String> = [WEBHOOK_SECRET, TOKEN_PREFIX].map(str::to_owned).to_vec();
    secrets.extend(CONFIGURED.iter().map(|(_, value)| (*value).to_owned()));
    secrets.extend(
        github
            .private_key_pem()
            .lines()
            .filter(|line| !line.starts_with("-----") && line.len() >= 32)
            .map(str::to_owned),
    );
    secrets
}

/// Names each secret found in `text`, with `place`.
fn leaks(place: &str, text: &[u8], secrets: &[String]) -> Vec<String> {
    let text = String::from_utf8_lossy(text);
    secrets
        .iter()
        .filter(|secret| text.contains(secret.as_str()))
        .map(|secret| format!("{place} contains `{secret}`"))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn no_secret_reaches_logs_github_answers_or_stored_state() {
    let github = fake_github_with(&[("main", MAIN_SHA), ("feature", BRANCH_SHA)]).await;
    let mut server = ServeProcess::start(
        &github,
        ServeSetup {
            secret: WEBHOOK_SECRET,
            env: CONFIGURED
                .iter()
                .copied()
                .chain([
                    ("ASTROLIFT_LOG_LEVEL", "debug"),
                    ("ASTROLIFT_LOG_FORMAT", "json"),
                ])
                .collect(),
            register: true,
        },
    );
    let mut answers = Vec::new();

    // A push on the registered ref: registers and packages examples/monorepo.
    let answer = server
        .push("s-main", ("main", MAIN_SHA), INSTALLATION, WEBHOOK_SECRET)
        .await;
    assert_eq!(answer.0, 202, "{answer:?}");
    answers.push(answer);
    let runs = completed_runs(&github, MAIN_SHA, 1).await;
    assert_eq!(runs[0].conclusion.as_deref(), Some("success"), "{runs:#?}");

    // A pull request, signed with the previous secret (rotation).
    let answer = server
        .deliver(
            "pull_request",
            "s-pr",
            pull_request(BRANCH_SHA),
            PREVIOUS_SECRET,
        )
        .await;
    assert_eq!(answer.0, 202, "{answer:?}");
    answers.push(answer);
    completed_runs(&github, BRANCH_SHA, 1).await;

    // Bad signatures: a wrong secret, and one that is a sentinel with a typo.
    for (delivery, secret) in [
        ("s-bad", "not-the-secret"),
        ("s-near", "SENTINEL-webhook-1f6e0c2b9"),
    ] {
        let answer = server
            .push(delivery, ("main", MAIN_SHA), INSTALLATION, secret)
            .await;
        assert_eq!(answer.0, 401, "{answer:?}");
        answers.push(answer);
    }

    // The registered generic trigger (examples/monorepo, `secret://agents/jira-hook`):
    // one call signed with the trigger secret, one with a bad signature.
    let run = server.cli(&["triggers", "list", "--format", "json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let bindings: Value = serde_json::from_str(&run.stdout).expect("json");
    let path = bindings
        .as_array()
        .and_then(|b| b.iter().find(|t| t["name"] == "jira-high-priority"))
        .and_then(|t| t["path"].as_str())
        .expect("the generic trigger is registered")
        .to_owned();
    let high =
        br#"{"issue":{"key":"OPS-1","fields":{"priority":{"name":"High"},"summary":"Down"}}}"#;
    let mut trigger_answers = String::new();
    for (signature, expected) in [
        (sign(high, TRIGGER_SECRET), 202),
        (sign(high, "wrong"), 401),
    ] {
        let response = reqwest::Client::new()
            .post(format!("{}{path}", server.url))
            .header("x-signature", signature)
            .header("idempotency-key", "k-sentinel")
            .body(high.to_vec())
            .send()
            .await
            .expect("serve answers");
        assert_eq!(response.status().as_u16(), expected);
        trigger_answers.push_str(&response.text().await.unwrap_or_default());
    }

    let output = server.stop();
    assert!(
        output.contains("\"level\""),
        "debug JSON logs were captured: {output}"
    );

    let secrets = secrets(&github);
    let mut found = leaks("serve's stdout and stderr", output.as_bytes(), &secrets);
    found.extend(leaks(
        "the trigger answers",
        trigger_answers.as_bytes(),
        &secrets,
    ));
    for (status, body) in &answers {
        found.extend(leaks(
            &format!("a {status} answer"),
            body.to_string().as_bytes(),
            &secrets,
        ));
    }
    for request in github.requests() {
        let place = format!("{} {}", request.method, request.path);
        found.extend(leaks(&place, &request.body, &secrets));
        found.extend(leaks(
            &place,
            request.query.unwrap_or_default().as_bytes(),
            &secrets,
        ));
        for (name, value) in &request.headers {
            found.extend(leaks(
                &format!("{place} header {name}"),
                value.as_bytes(),
                &secrets,
            ));
        }
    }
    for run in github.check_runs() {
        found.extend(leaks(
            "a check run",
            format!("{run:?}").as_bytes(),
            &secrets,
        ));
    }
    let stored = server.stored_files();
    assert!(
        stored.iter().any(|(path, _)| path.ends_with("state.db")),
        "the state file was read"
    );
    assert!(stored.len() > 2, "packages were stored as blobs");
    for (path, bytes) in &stored {
        found.extend(leaks(&path.display().to_string(), bytes, &secrets));
    }
    assert!(found.is_empty(), "{found:#?}");
}
