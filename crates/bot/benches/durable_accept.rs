//! What `serve`'s durable queue costs an accepted webhook, side by side with the in-memory
//! lanes it is built on (docs/operations.md, "Failed jobs on serve").
//!
//! Both modes run the same [`Ingress`] (verify, parse, the delivery's conditional insert on
//! a SQLite state store on disk) and differ only in the queue behind it:
//! - `memory`: the in-process lanes ([`LocalJobQueue`]) alone; a job is lost if the
//!   process stops;
//! - `durable`: [`DurableJobQueue`] on the same store: each job recorded with its delivery
//!   in one transaction before the `202` (instead of the delivery's insert alone), then
//!   marked running and deleted once its attempt succeeds.
//!
//! Each job's attempt succeeds at once, so what is measured is the queue, not a sync; at
//! most [`SYNCS`] run at once in either mode (`serve`'s default `--syncs`, a semaphore
//! around the in-memory lanes' handler). With `ATTEMPT=runner`, each job
//! does what `serve`'s runner does to the store around a sync that writes nothing else: in
//! memory, `SyncRunner::run` marks the delivery `running`, then `succeeded`; the durable
//! queue writes those marks with its own job writes (`SyncRunner::perform_unmarked` marks
//! nothing). With `ATTEMPT=outcome`, the in-memory lanes record the delivery's outcome as
//! cheaply as they could: `running` before the slot is taken, `succeeded` once it is let go
//! (every runtime records it; the durable queue writes both with its job). By
//! default (`ATTEMPT=none`) an attempt does nothing: the queue's cost alone, with the
//! delivery's marks in the durable queue's writes and none in memory.
//! `CONCURRENCY` tasks (default 8, as bench/load.sh's 8 connections) send fresh `push`
//! deliveries spread over [`REPOSITORIES`] repositories (so that no lane reaches its bound of
//! waiting jobs, which would answer `503` in either mode) for `SECONDS` (default 10) per
//! mode, rounds alternating
//! (`ROUNDS`, default 3); each round prints accepted webhooks per second, p50 and p99, and
//! the process's CPU time per accepted job (its jobs run to the end before the next round).
//! `MODE=memory` or `MODE=durable` runs that mode alone (to profile it).
//! HTTP is left out by default: it costs both modes the same, so the ratio in process is
//! the lower bound of the ratio over HTTP (the same cost added to both brings them closer).
//! With `HTTP=1` the deliveries come over loopback HTTP/1.1 instead, to `serve`'s webhook
//! route (`routes::webhook`, axum on hyper), from `wrk` (`CONCURRENCY` keep-alive
//! connections, one thread; a Lua script rotates the repositories' signed bodies and numbers
//! the delivery ids; Debian's package `wrk`): the figures are `wrk`'s (its report goes to
//! stderr), and the CPU per job is the bench process's own (the server's; `wrk` is a process
//! of its own). `serve`'s log lines are left out in both modes. `PAUSE_MS` makes each
//! connection wait that long after each answer (an offered rate rather than a closed loop).
//! The state store is a SQLite file in `TMPDIR`.
//!
//! `cargo bench -p astrolift-bot --bench durable_accept`. Under
//! `cargo test --benches` (no `--bench` argument) it runs one short round as a smoke test.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use astrolift_bot::durable::{Attempt, DurableJobQueue, DurableOptions};
use astrolift_bot::queue::{JobHandler, LocalJobQueue};
use astrolift_bot::routes::{self, WholeBody};
use astrolift_bot::{Ingress, JobQueue, SyncJob};
use astrolift_forge::webhook::{WebhookRequest, WebhookSecrets, sign};
use astrolift_manifest::Limits;
use astrolift_store::state::{DeliveryState, SqliteStateStore, StateStore};
use support::{PAYLOAD, SECRET, headers};

/// Repositories the deliveries rotate over, each a lane of its own.
const REPOSITORIES: u64 = 64;

/// Attempts running at once, in either mode (`serve --syncs`' default).
const SYNCS: usize = 2;

/// How long a round waits for the jobs it accepted to be run.
const DRAIN_LIMIT: Duration = Duration::from_secs(60);

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
    /// The process's CPU time (user + system) per accepted job, from the first delivery
    /// to the last accepted job's attempt done.
    cpu_per_job: Duration,
}

/// The process's CPU time so far (user + system), from `/proc/self/stat` (clock ticks,
/// 100 a second here: rounds of seconds make the tick a fraction of a per cent).
fn process_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command's closing parenthesis; utime and stime are the 14th and
    // 15th of the line, the 12th and 13th after it.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
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

/// What each job's attempt does (`ATTEMPT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Work {
    /// Nothing: the queue's own cost.
    None,
    /// The runner's marks of the job's delivery, `running` then `succeeded`, in the sync slot.
    Runner,
    /// The delivery's outcome recorded as cheaply as in-memory lanes could: `running` before
    /// the sync slot is taken and `succeeded` after it is let go, so that no slot waits for
    /// a mark's commit (the durable queue writes the same marks with its job's writes).
    Outcome,
}

impl Work {
    fn from_env() -> Self {
        match std::env::var("ATTEMPT").as_deref() {
            Ok("runner") => Work::Runner,
            Ok("outcome") => Work::Outcome,
            _ => Work::None,
        }
    }

    /// The marks an in-memory attempt writes before it takes its sync slot.
    fn before_slot(self) -> &'static [DeliveryState] {
        match self {
            Work::Outcome => &[DeliveryState::Running],
            Work::None | Work::Runner => &[],
        }
    }

    /// The marks an in-memory attempt writes in its sync slot.
    fn in_slot(self) -> &'static [DeliveryState] {
        match self {
            Work::Runner => &[DeliveryState::Running, DeliveryState::Succeeded],
            Work::None | Work::Outcome => &[],
        }
    }

    /// The marks an in-memory attempt writes once its slot is let go.
    fn after_slot(self) -> &'static [DeliveryState] {
        match self {
            Work::Outcome => &[DeliveryState::Succeeded],
            Work::None | Work::Runner => &[],
        }
    }

    async fn marks(states: &[DeliveryState], state: &dyn StateStore, job: &SyncJob) {
        for &mark in states {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64);
            state
                .mark_delivery(&job.delivery_id, mark, now)
                .await
                .expect("delivery marked");
        }
    }
}

/// `mode`'s queue, whose attempts do `work` and count themselves in `done`.
async fn queue_for(
    mode: Mode,
    work: Work,
    state: Arc<dyn StateStore>,
    done: Arc<AtomicU64>,
) -> Arc<dyn JobQueue> {
    match mode {
        Mode::Memory => {
            let syncs = Arc::new(tokio::sync::Semaphore::new(SYNCS));
            let handler: JobHandler = Arc::new(move |job| {
                let (state, done, syncs) = (state.clone(), done.clone(), syncs.clone());
                Box::pin(async move {
                    Work::marks(work.before_slot(), state.as_ref(), &job).await;
                    let slot = syncs.acquire().await.ok();
                    Work::marks(work.in_slot(), state.as_ref(), &job).await;
                    drop(slot);
                    Work::marks(work.after_slot(), state.as_ref(), &job).await;
                    done.fetch_add(1, Ordering::Relaxed);
                })
            });
            Arc::new(LocalJobQueue::new(handler))
        }
        Mode::Durable => {
            // The queue marks the delivery itself: the attempt is the runner's unmarked run.
            let attempt: Attempt = Arc::new(move |_job| {
                done.fetch_add(1, Ordering::Relaxed);
                Box::pin(async { Ok(()) })
            });
            let (queue, _resumed) =
                DurableJobQueue::start(state, attempt, None, DurableOptions::serve(SYNCS))
                    .await
                    .expect("durable queue");
            queue
        }
    }
}

/// `concurrency` tasks sending fresh deliveries through `mode`'s queue for `length`.
async fn round(mode: Mode, work: Work, concurrency: u64, length: Duration, run: u64) -> Round {
    let dir = tempfile::tempdir().expect("temp dir");
    let state: Arc<dyn StateStore> = Arc::new(
        SqliteStateStore::open(dir.path().join("state.db"))
            .await
            .expect("sqlite"),
    );
    let done = Arc::new(AtomicU64::new(0));
    let ingress = Arc::new(Ingress {
        state: state.clone(),
        secrets: WebhookSecrets::new(SECRET.into(), None).expect("secret"),
        jobs: queue_for(mode, work, state, done.clone()).await,
        triggers: None,
        limits: Limits::DEFAULT,
        function: "bench",
    });
    let cpu_at_start = process_cpu();
    let sent = if std::env::var("HTTP").is_ok_and(|v| v == "1") {
        over_http(ingress, concurrency, length, run, dir.path()).await
    } else {
        in_process(ingress, concurrency, length, run).await
    };
    // The jobs accepted are all run before the next round starts, and their CPU counted.
    let waiting_since = Instant::now();
    while done.load(Ordering::Relaxed) < sent.accepted && waiting_since.elapsed() < DRAIN_LIMIT {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let cpu_per_job = (process_cpu() - cpu_at_start) / sent.accepted.max(1) as u32;
    Round {
        per_second: sent.accepted as f64 / sent.elapsed.as_secs_f64(),
        p50: sent.p50,
        p99: sent.p99,
        refused: sent.refused,
        cpu_per_job,
    }
}

/// What the senders of one round saw.
struct Sent {
    accepted: u64,
    refused: usize,
    elapsed: Duration,
    p50: Duration,
    p99: Duration,
}

/// `concurrency` tasks of this process calling `ingress` directly for `length`.
async fn in_process(ingress: Arc<Ingress>, concurrency: u64, length: Duration, run: u64) -> Sent {
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
    Sent {
        accepted: (latencies.len() - refused) as u64,
        refused,
        elapsed,
        p50: at(0.50),
        p99: at(0.99),
    }
}

/// `wrk` sending over `concurrency` connections for `length` to `serve`'s webhook route,
/// served here on a loopback port.
async fn over_http(
    ingress: Arc<Ingress>,
    concurrency: u64,
    length: Duration,
    run: u64,
    dir: &std::path::Path,
) -> Sent {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("loopback port");
    let address = listener.local_addr().expect("address");
    let server = tokio::spawn(async move {
        axum::serve(listener, routes::webhook(ingress, WholeBody))
            .await
            .expect("served");
    });
    let script = dir.join("deliveries.lua");
    std::fs::write(&script, wrk_script(run)).expect("wrk script");
    let command = format!(
        "wrk -t1 -c{concurrency} -d{}s --latency -s {} http://{address}/github/webhook",
        length.as_secs().max(1),
        script.display()
    );
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new("sh")
            .args(["-c", &command])
            .output()
            .expect("wrk runs (Debian's package wrk)")
    })
    .await
    .expect("wrk");
    server.abort();
    let report = String::from_utf8_lossy(&output.stdout);
    eprintln!("{report}");
    read_wrk(&report).unwrap_or_else(|| panic!("cannot read wrk's report:\n{report}"))
}

/// A `wrk` script that posts the signed push of each repository in turn, each with a
/// delivery id of its own.
fn wrk_script(run: u64) -> String {
    let mut script = String::from("local bodies, signatures = {}, {}\n");
    for (body, signature) in signed_bodies() {
        let body = String::from_utf8(body.to_vec()).expect("JSON is UTF-8");
        script.push_str(&format!(
            "bodies[#bodies + 1] = [==[{body}]==]\nsignatures[#signatures + 1] = \"{signature}\"\n"
        ));
    }
    script.push_str(&format!(
        "local n = 0\n\
         request = function()\n\
           n = n + 1\n\
           local i = n % #bodies + 1\n\
           return wrk.format(\"POST\", nil, {{\n\
             [\"Content-Type\"] = \"application/json\",\n\
             [\"X-GitHub-Event\"] = \"push\",\n\
             [\"X-GitHub-Delivery\"] = \"bench-http-{run}-\" .. n,\n\
             [\"X-Hub-Signature-256\"] = signatures[i],\n\
           }}, bodies[i])\n\
         end\n"
    ));
    // An offered rate instead of a closed loop: each connection waits this long after an
    // answer before its next request.
    if let Some(pause) = std::env::var("PAUSE_MS").ok().filter(|v| !v.is_empty()) {
        script.push_str(&format!("delay = function() return {pause} end\n"));
    }
    script
}

/// The figures of `wrk --latency`'s report: requests, the time, non-2xx answers, p50, p99.
fn read_wrk(report: &str) -> Option<Sent> {
    let mut requests = None;
    let mut elapsed = None;
    let (mut refused, mut p50, mut p99) = (0, None, None);
    for line in report.lines().map(str::trim) {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            [count, "requests", "in", time, ..] => {
                requests = count.parse::<u64>().ok();
                elapsed = wrk_duration(time.trim_end_matches(','));
            }
            ["Non-2xx", "or", "3xx", "responses:", count] => refused = count.parse().ok()?,
            ["50%", time] => p50 = wrk_duration(time),
            ["99%", time] => p99 = wrk_duration(time),
            _ => {}
        }
    }
    let requests = requests?;
    Some(Sent {
        accepted: requests.saturating_sub(refused as u64),
        refused,
        elapsed: elapsed?,
        p50: p50?,
        p99: p99?,
    })
}

/// A duration as `wrk` prints it: `635.91us`, `1.13ms`, `10.00s`, `1.02m`.
fn wrk_duration(text: &str) -> Option<Duration> {
    let split = text.find(|c: char| c.is_ascii_alphabetic())?;
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let seconds = match unit {
        "us" => number / 1e6,
        "ms" => number / 1e3,
        "s" => number,
        "m" => number * 60.0,
        _ => return None,
    };
    Some(Duration::from_secs_f64(seconds))
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
    let work = Work::from_env();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    println!("| mode | round | accepted/s | p50 ms | p99 ms | refused | CPU µs per job |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    let mut rates = [Vec::new(), Vec::new()];
    let mut p99s = [Vec::new(), Vec::new()];
    let mut cpus = [Vec::new(), Vec::new()];
    for run in 0..rounds {
        for (slot, mode) in [Mode::Memory, Mode::Durable].into_iter().enumerate() {
            if only.is_some_and(|only| only != mode.name()) {
                continue;
            }
            let figures = runtime.block_on(round(mode, work, concurrency, length, run));
            println!(
                "| {} | {} | {:.0} | {:.2} | {:.2} | {} | {:.1} |",
                mode.name(),
                run + 1,
                figures.per_second,
                figures.p50.as_secs_f64() * 1e3,
                figures.p99.as_secs_f64() * 1e3,
                figures.refused,
                figures.cpu_per_job.as_secs_f64() * 1e6
            );
            rates[slot].push(figures.per_second);
            p99s[slot].push(figures.p99.as_secs_f64() * 1e3);
            cpus[slot].push(figures.cpu_per_job.as_secs_f64() * 1e6);
        }
    }
    let [memory, durable] = rates.map(median);
    let [memory_p99, durable_p99] = p99s.map(median);
    let [memory_cpu, durable_cpu] = cpus.map(median);
    println!(
        "\nmedians, {concurrency} senders, attempts {work:?}: memory {memory:.0}/s (p99 \
         {memory_p99:.2} ms, {memory_cpu:.1} µs CPU per job), durable {durable:.0}/s (p99 \
         {durable_p99:.2} ms, {durable_cpu:.1} µs CPU per job); durable / memory = {:.2}",
        durable / memory
    );
}
