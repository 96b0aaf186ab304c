//! A config manifest through `load_config` (includes, merge, file references).
#![no_main]

use astrolift_fuzz::{check_spans, repository_with};
use astrolift_manifest::Limits;
use astrolift_manifest::config::load_config;
use libfuzzer_sys::fuzz_target;

const PATH: &str = "config.toml";

fuzz_target!(|data: &[u8]| {
    let tree = repository_with(PATH, data);
    let result = load_config(&tree, PATH, &Limits::DEFAULT);
    check_spans(&result.diagnostics, PATH, data);
    let _ = result.to_json(true);
});
