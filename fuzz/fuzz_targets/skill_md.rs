//! A local skill's `SKILL.md` (frontmatter YAML and body).
#![no_main]

use astrolift_fuzz::{check_spans, repository_with};
use astrolift_manifest::Limits;
use astrolift_manifest::skill::read_local_skill;
use libfuzzer_sys::fuzz_target;

const PATH: &str = "skills/triage/SKILL.md";

fuzz_target!(|data: &[u8]| {
    let tree = repository_with(PATH, data);
    let mut diagnostics = Vec::new();
    let _ = read_local_skill(&tree, &Limits::DEFAULT, "skills/triage", &mut diagnostics);
    check_spans(&diagnostics, PATH, data);
});
