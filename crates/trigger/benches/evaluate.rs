//! Trigger evaluation: verify + parse a 20 KiB body + filter + map, with the
//! programs compiled once; and the cost of compiling them. Evaluation goes
//! through the path that ships: a warm jq worker process (this binary calls
//! `sandbox::init` first, as `astrolift` and the functions do).
//!
//! `cargo bench -p astrolift-trigger --bench evaluate`

use std::collections::HashMap;

use astrolift_forge::webhook::WebhookSecrets;
use astrolift_jq::sandbox::SandboxedProgram;
use astrolift_manifest::limits::Limits;
use astrolift_manifest::triggers::{TriggerSource, TriggerSpec, Verify};
use astrolift_store::BoxFuture;
use astrolift_trigger::{
    CompiledBinding, SecretError, SecretResolver, evaluate, evaluate_verified,
};
use criterion::{Criterion, criterion_group};
use hmac::{Hmac, KeyInit, Mac};
use http::{HeaderMap, HeaderValue};
use secrecy::SecretString;
use sha2::Sha256;

const SECRET: &str = "bench-secret";
const FILTER: &str = r#".issue.fields.priority.name == "High""#;
const PAYLOAD: &str = r#"{mode: "triage", issue: .issue.key, title: .issue.fields.summary, labels: [.issue.fields.labels[] | .name]}"#;

#[derive(Debug)]
struct Secrets(HashMap<String, String>);

impl SecretResolver for Secrets {
    fn resolve<'a>(
        &'a self,
        _project: &'a str,
        reference: &'a str,
    ) -> BoxFuture<'a, Result<SecretString, SecretError>> {
        let value = self.0.get(reference).cloned();
        Box::pin(async move {
            value
                .map(SecretString::from)
                .ok_or(SecretError::NoGithubSecret)
        })
    }
    fn github_webhook(&self) -> Option<&WebhookSecrets> {
        None
    }
}

/// A Jira-shaped body of about 20 KiB.
fn body() -> Vec<u8> {
    let comments: Vec<_> = (0..60)
        .map(|i| serde_json::json!({"id": i, "author": {"name": format!("user{i}")}, "body": "x".repeat(280)}))
        .collect();
    let body = serde_json::json!({
        "webhookEvent": "jira:issue_created",
        "issue": {"key": "OPS-17", "fields": {
            "summary": "Checkout is down", "priority": {"name": "High"},
            "labels": [{"name": "incident"}, {"name": "checkout"}],
            "comments": comments
        }}
    });
    serde_json::to_vec(&body).unwrap_or_default()
}

fn bench(c: &mut Criterion) {
    let body = body();
    eprintln!("body: {} bytes", body.len());
    let mut mac =
        Hmac::<Sha256>::new_from_slice(SECRET.as_bytes()).unwrap_or_else(|_| unreachable!());
    mac.update(&body);
    let signature = format!("sha256={}", hex::encode(mac.finalize().into_bytes()));
    let mut headers = HeaderMap::new();
    headers.insert(
        "x-signature",
        HeaderValue::from_str(&signature).unwrap_or_else(|_| unreachable!()),
    );
    let spec = TriggerSpec {
        name: "bench".to_owned(),
        source: TriggerSource::Generic,
        events: Vec::new(),
        verify: Some(Verify::HmacSha256 {
            header: "X-Signature".to_owned(),
            prefix: Some("sha256=".to_owned()),
            secret: "secret://bench".to_owned(),
            timestamp_header: None,
            tolerance_seconds: None,
        }),
        filter: Some(FILTER.to_owned()),
        payload: Some(PAYLOAD.to_owned()),
        env_spec: None,
        allow_untrusted: false,
        report: None,
        samples: None,
        keep_deliveries: None,
        replay_values: false,
    };
    let binding = CompiledBinding::from_spec("t-bench", spec).unwrap_or_else(|e| panic!("{e}"));
    let secrets = Secrets(HashMap::from([(
        "secret://bench".to_owned(),
        SECRET.to_owned(),
    )]));
    let limits = Limits::DEFAULT;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    c.bench_function("evaluate 20 KiB (verify+parse+filter+map)", |b| {
        b.iter(|| {
            runtime
                .block_on(evaluate(
                    &binding, "bench", &headers, &body, &secrets, &limits,
                ))
                .unwrap_or_else(|e| panic!("{e}"))
        })
    });
    let mut bare = binding.spec.clone();
    bare.filter = None;
    bare.payload = None;
    let bare = CompiledBinding::from_spec("t-bare", bare).unwrap_or_else(|e| panic!("{e}"));
    c.bench_function(
        "evaluate_verified 20 KiB, no programs (parse + worker hand-off)",
        |b| {
            b.iter(|| {
                runtime
                    .block_on(evaluate_verified(&bare, &body, &limits))
                    .unwrap_or_else(|e| panic!("{e}"))
            })
        },
    );
    c.bench_function("compile filter", |b| {
        b.iter(|| SandboxedProgram::compile(FILTER).unwrap_or_else(|e| panic!("{}", e.message)))
    });
    c.bench_function("compile payload", |b| {
        b.iter(|| SandboxedProgram::compile(PAYLOAD).unwrap_or_else(|e| panic!("{}", e.message)))
    });
}

criterion_group!(benches, bench);

fn main() {
    // As a jq worker this serves and exits; otherwise evaluations below run
    // in worker processes of this binary.
    astrolift_jq::sandbox::init();
    benches();
    Criterion::default().configure_from_args().final_summary();
}
