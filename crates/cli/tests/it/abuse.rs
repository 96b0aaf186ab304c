//! Abuse cases through a real `astrolift serve`: oversized bodies,
//! slow-loris clients, replayed deliveries and deleted installations each get
//! a bounded answer, and serve keeps serving.

use std::time::{Duration, Instant};

use astrolift_manifest::Limits;
use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use crate::capacity::post_raw;
use crate::serve_process::{
    INSTALLATION, ServeProcess, ServeSetup, completed_runs, fake_github_with,
};

const SECRET: &str = "issue9-abuse-secret";
const SHA: &str = "9999999999999999999999999999999999999999";

fn setup() -> ServeSetup<'static> {
    ServeSetup {
        secret: SECRET,
        env: Vec::new(),
        register: false,
    }
}

/// A signed `ping` padded with JSON whitespace to exactly `size` bytes.
fn ping_of_size(size: usize) -> Vec<u8> {
    let mut body =
        serde_json::to_vec(&json!({ "zen": "Keep it bounded.", "hook_id": 1 })).expect("json");
    body.resize(size, b' ');
    body
}

#[tokio::test(flavor = "multi_thread")]
async fn a_webhook_of_25_mib_is_read_and_one_byte_more_is_413() {
    let github = fake_github_with(&[]).await;
    let server = ServeProcess::start(&github, setup());
    let limit = usize::try_from(Limits::DEFAULT.webhook_body).expect("fits");
    assert_eq!(limit, 25 * 1024 * 1024);

    let (status, body) = server
        .deliver("ping", "d-at-limit", ping_of_size(limit), SECRET)
        .await;
    assert_eq!(
        (status, body["status"].as_str()),
        (200, Some("pong")),
        "{body}"
    );

    // One byte more is refused from its Content-Length, before the body is
    // read: the answer comes while the client has only sent its headers.
    let started = Instant::now();
    let over = ping_of_size(limit + 1);
    let signature = astrolift_forge::webhook::sign(&over, SECRET);
    let address = server
        .url
        .trim_start_matches("http://")
        .parse()
        .expect("address");
    let answer = post_raw(address, "d-over-limit".into(), over.into(), signature).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(started.elapsed() < Duration::from_secs(30));
    assert_eq!(server.healthz().await, 200);
}

// Timing bounds are loose (about twice the configured 5 s and 10 s): the
// lower bound shows the limit is the configured one, the upper that it holds
// even on a loaded machine.

/// Writes `bytes` one per second until the server closes the connection;
/// returns what the server answered and when it closed.
async fn trickle(mut stream: TcpStream, bytes: Vec<u8>) -> (String, Duration) {
    let started = Instant::now();
    let (mut reader, mut writer) = stream.split();
    let mut answer = Vec::new();
    let write = async {
        for byte in bytes {
            if writer.write_all(&[byte]).await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        // Everything sent without the server closing: wait for it to.
        std::future::pending::<()>().await;
    };
    let read = async {
        let mut buffer = [0u8; 1024];
        while let Ok(n) = reader.read(&mut buffer).await {
            if n == 0 {
                break;
            }
            answer.extend_from_slice(&buffer[..n]);
        }
    };
    let bounded = tokio::time::timeout(Duration::from_secs(30), async {
        tokio::select! {
            () = write => {},
            () = read => {},
        }
    })
    .await;
    assert!(bounded.is_ok(), "the server never closed the connection");
    (
        String::from_utf8_lossy(&answer).into_owned(),
        started.elapsed(),
    )
}

/// The trickler was closed on (or answered 408) within `window`.
fn assert_cut_off(
    who: &str,
    (answer, after): (String, Duration),
    window: std::ops::Range<Duration>,
) {
    assert!(window.contains(&after), "{who} was cut off after {after:?}");
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 408"),
        "{who} got {answer}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn slow_loris_clients_are_cut_off_and_others_are_served_meanwhile() {
    let github = fake_github_with(&[]).await;
    let server = ServeProcess::start(&github, setup());
    let address = server.url.trim_start_matches("http://").to_owned();

    // Headers at one byte per second, never finished.
    let headers = format!(
        "POST /github/webhook HTTP/1.1\r\nHost: {address}\r\nx-github-event: ping\r\nx-padding: {}\r\n",
        "a".repeat(64)
    );
    let slow_headers = tokio::spawn(trickle(
        TcpStream::connect(&address).await.expect("connect"),
        headers.into_bytes(),
    ));

    // Complete headers, then a 1000-byte body at one byte per second.
    let mut stream = TcpStream::connect(&address).await.expect("connect");
    let head = format!(
        "POST /github/webhook HTTP/1.1\r\nHost: {address}\r\ncontent-type: application/json\r\nx-github-event: ping\r\ncontent-length: 1000\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.expect("headers");
    let slow_body = tokio::spawn(trickle(stream, vec![b' '; 1000]));

    // Meanwhile, ordinary requests are answered at once.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let started = Instant::now();
    assert_eq!(server.healthz().await, 200);
    let (status, body) = server
        .deliver("ping", "d-meanwhile", ping_of_size(64), SECRET)
        .await;
    assert_eq!((status, body["status"].as_str()), (200, Some("pong")));
    assert!(started.elapsed() < Duration::from_secs(5));

    let cut_off = slow_headers.await.expect("slow headers");
    assert_cut_off(
        "the header trickler",
        cut_off,
        Duration::from_secs(4)..Duration::from_secs(20),
    );
    let cut_off = slow_body.await.expect("slow body");
    assert_cut_off(
        "the body trickler",
        cut_off,
        Duration::from_secs(8)..Duration::from_secs(25),
    );
    assert_eq!(server.healthz().await, 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_replayed_delivery_is_a_duplicate_without_a_second_check_run() {
    let github = fake_github_with(&[("main", SHA)]).await;
    let server = ServeProcess::start(&github, setup());
    let (status, body) = server
        .push("d-replayed", ("main", SHA), INSTALLATION, SECRET)
        .await;
    assert_eq!((status, body["status"].as_str()), (202, Some("queued")));
    assert_eq!(completed_runs(&github, SHA, 1).await.len(), 1);

    for _ in 0..3 {
        let (status, body) = server
            .push("d-replayed", ("main", SHA), INSTALLATION, SECRET)
            .await;
        assert_eq!((status, body["status"].as_str()), (200, Some("duplicate")));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(github.check_runs().len(), 1, "no second check run");
    assert_eq!(
        github
            .requests_to("POST", "/repos/octo/agents/check-runs")
            .len(),
        1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_event_for_a_deleted_installation_fails_its_job_and_serve_goes_on() {
    const DELETED: u64 = 4040;
    let github = fake_github_with(&[("main", SHA)]).await;
    let server = ServeProcess::start(&github, setup());
    let token_path = format!("/app/installations/{DELETED}/access_tokens");

    let (status, _) = server
        .push("d-deleted-installation", ("main", SHA), DELETED, SECRET)
        .await;
    assert_eq!(status, 202, "verified and queued; the job finds out");
    let deadline = Instant::now() + Duration::from_secs(20);
    while github.requests_to("POST", &token_path).is_empty() {
        assert!(Instant::now() < deadline, "the job asked for a token");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(
        github.check_runs().is_empty(),
        "no check run without a token"
    );
    assert_eq!(
        github.requests_to("POST", &token_path).len(),
        1,
        "a 404 is not retried"
    );

    // Serve still serves: the same commit through a live installation is checked.
    assert_eq!(server.healthz().await, 200);
    let (status, _) = server
        .push("d-live-installation", ("main", SHA), INSTALLATION, SECRET)
        .await;
    assert_eq!(status, 202);
    assert_eq!(completed_runs(&github, SHA, 1).await.len(), 1);
}

/// SIGTERM (what a service manager sends) stops serve with status 0 and a log line that
/// says what it leaves: how many accepted jobs wait, on the state store, for the next start.
#[tokio::test(flavor = "multi_thread")]
async fn sigterm_stops_serve_and_says_what_it_leaves() {
    let github = fake_github_with(&[]).await;
    let mut server = ServeProcess::start(&github, setup());
    let (status, output) = server.terminate_and_wait();
    assert!(status.success(), "{status:?}: {output}");
    assert!(output.contains("SIGTERM"), "{output}");
    assert!(
        output.contains("stopped: 0 jobs wait for the next start"),
        "{output}"
    );
}
