//! The workspace manifest (`astrolift.workspace.yaml`), directly and through discovery.
#![no_main]

use astrolift_fuzz::{check_spans, repository_with, validate};
use astrolift_manifest::Limits;
use astrolift_manifest::discovery::WORKSPACE_FILE;
use astrolift_manifest::workspace::validate_workspace_text;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let (_, diagnostics) = validate_workspace_text(WORKSPACE_FILE, text, &Limits::DEFAULT);
        check_spans(&diagnostics, WORKSPACE_FILE, data);
    }
    let tree = repository_with(WORKSPACE_FILE, data);
    let validation = validate(&tree);
    check_spans(&validation.diagnostics, WORKSPACE_FILE, data);
});
