//! Trigger evaluation: a GitHub-sourced binding with a fuzzed filter and
//! mapping (jq text) run on a fuzzed JSON body in the sandbox, through
//! `CompiledBinding::from_spec` and `evaluate_verified`.
//!
//! Input layout: `<filter>\0<payload mapping>\0<body>`; an empty program is
//! absent. Each evaluation is bounded by `Limits::jq_time_ms` (100 ms).
#![no_main]

use std::sync::OnceLock;

use astrolift_manifest::Limits;
use astrolift_manifest::triggers::{TriggerSource, TriggerSpec};
use astrolift_trigger::{CompiledBinding, evaluate_verified};
use libfuzzer_sys::fuzz_target;
use tokio::runtime::{Builder, Runtime};

fn runtime() -> Option<&'static Runtime> {
    static RUNTIME: OnceLock<Option<Runtime>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| Builder::new_current_thread().enable_time().build().ok())
        .as_ref()
}

fn program(bytes: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(bytes).ok()?;
    (!text.trim().is_empty()).then(|| text.to_owned())
}

fuzz_target!(|data: &[u8]| {
    let mut parts = data.splitn(3, |&b| b == 0);
    let filter = parts.next().and_then(program);
    let payload = parts.next().and_then(program);
    let body = parts.next().unwrap_or_default();
    let spec = TriggerSpec {
        name: "fuzz".to_owned(),
        source: TriggerSource::Github,
        events: vec!["push".to_owned()],
        verify: None,
        filter,
        payload,
        env_spec: None,
    };
    let Ok(binding) = CompiledBinding::from_spec("fuzz", spec) else {
        return;
    };
    let Some(runtime) = runtime() else {
        return;
    };
    let _ = runtime.block_on(evaluate_verified(&binding, body, &Limits::DEFAULT));
});
