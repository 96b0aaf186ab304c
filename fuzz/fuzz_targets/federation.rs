//! The federation file (`astrolift.agents.toml`): its parser alone, then the
//! whole repository validation it drives.
#![no_main]

use astrolift_fuzz::{check_spans, repository_with, validate};
use astrolift_manifest::federation::{FEDERATION_FILE, parse};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let mut diagnostics = Vec::new();
        let _ = parse(text, &mut diagnostics);
    }
    let tree = repository_with(FEDERATION_FILE, data);
    let validation = validate(&tree);
    check_spans(&validation.diagnostics, FEDERATION_FILE, data);
});
