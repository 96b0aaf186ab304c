//! Shared helpers: bindings, signed requests, a fixed secret resolver.

use std::collections::HashMap;
use std::path::PathBuf;

use astrolift_forge::webhook::WebhookSecrets;
use astrolift_jq::sandbox::WorkerCommand;
use astrolift_manifest::limits::Limits;
use astrolift_manifest::triggers::{TriggerSource, TriggerSpec, Verify};
use astrolift_store::BoxFuture;
use astrolift_trigger::{CompiledBinding, SecretError, SecretResolver};
use hmac::{Hmac, KeyInit, Mac};
use http::{HeaderMap, HeaderName, HeaderValue};
use secrecy::SecretString;
use sha2::Sha256;

pub const HOOK_SECRET: &str = "s3cr3t-hook-value";
pub const HOOK_REF: &str = "secret://agents/jira-hook";
pub const APP_SECRET: &str = "app-webhook-secret";
/// The project the test bindings' agents are registered under.
pub const PROJECT: &str = "proj-1";

/// Resolves references from a fixed map, plus the App's webhook secret.
#[derive(Debug)]
pub struct FixedSecrets {
    values: HashMap<String, String>,
    github: WebhookSecrets,
}

impl FixedSecrets {
    pub fn new() -> Self {
        let values = HashMap::from([(HOOK_REF.to_owned(), HOOK_SECRET.to_owned())]);
        let github = WebhookSecrets::new(APP_SECRET.to_owned(), None).expect("non-empty");
        Self { values, github }
    }
}

impl SecretResolver for FixedSecrets {
    fn resolve<'a>(
        &'a self,
        _project: &'a str,
        reference: &'a str,
    ) -> BoxFuture<'a, Result<SecretString, SecretError>> {
        let value = self.values.get(reference).cloned();
        Box::pin(async move {
            value
                .map(SecretString::from)
                .ok_or_else(|| SecretError::MissingEnv {
                    reference: reference.to_owned(),
                    variable: "-".to_owned(),
                })
        })
    }

    fn github_webhook(&self) -> Option<&WebhookSecrets> {
        Some(&self.github)
    }
}

/// The default limits, with this test binary's evaluations in worker
/// processes (as in every shipped binary): the workers are this binary,
/// running only its `jq_worker` test.
pub fn limits() -> Limits {
    worker_processes();
    Limits::DEFAULT
}

/// Makes this process evaluate in worker processes of this test binary.
pub fn worker_processes() {
    let command = WorkerCommand::this_test_binary("jq_worker").expect("the test binary's path");
    astrolift_jq::sandbox::use_worker_processes(command);
}

pub fn hmac_verify() -> Verify {
    Verify::HmacSha256 {
        header: "X-Signature".to_owned(),
        prefix: Some("sha256=".to_owned()),
        secret: HOOK_REF.to_owned(),
        timestamp_header: None,
        tolerance_seconds: None,
    }
}

pub fn spec(verify: Option<Verify>, filter: Option<&str>, payload: Option<&str>) -> TriggerSpec {
    TriggerSpec {
        name: "jira-high-priority".to_owned(),
        source: TriggerSource::Generic,
        events: Vec::new(),
        verify,
        filter: filter.map(str::to_owned),
        payload: payload.map(str::to_owned),
        env_spec: None,
        allow_untrusted: false,
        report: None,
        samples: None,
        keep_deliveries: None,
        replay_values: false,
    }
}

pub fn binding(filter: Option<&str>, payload: Option<&str>) -> CompiledBinding {
    worker_processes();
    CompiledBinding::from_spec("t-1", spec(Some(hmac_verify()), filter, payload)).expect("compiles")
}

pub fn hmac_hex(body: &[u8], secret: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key length");
    mac.update(body);
    hex::encode(mac.finalize().into_bytes())
}

pub fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.insert(
            HeaderName::from_bytes(name.as_bytes()).expect("header name"),
            HeaderValue::from_str(value).expect("header value"),
        );
    }
    map
}

/// Headers with a good `X-Signature: sha256=<hmac>` for `body`.
pub fn signed(body: &[u8]) -> HeaderMap {
    headers(&[(
        "X-Signature",
        &format!("sha256={}", hmac_hex(body, HOOK_SECRET)),
    )])
}

pub fn fixture(path: &str) -> Vec<u8> {
    let full = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(path);
    std::fs::read(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

/// `service.fan_out_github` for a delivery of `body` to `repository`, as the
/// webhook's ingress hands it over: its envelope read once from the body.
pub async fn fan_out(
    service: &astrolift_trigger::TriggerService,
    repository: &str,
    event_name: &str,
    action: Option<&str>,
    delivery_id: &str,
    body: &[u8],
) -> Vec<astrolift_trigger::FanOutResult> {
    let envelope = astrolift_forge::webhook::Envelope::read(body).unwrap_or_default();
    let delivery = astrolift_trigger::GithubDelivery {
        repository,
        event_name,
        action,
        delivery_id,
        envelope: &envelope,
        body,
    };
    service.fan_out_github(&delivery).await
}
