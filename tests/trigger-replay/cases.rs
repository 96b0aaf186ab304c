//! The trigger-replay scenario (docs/reference.md §9, "Trigger replay"; §10, "Kept
//! requests"), shared by the end-to-end tests of `astrolift serve`
//! (crates/cli tests/it/trigger_replay.rs) and of the sync function on moto
//! (functions/sync tests/it/trigger_replay.rs): each includes this file with `#[path]`.
//!
//! `main/` is the registered repository, `head/` a pull request's head (their manifests
//! say what changes). The requests posted to the registered bindings, oldest first, with
//! the answer each gets from the registered binding and what the head's binding does with
//! it:
//!
//! | Requests | Body | Registered | Head | Replayed as |
//! | --- | --- | --- | --- | --- |
//! | 1 (the oldest) | cancelled, refunded | filtered (204) | dispatched | (pushed out of the window) |
//! | 8 | paid | dispatched (202) | `amount` a string, `customer` renamed `buyer` | changed |
//! | 3 | a test order | dispatched | filtered | newly filtered |
//! | 4 | cancelled | filtered | filtered | unchanged |
//! | 1 | cancelled, refunded | filtered | dispatched | newly dispatched |
//! | 2 | paid, no customer | dispatched | the payload mapping fails | error |
//! | 2 | paid | dispatched | as above | changed |
//!
//! 21 accepted requests, of which a binding keeps the newest 20: 4 unchanged, 10 changed,
//! 3 newly filtered, 1 newly dispatched, 2 error. After them come three requests that are
//! not kept (a duplicate, `200`; a bad signature, `401`; a body over 256 KiB, `202`), each
//! of the error kind: had one been kept, it would push a changed request out of the window
//! and the counts would say so. `lean` (`keep_deliveries = 0`) and `steady` (the same at
//! the head) get two requests each. Every body carries [`SENTINEL`] in `note`, which no
//! registered mapping reads; the head's error text quotes it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use astrolift_fake_github::FakeCheckRun;
use serde_json::{Value, json};

/// The environment variable `secret://hooks/orders` is read from (the `env` resolver).
pub const SECRET_VARIABLE: &str = "ASTROLIFT_SECRET_HOOKS_ORDERS";
/// The bindings' HMAC secret.
pub const SECRET: &str = "trigger-replay-orders-secret";
/// In every body, in a field no registered mapping reads: never in a check run or a log.
pub const SENTINEL: &str = "sentinel-replay-4e1b";
/// The agent's manifest, repository-relative, in both versions.
pub const MANIFEST: &str = "agents/orders/astrolift.toml";
pub const AGENT: &str = "orders-agent";
/// The replayed counts of `orders`, worked out by hand (the module docs).
pub const COUNTS: &str = "20 kept requests replayed: 4 unchanged, 10 changed, 3 newly filtered, 1 newly dispatched, 2 error.";
/// The differences of a changed request (every changed body has a two-digit amount and a
/// three-letter customer), as a row of the check run shows them.
pub const CHANGED_CELL: &str = "`.amount` changed (number → string of 2); `.buyer` added (string of 3); `.customer` removed (string of 3)";
/// The sample whose expected file the head's binding does not meet.
pub const FAILING_SAMPLE: &str = "agents/orders/samples/test-order.expected.json";

/// `tests/trigger-replay` (both including crates sit two levels down).
pub fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/trigger-replay")
}

/// The registered repository.
pub fn main_repo() -> PathBuf {
    dir().join("main")
}

/// The pull request's head.
pub fn head_repo() -> PathBuf {
    dir().join("head")
}

/// The line of `name = "TRIGGER"` in the head's manifest (1-based).
pub fn head_name_line(trigger: &str) -> u64 {
    let path = head_repo().join(MANIFEST);
    let text = std::fs::read_to_string(&path).expect("the head's manifest");
    let wanted = format!("name = \"{trigger}\"");
    let index = text
        .lines()
        .position(|line| line.trim() == wanted)
        .unwrap_or_else(|| panic!("no {wanted} in {}", path.display()));
    index as u64 + 1
}

/// What a request to `orders` is, by what the two versions do with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Dispatched by both, with payloads that differ.
    Paid,
    /// Dispatched, then filtered out.
    Test,
    /// Filtered out by both.
    Cancelled,
    /// Filtered out, then dispatched.
    Refunded,
    /// Dispatched, then the payload mapping fails.
    NoCustomer,
}

impl Kind {
    /// The registered binding's answer.
    fn status(self) -> u16 {
        match self {
            Kind::Cancelled | Kind::Refunded => 204,
            Kind::Paid | Kind::Test | Kind::NoCustomer => 202,
        }
    }
}

/// The body of the `n`th request of `kind`, with `note` (the sentinel) and `extra` fields.
fn order(n: usize, kind: Kind, extra: Value) -> Vec<u8> {
    let mut order = json!({"id": format!("ORD-{n:03}"), "amount": 10 + n, "customer": "ann"});
    let fields = order.as_object_mut().expect("an object");
    match kind {
        Kind::Paid => fields.insert("status".into(), json!("paid")),
        Kind::Test => fields.insert("status".into(), json!("test")),
        Kind::Cancelled => fields.insert("status".into(), json!("cancelled")),
        Kind::Refunded => {
            fields.insert("refund".into(), json!(true));
            fields.insert("status".into(), json!("cancelled"))
        }
        Kind::NoCustomer => {
            fields.remove("customer");
            fields.insert("status".into(), json!("paid"))
        }
    };
    let mut body = json!({"order": order, "note": format!("order note {SENTINEL}")});
    if let (Some(body), Value::Object(extra)) = (body.as_object_mut(), extra) {
        body.extend(extra);
    }
    serde_json::to_vec(&body).expect("JSON")
}

/// One request of the scenario.
#[derive(Debug, Clone)]
pub struct Post {
    /// The binding's name.
    pub trigger: &'static str,
    pub body: Vec<u8>,
    /// The `X-Signature` header.
    pub signature: String,
    /// The answer it must get.
    pub status: u16,
}

fn post(trigger: &'static str, body: Vec<u8>, status: u16) -> Post {
    let signature = astrolift_forge::webhook::sign(&body, SECRET);
    Post {
        trigger,
        body,
        signature,
        status,
    }
}

/// Every request, in the order they are sent (the module docs).
pub fn posts() -> Vec<Post> {
    use Kind::{Cancelled, NoCustomer, Paid, Refunded, Test};
    let mut kinds = vec![Refunded];
    kinds.extend([Paid; 8]);
    kinds.extend([Test; 3]);
    kinds.extend([Cancelled; 4]);
    kinds.extend([Refunded, NoCustomer, NoCustomer, Paid, Paid]);
    assert_eq!(kinds.len(), 21);
    let mut posts: Vec<Post> = kinds
        .iter()
        .enumerate()
        .map(|(n, kind)| post("orders", order(n, *kind, json!({})), kind.status()))
        .collect();
    // Not kept: the same body again (a duplicate), a bad signature, a body over 256 KiB
    // (under the 1 MiB trigger limit), each of the error kind.
    let duplicate = posts[17].body.clone();
    posts.push(post("orders", duplicate, 200));
    let mut forged = post("orders", order(30, NoCustomer, json!({})), 401);
    forged.signature = format!("sha256={}", "0".repeat(64));
    posts.push(forged);
    let padding = format!("{SENTINEL} {}", "x".repeat(300 * 1024));
    let big = order(31, NoCustomer, json!({"padding": padding}));
    assert!(big.len() > 256 * 1024 && big.len() < 1024 * 1024);
    posts.push(post("orders", big, 202));
    for n in [40, 41] {
        posts.push(post("lean", order(n, Paid, json!({})), 202));
        posts.push(post("steady", order(n, Paid, json!({})), 202));
    }
    posts
}

/// The registered bindings' ids by name, from `triggers list --format json`'s rows (or
/// any rows with `name`, `agent` and `trigger_id`), the scenario's agent only.
pub fn trigger_ids(rows: &[Value]) -> BTreeMap<String, String> {
    let ids: BTreeMap<String, String> = rows
        .iter()
        .filter(|row| row["agent"] == AGENT)
        .map(|row| {
            let name = row["name"].as_str().expect("a name").to_owned();
            let id = row["trigger_id"].as_str().expect("an id").to_owned();
            (name, id)
        })
        .collect();
    let names: Vec<&str> = ids.keys().map(String::as_str).collect();
    assert_eq!(names, ["lean", "orders", "steady"], "{rows:#?}");
    ids
}

/// Everything `run` shows: title, summary, text and annotations.
pub fn shown(run: &FakeCheckRun) -> String {
    let annotations = serde_json::to_string(&run.annotations).expect("JSON");
    [
        run.title.clone().unwrap_or_default(),
        run.summary.clone().unwrap_or_default(),
        run.text.clone().unwrap_or_default(),
        annotations,
    ]
    .join("\n")
}

/// The pull request's check run: the **Trigger replay** section with the hand-computed
/// counts of `orders`, its rows (newest first, ten shown), `lean` without kept requests,
/// `steady` absent; the warning on `orders`'s `name` line; the failing sample; no
/// value, no error text and no sentinel anywhere.
pub fn assert_replayed(run: &FakeCheckRun, ids: &BTreeMap<String, String>) {
    let shown = shown(run);
    assert!(!shown.contains(SENTINEL), "{shown}");
    assert!(!shown.contains("no customer"), "an error's text: {shown}");
    assert!(!shown.contains("ORD-"), "a value: {shown}");
    assert!(!shown.contains("Payloads"), "payloads: {shown}");
    // A failing sample is an error: the conclusion is the diagnostics', not the replay's.
    assert_eq!(run.conclusion.as_deref(), Some("failure"), "{shown}");
    let summary = run.summary.clone().unwrap_or_default();
    let (_, section) = summary
        .split_once("### Trigger replay\n")
        .unwrap_or_else(|| panic!("no Trigger replay section: {summary}"));
    let section = section.split("\n### ").next().unwrap_or_default();
    let orders = format!(
        "**`orders`** in `{MANIFEST}` (`{}`): {COUNTS}",
        ids["orders"]
    );
    assert!(section.contains(&orders), "{orders}\n{section}");
    let lean = format!(
        "**`lean`** in `{MANIFEST}` (`{}`): no kept requests (none accepted in the last 7 days, or `keep_deliveries = 0`).",
        ids["lean"]
    );
    assert!(section.contains(&lean), "{lean}\n{section}");
    assert!(
        !section.contains("`steady`") && !section.contains(&ids["steady"]),
        "an unchanged binding is not replayed: {section}"
    );
    // The 16 requests that are not unchanged, newest first: 2 changed, 2 errors, 1 newly
    // dispatched, 3 newly filtered, then 8 changed, of which the first 2 are shown.
    let rows: Vec<&str> = section
        .lines()
        .filter(|line| line.starts_with("| ") && !line.starts_with("| Received"))
        .collect();
    let classes: Vec<(&str, &str)> = rows
        .iter()
        .map(|row| {
            let cells: Vec<&str> = row.split(" | ").collect();
            (cells[1], cells[2])
        })
        .collect();
    let dispatched_then = |now| ("dispatched", now);
    let mut expected = vec![dispatched_then("changed"); 2];
    expected.extend([dispatched_then("error"); 2]);
    expected.push(("filtered", "newly dispatched"));
    expected.extend([dispatched_then("newly filtered"); 3]);
    expected.extend([dispatched_then("changed"); 2]);
    assert_eq!(classes, expected, "{section}");
    for row in &rows {
        match row.split(" | ").nth(2) {
            Some("changed") => assert!(row.ends_with(&format!("| {CHANGED_CELL} |")), "{row}"),
            Some("error") => assert!(row.ends_with("| `the payload mapping failed` |"), "{row}"),
            _ => assert!(row.ends_with("|  |"), "{row}"),
        }
    }
    let more = format!(
        "… and 6 more changed requests (`astrolift triggers replay {}` lists them all).",
        ids["orders"]
    );
    assert!(section.contains(&more), "{section}");

    // One warning, on `orders`'s `name` line; the failing sample on its expected file.
    let warnings: Vec<&Value> = run
        .annotations
        .iter()
        .filter(|a| {
            a["title"]
                .as_str()
                .is_some_and(|t| t.starts_with("trigger replay"))
        })
        .collect();
    assert_eq!(warnings.len(), 1, "{:#?}", run.annotations);
    let warning = warnings[0];
    let line = head_name_line("orders");
    assert_eq!(warning["title"], "trigger replay: orders", "{warning}");
    assert_eq!(warning["path"], MANIFEST, "{warning}");
    assert_eq!(warning["annotation_level"], "warning", "{warning}");
    assert_eq!(
        (warning["start_line"].as_u64(), warning["end_line"].as_u64()),
        (Some(line), Some(line)),
        "{warning}"
    );
    let message = warning["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("This change drops 5 of the last ")
            && message.contains(": 3 newly filtered out, 2 now failing."),
        "{message}"
    );
    assert!(
        message.contains("See the Trigger replay section"),
        "{message}"
    );
    let samples: Vec<&Value> = run
        .annotations
        .iter()
        .filter(|a| a["path"].as_str().is_some_and(|p| p.contains("/samples/")))
        .collect();
    assert_eq!(samples.len(), 1, "{:#?}", run.annotations);
    assert_eq!(samples[0]["path"], FAILING_SAMPLE, "{}", samples[0]);
    assert_eq!(samples[0]["annotation_level"], "failure", "{}", samples[0]);
    assert_eq!(
        samples[0]["title"], "trigger/sample-mismatch",
        "{}",
        samples[0]
    );
}

/// The warning's count of the requests that dispatched: of the 20 replayed, 15 were
/// dispatched (10 changed, 3 newly filtered, 2 errors) and 5 filtered out, so the head
/// drops 5 of 15. Checked last by both tests, after everything else.
pub fn assert_warning_counts_dispatched(run: &FakeCheckRun) {
    let message = run
        .annotations
        .iter()
        .find(|a| a["title"] == "trigger replay: orders")
        .and_then(|a| a["message"].as_str())
        .unwrap_or_default();
    assert!(
        message.starts_with("This change drops 5 of the last 15 requests that dispatched: "),
        "the warning counts the replayed requests, not those that dispatched: {message}"
    );
}
