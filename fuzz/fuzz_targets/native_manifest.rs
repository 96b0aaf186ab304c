//! The native agent manifest (`astrolift.toml`) through discovery and validation.
#![no_main]

use astrolift_fuzz::{check_spans, repository_with, validate};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let tree = repository_with("astrolift.toml", data);
    let validation = validate(&tree);
    check_spans(&validation.diagnostics, "astrolift.toml", data);
});
