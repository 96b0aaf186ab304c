//! Capacity cases through a real `astrolift serve`: one client
//! address cannot hold every connection, a flood of large bodies stays
//! within the body budget, and webhooks are answered while syncs run.
//!
//! Time bounds here are generous ("not starved", not a benchmark); the
//! figures are printed, not asserted.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use astrolift_fake_github::FakeGitHub;
use astrolift_forge::webhook::sign;
use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpSocket, TcpStream};

use crate::serve_process::{INSTALLATION, ServeProcess, ServeSetup, fake_github_with};

const SECRET: &str = "issue14-capacity-secret";

fn setup(env: Vec<(&'static str, &'static str)>) -> ServeSetup<'static> {
    ServeSetup {
        secret: SECRET,
        env,
        register: false,
    }
}

fn address_of(server: &ServeProcess) -> SocketAddr {
    server
        .url
        .trim_start_matches("http://")
        .parse()
        .expect("serve's address")
}

/// A signed ping padded with JSON whitespace to `size` bytes.
fn ping_of_size(size: usize) -> Vec<u8> {
    let mut body = serde_json::to_vec(&json!({ "zen": "Bounded.", "hook_id": 1 })).expect("json");
    body.resize(size, b' ');
    body
}

/// A connection from `from` (any 127.0.0.0/8 address is this host).
async fn connect_from(from: Ipv4Addr, to: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::new(IpAddr::V4(from), 0))?;
    socket.connect(to).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_thousand_slow_connections_from_one_address_do_not_starve_another() {
    let github = fake_github_with(&[]).await;
    let server = ServeProcess::start(&github, setup(Vec::new()));
    let address = address_of(&server);

    // 1,100 connections from 127.0.0.1 that start a request and never finish its headers.
    let head = b"POST /github/webhook HTTP/1.1\r\nHost: serve\r\nx-github-event: ping\r\n";
    let mut slow = Vec::new();
    for _ in 0..1100 {
        if let Ok(mut stream) = connect_from(Ipv4Addr::LOCALHOST, address).await {
            // A connection closed already may refuse the write: that is the point.
            let _ = stream.write_all(head).await;
            slow.push(stream);
        }
    }
    assert!(
        slow.len() > 1024,
        "the slow client got {} connections",
        slow.len()
    );

    // A signed ping from another address is answered at once.
    let client = reqwest::Client::builder()
        .local_address(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)))
        .build()
        .expect("client");
    let body = ping_of_size(64);
    let started = Instant::now();
    let response = client
        .post(format!("{}/github/webhook", server.url))
        .header("content-type", "application/json")
        .header("x-github-event", "ping")
        .header("x-github-delivery", "d-from-elsewhere")
        .header("x-hub-signature-256", sign(&body, SECRET))
        .body(body)
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .expect("serve answers the other address");
    let waited = started.elapsed();
    eprintln!("capacity: ping from 127.0.0.2 behind 1,100 slow connections answered in {waited:?}");
    assert_eq!(response.status().as_u16(), 200);
    assert!(waited < Duration::from_secs(2), "starved for {waited:?}");

    // Beyond the per-address cap (64 by default), serve closed the slow client's connections at once.
    let mut closed = 0;
    for stream in &mut slow {
        let mut byte = [0u8; 1];
        if let Ok(Ok(0) | Err(_)) =
            tokio::time::timeout(Duration::from_millis(1), stream.read(&mut byte)).await
        {
            closed += 1;
        }
    }
    assert!(
        closed >= slow.len() - 64,
        "{closed} of {} closed before their header timeout",
        slow.len()
    );
}

/// Peak resident memory of process `pid` (VmHWM), in bytes.
fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .expect("VmHWM");
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .expect("a number of kB");
    kib * 1024
}

/// One webhook of `body` over a raw connection: headers first; if serve
/// answers before the body is sent (over budget), that answer; else the body,
/// then the answer. Returns the status line and headers.
pub async fn post_raw(
    address: SocketAddr,
    delivery: String,
    body: bytes::Bytes,
    signature: String,
) -> String {
    let head = format!(
        "POST /github/webhook HTTP/1.1\r\nHost: serve\r\ncontent-type: application/json\r\n\
         x-github-event: ping\r\nx-github-delivery: {delivery}\r\nx-hub-signature-256: {}\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n",
        signature,
        body.len()
    );
    // Connected only now: the headers follow at once (serve allows 5 s).
    let mut stream = TcpStream::connect(address).await.expect("connect");
    stream.write_all(head.as_bytes()).await.expect("headers");
    let mut answer = Vec::new();
    let mut buffer = [0u8; 4096];
    let early = tokio::time::timeout(Duration::from_millis(500), stream.read(&mut buffer)).await;
    if let Ok(Ok(n)) = early {
        answer.extend_from_slice(&buffer[..n]);
        return String::from_utf8_lossy(&answer).into_owned();
    }
    stream.write_all(&body).await.expect("body");
    let _ = stream.read_to_end(&mut answer).await;
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_flood_of_25_mib_bodies_keeps_serve_within_its_body_budget() {
    const BUDGET: u64 = 64 * 1024 * 1024;
    // Headroom for the process itself (code, runtime, stores, hyper's buffers).
    const CONSTANT: u64 = 48 * 1024 * 1024;
    let github = fake_github_with(&[]).await;
    let mut server = ServeProcess::start(
        &github,
        setup(vec![("ASTROLIFT_SERVE_BODY_BUDGET", "67108864")]),
    );
    let address = address_of(&server);
    let before = peak_rss(server.pid());

    let body = bytes::Bytes::from(ping_of_size(25 * 1024 * 1024));
    let signature = sign(&body, SECRET);
    let flood: Vec<_> = (0..16)
        .map(|n| {
            let request = post_raw(
                address,
                format!("d-flood-{n}"),
                body.clone(),
                signature.clone(),
            );
            tokio::spawn(request)
        })
        .collect();
    let mut answers = Vec::new();
    for request in flood {
        answers.push(request.await.expect("client task"));
    }
    let peak = peak_rss(server.pid());
    eprintln!(
        "capacity: serve peak RSS {} MiB before, {} MiB after 16 concurrent 25 MiB bodies (budget 64 MiB)",
        before / (1024 * 1024),
        peak / (1024 * 1024)
    );
    let pong = answers
        .iter()
        .filter(|a| a.starts_with("HTTP/1.1 200"))
        .count();
    let busy: Vec<_> = answers
        .iter()
        .filter(|a| a.starts_with("HTTP/1.1 503"))
        .collect();
    if pong == 0 || busy.is_empty() {
        panic!("{answers:#?}\n{}", server.stop());
    }
    assert_eq!(pong + busy.len(), answers.len(), "{answers:#?}");
    assert!(
        busy.iter()
            .all(|a| a.to_ascii_lowercase().contains("retry-after: 5")),
        "{busy:#?}"
    );
    assert!(
        peak < BUDGET + CONSTANT,
        "peak RSS {peak} over the budget {BUDGET} + {CONSTANT}"
    );
    assert_eq!(server.healthz().await, 200);
}

/// A repository of `agents` agents, each with `megabytes` MiB of
/// incompressible brief: long to hash and gzip.
fn large_repository(agents: usize, megabytes: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    for n in 0..agents {
        let agent = dir.path().join(format!("agents/a{n}"));
        std::fs::create_dir_all(agent.join("brief")).expect("dirs");
        let manifest = format!(
            "astrolift_version = 1\nname = \"agent-{n}\"\nbrief = \"brief/README.md\"\n\n\
             [[workloads]]\nname = \"agent-{n}\"\nkind = \"agent\"\nrun_family = \"task\"\n\
             max_retries = 1\ntool_timeout_seconds = 600\nresult_ttl_hours = 24\n\n\
             [[workloads.containers]]\nname = \"agent\"\nis_primary = true\n\
             image_ref = \"ghcr.io/calliopeai/astrolift-agent-claude-code:latest\"\n"
        );
        std::fs::write(agent.join("astrolift.toml"), manifest).expect("manifest");
        std::fs::write(agent.join("brief/README.md"), "# Brief\n").expect("brief");
        // xorshift: noise that gzip cannot shrink, without a dependency.
        let mut noise = Vec::with_capacity(megabytes * 1024 * 1024);
        while noise.len() < megabytes * 1024 * 1024 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            noise.extend_from_slice(&seed.to_le_bytes());
        }
        std::fs::write(agent.join("brief/data.bin"), noise).expect("data");
    }
    dir
}

fn push_of(repository: &str, id: u64, sha: &str) -> Vec<u8> {
    let (owner, name) = repository.split_once('/').expect("owner/name");
    serde_json::to_vec(&json!({
        "ref": "refs/heads/main", "before": "0".repeat(40), "after": sha,
        "deleted": false, "forced": false, "created": false,
        "head_commit": { "id": sha, "timestamp": "2026-11-29T10:00:00Z", "message": "m" },
        "repository": { "id": id, "full_name": repository, "default_branch": "main",
                        "fork": false, "private": true, "name": name,
                        "owner": { "login": owner, "id": 1 } },
        "installation": { "id": INSTALLATION },
        "sender": { "login": "dev", "id": 5 },
    }))
    .expect("json")
}

/// Signed pings, one after another, while two check runs are in progress;
/// each one's wait.
async fn ping_while_syncing(url: &str, github: &FakeGitHub) -> Result<Vec<Duration>, String> {
    let client = reqwest::Client::new();
    let mut latencies = Vec::new();
    let mut n = 0;
    while runs_in_progress(github) == 2 && n < 200 {
        n += 1;
        let body = ping_of_size(64);
        let started = Instant::now();
        let answer = client
            .post(format!("{url}/github/webhook"))
            .header("x-github-event", "ping")
            .header("x-github-delivery", format!("d-ping-{n}"))
            .header("x-hub-signature-256", sign(&body, SECRET))
            .body(body)
            .send()
            .await;
        latencies.push(started.elapsed());
        match answer {
            Ok(response) if response.status() == 200 => {}
            other => return Err(format!("ping {n}: {other:?}")),
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(latencies)
}

fn runs_in_progress(github: &FakeGitHub) -> usize {
    github
        .check_runs()
        .iter()
        .filter(|r| r.status != "completed")
        .count()
}

#[tokio::test(flavor = "multi_thread")]
async fn webhooks_are_answered_promptly_while_two_large_syncs_run() {
    const SHA_A: &str = "1414141414141414141414141414141414141414";
    const SHA_B: &str = "2424242424242424242424242424242424242424";
    let github = fake_github_with(&[]).await;
    let repository = large_repository(8, 4);
    github.add_repo("octo", "big-a", "main", SHA_A, repository.path());
    github.add_repo("octo", "big-b", "main", SHA_B, repository.path());
    // The profile that ships when scripts/test.sh built it: answer times are
    // a property of the shipped build.
    let (mut server, profile) = ServeProcess::start_shipped(&github, setup(Vec::new()));

    for (delivery, repo, id, sha) in [
        ("d-big-a", "octo/big-a", 14_001, SHA_A),
        ("d-big-b", "octo/big-b", 14_002, SHA_B),
    ] {
        let (status, body) = server
            .deliver("push", delivery, push_of(repo, id, sha), SECRET)
            .await;
        assert_eq!(status, 202, "{body}");
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while runs_in_progress(&github) < 2 {
        assert!(Instant::now() < deadline, "both syncs started");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    // Pings while both syncs are running, from a thread of their own: the
    // fake GitHub builds its tarballs on this test's runtime and must not
    // delay the client.
    let url = server.url.clone();
    let github_ref = &github;
    let pinged = tokio::task::block_in_place(|| {
        std::thread::scope(|scope| {
            scope
                .spawn(move || {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .expect("runtime");
                    runtime.block_on(ping_while_syncing(&url, github_ref))
                })
                .join()
                .expect("ping thread")
        })
    });
    let mut latencies = match pinged {
        Ok(latencies) => latencies,
        Err(error) => panic!("{error}\n{}", server.stop()),
    };
    let still_running = runs_in_progress(&github) == 2;
    latencies.sort();
    let median = latencies
        .get(latencies.len() / 2)
        .copied()
        .unwrap_or_default();
    let worst = latencies.last().copied().unwrap_or_default();
    eprintln!(
        "capacity: {} pings during two large syncs ({profile} serve): median {median:?}, worst {worst:?}",
        latencies.len()
    );
    assert!(
        latencies.len() >= 5,
        "the syncs ran long enough to measure: {latencies:?}"
    );
    assert!(worst < Duration::from_secs(1), "a webhook waited {worst:?}");
    if !still_running {
        let runs = crate::serve_process::completed_runs(&github, SHA_A, 1).await;
        assert_eq!(runs.len(), 1);
    }
}
