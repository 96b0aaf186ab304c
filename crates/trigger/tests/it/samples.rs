//! `check_samples` over the fixture repositories of `tests/fixtures/samples/`: each
//! folder is a repository whose one binding names a samples folder (docs/reference.md
//! §5.5). Every finding is asserted, with its code, file, position and message.

use std::path::PathBuf;

use astrolift_manifest::{
    DirTree, Limits, Severity, ValidateOptions, Validation, validate_repository,
};
use astrolift_trigger::samples::check_samples;

use crate::support::limits;

fn repository(case: &str) -> (DirTree, Validation) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/samples")
        .join(case);
    let tree = DirTree::open(&dir, Limits::DEFAULT.tarball_files)
        .unwrap_or_else(|e| panic!("{case}: {e}"));
    let validation = validate_repository(&tree, &ValidateOptions::default());
    assert!(
        validation.diagnostics.is_empty(),
        "{case}: {:#?}",
        validation.diagnostics
    );
    (tree, validation)
}

/// The findings of `case`'s samples, one line each:
/// `severity code path:line:column message`, in path order.
async fn findings(case: &str) -> Vec<String> {
    let (tree, validation) = repository(case);
    let mut found = check_samples(&tree, &validation.agents, &limits()).await;
    astrolift_manifest::diagnostic::sort(&mut found);
    found
        .iter()
        .map(|d| {
            format!(
                "{} {} {}:{}:{} {}",
                d.severity, d.code, d.path, d.span.line, d.span.column, d.message
            )
        })
        .collect()
}

#[tokio::test]
async fn samples_that_map_as_pinned_say_nothing() {
    // A payload, `{"filtered": true}`, and `null` for a binding without a mapping.
    assert_eq!(findings("passing").await, Vec::<String>::new());
}

#[tokio::test]
async fn each_way_a_sample_differs_is_a_mismatch_on_its_expected_file() {
    assert_eq!(
        findings("mismatching").await,
        [
            "error trigger/sample-mismatch samples/high.expected.json:1:1 sample `high` of \
             trigger `jira` maps to a payload that differs from `high.expected.json` at \
             .issue (number → string of 6), .urgent (removed boolean)",
            "error trigger/sample-mismatch samples/loud.expected.json:1:1 sample `loud` of \
             trigger `jira` dispatched with a payload of 3 keys; `loud.expected.json` expects \
             it filtered out",
            "error trigger/sample-mismatch samples/low.expected.json:1:1 sample `low` of \
             trigger `jira` was filtered out; `low.expected.json` expects a payload",
            "error trigger/sample-mismatch samples/quiet.expected.json:1:1 sample `quiet` of \
             trigger `jira` maps to a payload that differs from `quiet.expected.json` at \
             .issue (added string of 6), .mode (added string of 6), .title (added string of 16)",
        ]
    );
}

#[tokio::test]
async fn a_github_sample_is_filtered_unless_its_event_header_is_one_of_the_events() {
    assert_eq!(
        findings("github").await,
        [
            "error trigger/sample-mismatch samples/no-header.expected.json:1:1 sample \
             `no-header` of trigger `new-issue` was filtered out (it has no `x-github-event` \
             header); `no-header.expected.json` expects a payload",
            "error trigger/sample-mismatch samples/pull.expected.json:1:1 sample `pull` of \
             trigger `new-issue` was filtered out (its event `pull_request.opened` is not one \
             of the binding's `events`); `pull.expected.json` expects a payload",
        ],
        "`issues.opened` and `issue_comment` (any action, any header case) dispatch; \
         `issues.closed` is filtered as pinned"
    );
}

#[tokio::test]
async fn a_failing_program_is_a_mismatch_with_the_sandboxs_error() {
    assert_eq!(
        findings("failing").await,
        [
            "error trigger/sample-mismatch samples/keyless.expected.json:1:1 sample `keyless` \
             of trigger `strict` failed (`keyless.expected.json` expects a payload): payload \
             mapping failed: jq error: \"issue.key is required\"",
            "error trigger/sample-mismatch samples/stringly.expected.json:1:1 sample \
             `stringly` of trigger `strict` failed (`stringly.expected.json` expects it \
             filtered out): filter failed: the filter must yield a boolean, not a string",
        ]
    );
}

#[tokio::test]
async fn a_sample_without_an_expected_file_is_reported_never_compared() {
    let found = findings("unpinned").await;
    assert_eq!(
        found,
        [
            "error trigger/invalid-sample samples/broken.json:2:23 `broken.json` is not JSON: \
             trailing comma at line 2 column 23",
            "notice trigger/sample-unpinned samples/dispatched.json:1:1 sample `dispatched` of \
             trigger `loose` dispatched with a payload of 2 keys; no `dispatched.expected.json` \
             pins it",
            "notice trigger/sample-unpinned samples/empty.json:1:1 sample `empty` of trigger \
             `loose` dispatched with the empty payload; no `empty.expected.json` pins it",
            "notice trigger/sample-unpinned samples/failed.json:1:1 sample `failed` of trigger \
             `loose` failed: payload mapping failed: jq error: \"b is missing\"; no \
             `failed.expected.json` pins it",
            "notice trigger/sample-unpinned samples/filtered.json:1:1 sample `filtered` of \
             trigger `loose` was filtered out; no `filtered.expected.json` pins it",
        ]
    );
    let (tree, validation) = repository("unpinned");
    let diagnostics = check_samples(&tree, &validation.agents, &limits()).await;
    let unpinned = diagnostics
        .iter()
        .find(|d| d.code == "trigger/sample-unpinned")
        .expect("a notice");
    assert_eq!(unpinned.severity, Severity::Notice);
    assert!(
        unpinned
            .help
            .as_deref()
            .is_some_and(|h| h.contains("{\"filtered\": true}")),
        "{unpinned:?}"
    );
}

#[tokio::test]
async fn a_binding_without_samples_evaluates_nothing() {
    let (tree, mut validation) = repository("mismatching");
    for agent in &mut validation.agents {
        for trigger in &mut agent.triggers {
            trigger.samples = None;
        }
    }
    assert!(
        check_samples(&tree, &validation.agents, &limits())
            .await
            .is_empty()
    );
}
