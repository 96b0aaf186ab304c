//! Issue 27: what `serve`'s durable queue costs an accepted webhook, side by side with the
//! in-memory lanes it replaced (docs/operations.md, "Failed jobs on serve").
//!
//! Both modes run the same [`Ingress`] (verify, parse, the delivery's conditional insert on
//! a SQLite state store on disk) and differ only in the queue behind it:
//! - `memory`: the in-process lanes ([`LocalJobQueue`]) alone, as `serve` had them before;
//!   a job is lost if the process stops;
//! - `durable`: [`DurableJobQueue`] on the same store: each job recorded with its delivery
//!   in one transaction before the `202` (instead of the delivery's insert alone), then
//!   marked running and deleted once its attempt succeeds.
//!
//! Each job's attempt succeeds at once, so what is measured is the queue, not a sync.
//! `CONCURRENCY` tasks (default 8, as bench/load.sh's 8 connections) send fresh `push`
//! deliveries spread over [`REPOSITORIES`] repositories (so that no lane reaches its bound of
//! waiting jobs, which would answer `503` in either mode) for `SECONDS` (default 10) per
//! mode, rounds alternating
//! (`ROUNDS`, default 3); each round prints accepted webhooks per second, p50 and p99.
//! `MODE=memory` or `MODE=durable` runs that mode alone (to profile it).
//! HTTP is left out: it costs both modes the same, so the ratio here is the lower bound of
//! the ratio over HTTP (the same cost added to both brings them closer).
//!
//! `cargo bench -p astrolift-bot --bench durable_accept` (BENCHMARKS.md, issue 27). Under
//! `cargo test --benches` (no `--bench` argument) it runs one short round as a smoke test.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use astrolift_bot::durable::{Attempt, DurableJobQueue, DurableOptions};
use astrolift_bot::queue::{JobHandler, LocalJobQueue};
use astrolift_bot::{Ingress, JobQueue};
use astrolift_forge::webhook::{WebhookRequest, WebhookSecrets, sign};
use astrolift_manifest::Limits;
use astrolift_store::state::{SqliteStateStore, StateStore};
use support::{PAYLOAD, SECRET, headers};

/// Repositories the deliveries rotate over, each a lane of its own.
const REPOSITORIES: u64 = 64;

#[derive(Debug, Clone, Copy)]
enum Mode {
    Memory,
    Durable,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Memory => "memory",
            Mode::Durable => "durable",
        }
    }
}

/// One round's figures.
#[derive(Debug, Clone, Copy)]
struct Round {
    per_second: f64,
    p50: Duration,
    p99: Duration,
    /// Deliveries answered other than `202` (a lane over its bound is `503`).
    refused: usize,
}

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The push payload once per repository (its id and name changed), with its signature.
fn signed_bodies() -> Vec<(bytes::Bytes, String)> {
    let payload: serde_json::Value = serde_json::from_str(PAYLOAD).expect("payload");
    (0..REPOSITORIES)
        .map(|n| {
            let mut payload = payload.clone();
            payload["repository"]["id"] = (700_000 + n).into();
            payload["repository"]["full_name"] = format!("bench/repository-{n}").into();
            payload["repository"]["name"] = format!("repository-{n}").into();
            let body = serde_json::to_vec(&payload).expect("payload");
            let signature = sign(&body, SECRET);
            (bytes::Bytes::from(body), signature)
        })
        .collect()
}

async fn queue_for(mode: Mode, state: Arc<dyn StateStore>) -> Arc<dyn JobQueue> {
    match mode {
        Mode::Memory => {
            let handler: JobHandler = Arc::new(|_job| Box::pin(async {}));
            Arc::new(LocalJobQueue::new(handler))
        }
        Mode::Durable => {
            let attempt: Attempt = Arc::new(|_job| Box::pin(async { Ok(()) }));
            let (queue, _resumed) =
                DurableJobQueue::start(state, attempt, None, DurableOptions::serve(2))
                    .await
                    .expect("durable queue");
            queue
        }
    }
}

/// `concurrency` tasks sending fresh deliveries through `mode`'s queue for `length`.
async fn round(mode: Mode, concurrency: u64, length: Duration, run: u64) -> Round {
    let dir = tempfile::tempdir().expect("temp dir");
    let state: Arc<dyn StateStore> = Arc::new(
        SqliteStateStore::open(dir.path().join("state.db"))
            .await
            .expect("sqlite"),
    );
    let ingress = Arc::new(Ingress {
        state: state.clone(),
        secrets: WebhookSecrets::new(SECRET.into(), None).expect("secret"),
        jobs: queue_for(mode, state).await,
        triggers: None,
        limits: Limits::DEFAULT,
        function: "bench",
    });
    let bodies = Arc::new(signed_bodies());
    let next = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..concurrency {
        let (ingress, bodies, next) = (ingress.clone(), bodies.clone(), next.clone());
        tasks.push(tokio::spawn(async move {
            let (mut latencies, mut refused) = (Vec::new(), 0);
            while start.elapsed() < length {
                let n = next.fetch_add(1, Ordering::Relaxed);
                let (body, signature) = &bodies[(n % REPOSITORIES) as usize];
                let headers = headers(&format!("bench-{run}-{n}"), signature);
                let request = WebhookRequest {
                    headers: &headers,
                    body: body.clone(),
                    is_base64_encoded: false,
                };
                let sent = Instant::now();
                let answer = ingress.receive(request).await;
                latencies.push(sent.elapsed());
                refused += usize::from(answer.status != 202);
            }
            (latencies, refused)
        }));
    }
    let (mut latencies, mut refused) = (Vec::new(), 0);
    for task in tasks {
        let (sent, refusals) = task.await.expect("sender task");
        latencies.extend(sent);
        refused += refusals;
    }
    let elapsed = start.elapsed();
    latencies.sort();
    let at = |q: f64| {
        let index = (latencies.len().saturating_sub(1) as f64 * q) as usize;
        latencies.get(index).copied().unwrap_or_default()
    };
    Round {
        per_second: (latencies.len() - refused) as f64 / elapsed.as_secs_f64(),
        p50: at(0.50),
        p99: at(0.99),
        refused,
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or_default()
}

fn main() {
    let measuring = std::env::args().any(|a| a == "--bench");
    let (seconds, rounds) = if measuring {
        (setting("SECONDS", 10), setting("ROUNDS", 3))
    } else {
        (0, 1)
    };
    let length = if measuring {
        Duration::from_secs(seconds)
    } else {
        Duration::from_millis(200)
    };
    let concurrency = setting("CONCURRENCY", 8).max(1);
    let only = std::env::var("MODE").ok();
    let only = only.as_deref();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    println!("| mode | round | accepted/s | p50 ms | p99 ms | refused |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    let mut rates = [Vec::new(), Vec::new()];
    let mut p99s = [Vec::new(), Vec::new()];
    for run in 0..rounds {
        for (slot, mode) in [Mode::Memory, Mode::Durable].into_iter().enumerate() {
            if only.is_some_and(|only| only != mode.name()) {
                continue;
            }
            let figures = runtime.block_on(round(mode, concurrency, length, run));
            println!(
                "| {} | {} | {:.0} | {:.2} | {:.2} | {} |",
                mode.name(),
                run + 1,
                figures.per_second,
                figures.p50.as_secs_f64() * 1e3,
                figures.p99.as_secs_f64() * 1e3,
                figures.refused
            );
            rates[slot].push(figures.per_second);
            p99s[slot].push(figures.p99.as_secs_f64() * 1e3);
        }
    }
    let [memory, durable] = rates.map(median);
    let [memory_p99, durable_p99] = p99s.map(median);
    println!(
        "\nmedians, {concurrency} senders: memory {memory:.0}/s (p99 {memory_p99:.2} ms), \
         durable {durable:.0}/s (p99 {durable_p99:.2} ms); durable / memory = {:.2}",
        durable / memory
    );
}
