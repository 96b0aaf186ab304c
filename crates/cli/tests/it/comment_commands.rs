//! Previews and pull-request comment commands end to end through a real `astrolift serve`
//! (docs/reference.md §17): a pull request's head previewed while the registered agents stay
//! as they were, the check run's **Previews** section, each command with its `eyes`
//! reaction and reply, each refusal, a redelivered comment dispatching once, bots ignored,
//! the env-spec rule on the comment and the CLI, the closing teardown, a fork's approval and
//! the 21st pull request.

use std::time::{Duration, Instant};

use astrolift_fake_github::{FakeGitHub, FakePullRequest};
use astrolift_store::StateStore;
use astrolift_store::state::{Preview, PreviewStatus, SqliteStateStore, preview_name};
use serde_json::{Value, json};

use crate::serve_process::{
    INSTALLATION, ServeProcess, ServeSetup, completed_runs, example, fake_github_with,
};
use crate::support::Run;

const SECRET: &str = "comment-commands-secret";
const PROJECT: &str = "proj-issue9";
const REPO_ID: u64 = 4001;
const MAIN_SHA: &str = "a111111111111111111111111111111111111111";
const HEAD_SHA: &str = "a222222222222222222222222222222222222222";
const NEXT_SHA: &str = "a333333333333333333333333333333333333333";
const FORK_SHA: &str = "a444444444444444444444444444444444444444";
const CALLBACK_BASE: &str = "https://astrolift.example.com";
const CONTROLLER: &str = "https://controller.example.com";

fn repository() -> Value {
    json!({ "id": REPO_ID, "full_name": "octo/agents", "default_branch": "main",
            "fork": false, "private": true, "name": "agents",
            "owner": { "login": "octo", "id": 1 } })
}

/// A fake GitHub with `octo/agents` at main and the pull-request heads, two collaborators
/// (`writer` with write, `reader` with read).
async fn github() -> FakeGitHub {
    let github = fake_github_with(&[
        ("main", MAIN_SHA),
        ("feature", HEAD_SHA),
        ("feature", NEXT_SHA),
    ])
    .await;
    github.add_repo(
        "octo",
        "agents",
        "fork-branch",
        FORK_SHA,
        example("monorepo"),
    );
    github.set_repo_id("octo", "agents", REPO_ID);
    github.add_collaborator("octo", "agents", "writer", "write");
    github.add_collaborator("octo", "agents", "reader", "read");
    github
}

/// Serve with the monorepo registered on main with previews, an env spec for previews
/// (`triage-preview`) beside the production one, and main pushed.
async fn serve(github: &FakeGitHub) -> ServeProcess {
    let server = ServeProcess::start(
        github,
        ServeSetup {
            secret: SECRET,
            env: vec![("ASTROLIFT_CALLBACK_BASE_URL", CALLBACK_BASE)],
            register: true,
        },
    );
    let on = server.cli(&[
        "register-repo",
        "octo/agents",
        "--project-id",
        PROJECT,
        "--ref",
        "main",
        "--previews",
    ]);
    assert_eq!(on.code, 0, "{}", on.stderr);
    let spec = server.cli(&[
        "env-spec",
        "upsert",
        "triage-preview",
        "--agent-type",
        "claude",
        "--runtime",
        "claude-code",
        "--project-id",
        PROJECT,
        "--previews",
    ]);
    assert_eq!(spec.code, 0, "{}", spec.stderr);
    let (status, body) = server
        .push("cc-main", ("main", MAIN_SHA), INSTALLATION, SECRET)
        .await;
    assert_eq!(status, 202, "{body}");
    let runs = completed_runs(github, MAIN_SHA, 1).await;
    assert_eq!(runs[0].conclusion.as_deref(), Some("success"), "{runs:#?}");
    server
}

fn pull_request_event(action: &str, number: u64, head: (&str, &str), fork: bool) -> Vec<u8> {
    let (git_ref, sha) = head;
    let head_repo = if fork {
        json!({ "id": 9999, "full_name": "mallory/agents", "fork": true })
    } else {
        repository()
    };
    let body = json!({
        "action": action, "number": number,
        "pull_request": {
            "number": number, "draft": false, "state": "open",
            "merged": action == "closed",
            "head": { "sha": sha, "ref": git_ref, "repo": head_repo },
            "base": { "sha": MAIN_SHA, "ref": "main", "repo": repository() },
        },
        "repository": repository(),
        "installation": { "id": INSTALLATION },
        "sender": { "login": "writer", "id": 6, "type": "User" },
    });
    serde_json::to_vec(&body).expect("json")
}

fn comment_event(number: u64, comment_id: u64, login: &str, kind: &str, body: &str) -> Vec<u8> {
    let user = json!({ "login": login, "id": 6, "type": kind });
    let event = json!({
        "action": "created",
        "comment": { "id": comment_id, "body": body, "user": user },
        "issue": { "number": number, "state": "open",
                   "pull_request": { "url": format!("https://api.github.com/repos/octo/agents/pulls/{number}") } },
        "repository": repository(),
        "installation": { "id": INSTALLATION },
        "sender": user,
    });
    serde_json::to_vec(&event).expect("json")
}

/// Opens (or moves) pull request `number` on the fake and delivers its event.
async fn open_pull_request(
    github: &FakeGitHub,
    server: &ServeProcess,
    action: &str,
    number: u64,
    head: (&str, &str),
) {
    github.set_pull_request(
        "octo",
        "agents",
        number,
        FakePullRequest::open(head.0, head.1, "main"),
    );
    let delivery = format!("cc-pr-{number}-{action}-{}", head.1);
    let body = pull_request_event(action, number, head, false);
    let (status, answer) = server
        .deliver("pull_request", &delivery, body, SECRET)
        .await;
    assert_eq!(status, 202, "{answer}");
}

async fn comment(
    server: &ServeProcess,
    delivery: &str,
    (number, comment_id): (u64, u64),
    login: &str,
    body: &str,
) -> (u16, Value) {
    let event = comment_event(number, comment_id, login, "User", body);
    server
        .deliver("issue_comment", delivery, event, SECRET)
        .await
}

/// The newest Previews section of the completed runs on `sha`.
async fn previews_section(github: &FakeGitHub, sha: &str) -> String {
    let runs = completed_runs(github, sha, 1).await;
    let summary = runs
        .last()
        .and_then(|run| run.summary.clone())
        .unwrap_or_default();
    summary
        .split_once("### Previews")
        .map(|(_, section)| section.to_owned())
        .unwrap_or_default()
}

fn json_of(run: &Run) -> Value {
    assert_eq!(run.code, 0, "{}", run.stderr);
    serde_json::from_str(&run.stdout).expect("JSON")
}

fn previews(server: &ServeProcess) -> Vec<Value> {
    let list = server.cli(&["agents", "list", "--previews", "--format", "json"]);
    json_of(&list).as_array().cloned().unwrap_or_default()
}

fn dispatches(server: &ServeProcess) -> Vec<Value> {
    let list = server.cli(&["dispatch", "list", "--format", "json"]);
    json_of(&list).as_array().cloned().unwrap_or_default()
}

/// Waits for `done` to hold, or fails with what `what` says.
async fn until<T>(what: &str, mut done: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(value) = done() {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The App's reply to comment `comment_id`, once posted.
async fn reply_to(github: &FakeGitHub, comment_id: u64) -> String {
    let marker = format!("<!-- astrolift:reply-to-comment {comment_id} -->");
    until(&format!("the reply to comment {comment_id}"), || {
        github
            .comments()
            .into_iter()
            .find(|c| c.body.contains(&marker))
            .map(|c| c.body)
    })
    .await
}

async fn reacted(github: &FakeGitHub, comment_id: u64) {
    until(&format!("the eyes on comment {comment_id}"), || {
        github
            .reactions()
            .into_iter()
            .find(|r| r.comment_id == comment_id && r.content == "eyes")
    })
    .await;
}

/// `astrolift dispatch ARGS` on serve's stores, without a dispatch queue.
fn cli_dispatch(server: &ServeProcess, args: &[&str]) -> Run {
    let mut all = vec!["dispatch"];
    all.extend_from_slice(args);
    server.cli(&all)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pull_request_previews_its_agents_and_runs_them_from_comments() {
    let github = github().await;
    let server = serve(&github).await;
    let registered = server.cli(&["agents", "list", "--format", "json"]);
    let registered = json_of(&registered);

    // Opened: each valid agent previewed at the head; the registered agents untouched.
    open_pull_request(&github, &server, "opened", 7, ("feature", HEAD_SHA)).await;
    let section = previews_section(&github, HEAD_SHA).await;
    assert!(section.contains("`emr-triage-pr7`"), "{section}");
    assert!(
        section.contains("`/astrolift dispatch emr-triage`"),
        "{section}"
    );
    assert!(
        section.contains("`astrolift dispatch emr-triage-pr7 --input '{}'`"),
        "{section}"
    );
    let listed = previews(&server);
    let triage = listed
        .iter()
        .find(|p| p["name"] == "emr-triage-pr7")
        .expect("the triage preview");
    assert_eq!(triage["preview"]["head_sha"], HEAD_SHA);
    assert_eq!(triage["preview"]["pull_request"], 7);
    let after = server.cli(&["agents", "list", "--format", "json"]);
    assert_eq!(json_of(&after), registered, "no registered agent changed");
    let triggers = server.cli(&["triggers", "list", "--format", "json"]);
    let names: Vec<Value> = json_of(&triggers)
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|t| t["name"].clone())
        .collect();
    assert!(
        names.iter().all(|n| !n.to_string().contains("pr7")),
        "no trigger minted for a preview: {names:?}"
    );

    // Synchronize: the preview moves to the new head.
    github.set_pull_request_head("octo", "agents", 7, NEXT_SHA);
    open_pull_request(&github, &server, "synchronize", 7, ("feature", NEXT_SHA)).await;
    previews_section(&github, NEXT_SHA).await;
    let moved = previews(&server);
    let triage = moved
        .iter()
        .find(|p| p["name"] == "emr-triage-pr7")
        .expect("moved");
    assert_eq!(triage["preview"]["head_sha"], NEXT_SHA);

    dispatch_from_a_comment(&github, &server).await;
    refusals_and_answers(&github, &server).await;
    the_cli_holds_previews_to_the_env_spec_rule(&server);

    // `recheck`: a new check run on the head.
    let before = github.check_runs().len();
    let (status, _) = comment(
        &server,
        "cc-recheck",
        (7, 620),
        "writer",
        "/astrolift recheck",
    )
    .await;
    assert_eq!(status, 202);
    until("the recheck's run", || {
        let runs = github.check_runs();
        (runs.len() > before && runs.iter().all(|r| r.status == "completed")).then_some(())
    })
    .await;

    // Closed: the previews are torn down; a command on the closed pull request says so.
    github.close_pull_request("octo", "agents", 7, false);
    let closed = pull_request_event("closed", 7, ("feature", NEXT_SHA), false);
    let (status, body) = server
        .deliver("pull_request", "cc-closed", closed, SECRET)
        .await;
    assert_eq!(status, 202, "{body}");
    until("the teardown", || {
        previews(&server).is_empty().then_some(())
    })
    .await;
    let (status, _) = comment(
        &server,
        "cc-late",
        (7, 630),
        "writer",
        "/astrolift dispatch emr-triage",
    )
    .await;
    assert_eq!(status, 202);
    let reply = reply_to(&github, 630).await;
    assert!(reply.contains("Pull request #7 is closed"), "{reply}");
}

/// A writer's `/astrolift dispatch`: `eyes` at once, one dispatch of the preview however
/// often the comment is delivered, and one reply with the result when its task ends.
async fn dispatch_from_a_comment(github: &FakeGitHub, server: &ServeProcess) {
    let body = "Trying it:\n/astrolift dispatch emr-triage --input '{\"ticket\": \"$(rm -rf /)\"}'";
    let (status, answer) = comment(server, "cc-dispatch", (7, 601), "writer", body).await;
    assert_eq!(
        (status, &answer["status"]),
        (202, &json!("queued")),
        "{answer}"
    );
    reacted(github, 601).await;
    let dispatched = until("the comment's dispatch", || {
        dispatches(server)
            .into_iter()
            .find(|d| d["source"] == "comment:601")
    })
    .await;
    assert_eq!(dispatched["agent"], "emr-triage-pr7");
    assert_eq!(dispatched["sender"], "writer");
    // A second delivery of the same comment (another delivery id) dispatches nothing new.
    let (status, _) = comment(server, "cc-dispatch-again", (7, 601), "writer", body).await;
    assert_eq!(status, 202);
    let replies_before = github.comments().len();
    until("the second delivery's job", || {
        let asked = github.requests_to("GET", "/repos/octo/agents/collaborators/writer");
        (asked.len() >= 2).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let same: Vec<Value> = dispatches(server)
        .into_iter()
        .filter(|d| d["source"] == "comment:601")
        .collect();
    assert_eq!(same.len(), 1, "{same:#?}");
    assert_eq!(
        github.comments().len(),
        replies_before,
        "a dispatch says nothing yet"
    );

    let dispatch_id = dispatched["dispatch_id"]
        .as_str()
        .expect("an id")
        .to_owned();
    let show = server.cli(&["dispatch", "show", &dispatch_id, "--format", "json"]);
    let shown = json_of(&show);
    assert!(
        shown.to_string().contains("$(rm -rf /)"),
        "the input is data: {shown}"
    );
    end_the_task(server, &dispatch_id).await;
    let reply = until("the result's reply", || {
        github
            .comments()
            .into_iter()
            .find(|c| c.body.contains(&dispatch_id) && c.body.contains("succeeded"))
            .map(|c| c.body)
    })
    .await;
    assert!(reply.contains("```json"), "{reply}");
    assert!(reply.contains("\"labels\""), "{reply}");
}

/// Reports the dispatch's task `succeeded` through serve's callback route.
async fn end_the_task(server: &ServeProcess, dispatch_id: &str) {
    let mut render = std::process::Command::new(env!("CARGO_BIN_EXE_astrolift"));
    render
        .args(["render", dispatch_id, "--format", "json"])
        .arg(format!("--state={}", server.state_url()))
        .arg(format!("--blobs={}", server.blobs_url()))
        .env("ASTROLIFT_CONTROLLER_URL", CONTROLLER)
        .env_remove("ASTROLIFT_DISPATCH_QUEUE_URL");
    let rendered = crate::support::run_of(render.output().expect("render runs"));
    let rendered = json_of(&rendered);
    let env = &rendered["environment"];
    let task_id = env["ASTROLIFT_TASK_ID"].as_str().expect("a task id");
    let key = env["ASTROLIFT_CLUSTER_KEY"].as_str().expect("a key");
    let bearer = format!("Bearer {key}");
    let headers = [
        ("authorization", bearer.as_str()),
        ("content-type", "application/json"),
    ];
    let done = json!({"status": "succeeded", "result": {"labels": ["p1"]}});
    let (status, body) = server
        .post(
            &format!("/callbacks/{task_id}"),
            &headers,
            done.to_string().into_bytes(),
        )
        .await;
    assert_eq!(status, 200, "{body}");
}

/// Each refusal and answer is one reply that says why, and dispatches nothing.
async fn refusals_and_answers(github: &FakeGitHub, server: &ServeProcess) {
    let before = dispatches(server).len();
    let cases: &[(u64, &str, &str, &str)] = &[
        (
            602,
            "reader",
            "/astrolift dispatch emr-triage",
            "`write`, `maintain` or `admin`",
        ),
        (
            603,
            "writer",
            "/astrolift dispatch emr-triage --env-spec triage-prod",
            "preview/env-spec-not-for-previews",
        ),
        (
            604,
            "writer",
            "/astrolift dispatch emr-triage --input '[1]'",
            "must be a JSON object",
        ),
        (605, "writer", "/astrolift help", "/astrolift recheck"),
        (
            606,
            "reader",
            "/astrolift frobnicate `<b>@team</b>`",
            "There is no command",
        ),
        (
            607,
            "writer",
            "/astrolift dispatch nosuch",
            "has no preview on this pull request",
        ),
        (
            608,
            "writer",
            "/astrolift dispatch emr-triage --input '{\"a\": 1'",
            "not text that is not JSON",
        ),
    ];
    for (id, login, body, expected) in cases {
        let (status, answer) = comment(server, &format!("cc-{id}"), (7, *id), login, body).await;
        assert_eq!(status, 202, "{answer}");
        let reply = reply_to(github, *id).await;
        assert!(reply.contains(expected), "{body}: {reply}");
    }
    let unknown = reply_to(github, 606).await;
    assert!(
        unknown.contains("**`` /astrolift frobnicate `<b>@team</b>` ``**"),
        "comment text is shown in a code span, never as Markdown: {unknown}"
    );
    let replies: Vec<_> = github
        .comments()
        .into_iter()
        .filter(|c| c.body.contains("astrolift:reply-to-comment 602"))
        .collect();
    assert_eq!(replies.len(), 1, "one reply per refusal");
    assert_eq!(dispatches(server).len(), before, "no refusal dispatched");

    // A bot's comment, and an edited one, are ignored: no job, no reaction.
    let bot = comment_event(
        7,
        609,
        "other-app[bot]",
        "Bot",
        "/astrolift dispatch emr-triage",
    );
    let (status, answer) = server.deliver("issue_comment", "cc-bot", bot, SECRET).await;
    assert_eq!(
        (status, &answer["status"]),
        (200, &json!("ignored")),
        "{answer}"
    );
    let mut edited: Value =
        serde_json::from_slice(&comment_event(7, 610, "writer", "User", "/astrolift help"))
            .expect("json");
    edited["action"] = json!("edited");
    let edited = serde_json::to_vec(&edited).expect("json");
    let (status, _) = server
        .deliver("issue_comment", "cc-edit", edited, SECRET)
        .await;
    assert_eq!(status, 200);
    // Ten thousand command lines cost five commands and one reply.
    let many = "/astrolift help\n".repeat(4_000);
    let (status, _) = comment(server, "cc-many", (7, 611), "writer", &many).await;
    assert_eq!(status, 202);
    let reply = reply_to(github, 611).await;
    assert!(reply.contains("Only the first 5 command lines"), "{reply}");
    assert_eq!(
        reply.matches("**Astrolift commands**").count(),
        5,
        "{reply}"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    let ignored = [609, 610];
    assert!(
        github
            .reactions()
            .iter()
            .all(|r| !ignored.contains(&r.comment_id)),
        "no reaction to an ignored comment"
    );
}

/// `astrolift dispatch` of a preview takes only an env spec marked for previews.
fn the_cli_holds_previews_to_the_env_spec_rule(server: &ServeProcess) {
    let refused = cli_dispatch(
        server,
        &[
            "emr-triage-pr7",
            "--env-spec",
            "triage-prod",
            "--input",
            "{}",
        ],
    );
    assert_ne!(refused.code, 0, "{}", refused.stdout);
    assert!(
        refused.stderr.contains("preview/env-spec-not-for-previews")
            && refused.stderr.contains("--previews"),
        "{}",
        refused.stderr
    );
    let allowed = cli_dispatch(
        server,
        &[
            "emr-triage-pr7",
            "--env-spec",
            "triage-preview",
            "--input",
            "{}",
        ],
    );
    let out = json_of(&allowed);
    assert_eq!(
        (&out["agent"], &out["preview"]),
        (&json!("emr-triage-pr7"), &json!(true))
    );
    let bare = cli_dispatch(server, &["emr-triage-pr7", "--input", "{}"]);
    assert!(
        json_of(&bare)["env_spec"].is_null(),
        "no env spec without --env-spec"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fork_is_previewed_only_when_a_writer_approves_and_the_21st_pull_request_waits() {
    let github = github().await;
    let server = serve(&github).await;

    // A fork's pull request: checked, never previewed.
    github.set_pull_request(
        "octo",
        "agents",
        9,
        FakePullRequest::open("fork-branch", FORK_SHA, "main").from_fork(9999, "mallory/agents"),
    );
    let opened = pull_request_event("opened", 9, ("fork-branch", FORK_SHA), true);
    let (status, _) = server
        .deliver("pull_request", "cc-fork", opened, SECRET)
        .await;
    assert_eq!(status, 202);
    completed_runs(&github, FORK_SHA, 1).await;
    assert!(
        previews(&server).is_empty(),
        "no preview of a fork unapproved"
    );

    // A reader's approval is refused; a writer's previews that head.
    let (status, _) = comment(
        &server,
        "cc-fork-reader",
        (9, 701),
        "reader",
        "/astrolift preview",
    )
    .await;
    assert_eq!(status, 202);
    let reply = reply_to(&github, 701).await;
    assert!(reply.contains("`write`, `maintain` or `admin`"), "{reply}");
    let (status, _) = comment(
        &server,
        "cc-fork-writer",
        (9, 702),
        "writer",
        "/astrolift preview",
    )
    .await;
    assert_eq!(status, 202);
    let approved = until("the approved preview", || {
        previews(&server)
            .into_iter()
            .find(|p| p["name"] == "emr-triage-pr9")
    })
    .await;
    assert_eq!(approved["preview"]["head_sha"], FORK_SHA);
    let state = SqliteStateStore::open(server.home.path().join("state.db"))
        .await
        .expect("state");
    let stored = state
        .previews()
        .list_previews("octo/agents")
        .await
        .expect("list");
    assert!(
        stored
            .iter()
            .filter(|p| p.pull_request == 9)
            .all(|p| p.fork_approved_by.as_deref() == Some("writer")),
        "{stored:#?}"
    );

    // Twenty pull requests with previews: the 21st gets none, and its check run says why.
    for number in 100..119 {
        state
            .previews()
            .put_preview(&seeded(number))
            .await
            .expect("seeded");
    }
    open_pull_request(&github, &server, "opened", 21, ("feature", HEAD_SHA)).await;
    let section = previews_section(&github, HEAD_SHA).await;
    assert!(
        section.contains("already has previews for 20 pull requests"),
        "{section}"
    );
    assert!(
        !previews(&server)
            .iter()
            .any(|p| p["preview"]["pull_request"] == 21),
        "the 21st has none"
    );
}

/// An active preview of pull request `number`, as a sync would have recorded it.
fn seeded(number: u64) -> Preview {
    Preview {
        repository: "octo/agents".into(),
        manifest_path: "agents/seeded/astrolift.toml".into(),
        pull_request: number,
        project_id: PROJECT.into(),
        agent: "seeded".into(),
        name: preview_name("seeded", number),
        head_sha: "b".repeat(40),
        snapshot_hash: "c".repeat(64),
        payload_digest: "d".repeat(64),
        layer_key: None,
        status: PreviewStatus::Active,
        fork_approved_by: None,
        pushed_at: 1_900_000_000,
        updated_at: 1_900_000_000,
        version: 1,
    }
}
