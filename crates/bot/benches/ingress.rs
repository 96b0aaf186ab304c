//! Webhook ingress in-process — verify, parse, dedupe (a SQLite
//! conditional insert), enqueue — for a real 8.8 KiB push payload (GitHub's
//! recorded `branch.created.with-installation` example). Target: median under
//! 1 ms. Beside it, in the same run: signature verification alone, and a
//! duplicate delivery (verify, parse, dedupe hit).
//!
//! `cargo bench -p astrolift-bot --bench ingress`

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use astrolift_bot::queue::QueueError;
use astrolift_bot::{Ingress, JobQueue, SyncJob};
use astrolift_forge::webhook::{WebhookRequest, WebhookSecrets, sign, verify_signature};
use astrolift_manifest::Limits;
use astrolift_store::BoxFuture;
use astrolift_store::state::SqliteStateStore;
use criterion::{Criterion, criterion_group, criterion_main};
use support::{PAYLOAD, SECRET, headers};

/// Counts jobs and keeps none (no memory growth over millions of iterations).
#[derive(Debug, Default)]
struct CountingQueue(AtomicU64);

impl JobQueue for CountingQueue {
    fn enqueue<'a>(&'a self, _job: &'a SyncJob) -> BoxFuture<'a, Result<(), QueueError>> {
        self.0.fetch_add(1, Ordering::Relaxed);
        Box::pin(async { Ok(()) })
    }
}

fn ingress(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let state = runtime
        .block_on(SqliteStateStore::open(dir.path().join("state.db")))
        .expect("sqlite");
    let queue = Arc::new(CountingQueue::default());
    let ingress = Ingress {
        state: Arc::new(state),
        secrets: WebhookSecrets::new(SECRET.into(), None).expect("secret"),
        jobs: queue.clone(),
        triggers: None,
        limits: Limits::DEFAULT,
        function: "bench",
    };
    let body = PAYLOAD.as_bytes();
    let signature = sign(body, SECRET);
    let mut group = c.benchmark_group("ingress");

    group.bench_function("verify_signature_only", |b| {
        let secrets = WebhookSecrets::new(SECRET.into(), None).expect("secret");
        b.iter(|| verify_signature(body, Some(&signature), &secrets).expect("valid"));
    });

    let next = AtomicU64::new(0);
    group.bench_function("new_delivery_queued", |b| {
        b.iter(|| {
            let delivery = format!("bench-{}", next.fetch_add(1, Ordering::Relaxed));
            let headers = headers(&delivery, &signature);
            let request = WebhookRequest {
                headers: &headers,
                body: bytes::Bytes::from_static(body),
                is_base64_encoded: false,
            };
            let answer = runtime.block_on(ingress.receive(request));
            assert_eq!(answer.status, 202);
        });
    });

    let duplicate = headers("bench-0", &signature);
    group.bench_function("duplicate_delivery", |b| {
        b.iter(|| {
            let request = WebhookRequest {
                headers: &duplicate,
                body: bytes::Bytes::from_static(body),
                is_base64_encoded: false,
            };
            let answer = runtime.block_on(ingress.receive(request));
            assert_eq!(answer.status, 200);
        });
    });
    group.finish();
}

criterion_group!(benches, ingress);
criterion_main!(benches);
