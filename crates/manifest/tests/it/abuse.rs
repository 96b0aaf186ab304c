//! Abuse cases for manifests: a manifest with 100,000 skills gets a
//! bounded answer quickly, whether it fits the file limit or not.

use std::time::Duration;

use astrolift_manifest::{Limits, MemTree};

use crate::support::validate;

const SKILLS: usize = 100_000;

/// Loose bound on CPU time (about 5 s in a debug build): a quadratic check
/// on 100,000 skills takes minutes. CPU time, not wall time: on a machine
/// shared with parallel builds the wall clock says nothing about validation.
const QUICKLY: Duration = Duration::from_secs(30);

/// CPU time (user + system) of the calling thread, from
/// `/proc/thread-self/stat` (Linux; zero elsewhere). Ticks are USER_HZ, 100
/// on every Linux architecture Rust supports.
fn thread_cpu() -> Duration {
    let ticks = std::fs::read_to_string("/proc/thread-self/stat")
        .ok()
        .and_then(|stat| {
            let fields: Vec<u64> = stat
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .skip(11)
                .take(2)
                .filter_map(|field| field.parse().ok())
                .collect();
            Some(fields.iter().sum::<u64>())
        })
        .unwrap_or(0);
    Duration::from_millis(ticks * 10)
}

/// Validates `tree`, returning the validation and the CPU time it took.
fn timed_validate(tree: &MemTree) -> (astrolift_manifest::Validation, Duration) {
    let start = thread_cpu();
    let validation = validate(tree);
    (validation, thread_cpu().saturating_sub(start))
}

/// `astrolift.toml` declaring `skills` written by `skill`, one per index.
fn manifest_with_skills(skill: impl Fn(usize) -> String) -> String {
    let mut text = String::from("astrolift_version = 1\nname = \"many-skills\"\nskills = [");
    for i in 0..SKILLS {
        text.push_str(&skill(i));
        text.push(',');
    }
    text.push_str("]\n");
    text
}

fn codes(validation: &astrolift_manifest::Validation) -> Vec<&str> {
    let mut codes: Vec<&str> = validation
        .diagnostics
        .iter()
        .map(|d| d.code.as_str())
        .collect();
    codes.dedup();
    codes
}

#[test]
fn a_manifest_with_100_000_skills_over_the_file_limit_is_one_diagnostic() {
    let text = manifest_with_skills(|i| format!("\"./skills/skill-{i}\""));
    assert!(text.len() as u64 > Limits::DEFAULT.manifest_file);
    let tree = MemTree::from_files([("astrolift.toml", text)]);
    let (validation, cpu) = timed_validate(&tree);
    assert!(cpu < QUICKLY, "took {cpu:?} of CPU");
    assert_eq!(
        validation.diagnostics.len(),
        1,
        "{:#?}",
        validation.diagnostics
    );
    assert!(validation.agents.is_empty());
}

/// Under the 1 MiB file limit (`"./N"` entries): every reference is checked,
/// each missing SKILL.md is one diagnostic, and the duplicate check is linear.
#[test]
fn a_manifest_with_100_000_skills_under_the_file_limit_is_validated_in_linear_time() {
    let mut text = manifest_with_skills(|i| format!("\"./{i}\""));
    // The last reference repeated: exactly one duplicate diagnostic.
    text.insert_str(text.len() - 2, &format!("\"./{}\"", SKILLS - 1));
    assert!(
        text.len() as u64 <= Limits::DEFAULT.manifest_file,
        "{}",
        text.len()
    );
    let tree = MemTree::from_files([("astrolift.toml", text)]);
    let (validation, cpu) = timed_validate(&tree);
    assert!(cpu < QUICKLY, "took {cpu:?} of CPU");
    let duplicates = validation
        .diagnostics
        .iter()
        .filter(|d| d.code.as_str() == "manifest/duplicate-skill")
        .count();
    assert_eq!(duplicates, 1, "{:?}", codes(&validation));
    assert!(
        validation.diagnostics.len() <= SKILLS + 10,
        "{} diagnostics",
        validation.diagnostics.len()
    );
}
