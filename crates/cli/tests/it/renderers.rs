//! The four renderers on hand-built diagnostics, independent of the validator.

use astrolift_cli::render::{self, Format, Report, Style, github, sarif};
use astrolift_manifest::{Diagnostic, MemTree, catalogue};

use crate::sarif_schema::assert_valid_sarif;
use crate::support::{json, sample_agents, sample_diagnostics, sample_tree, without_version};

fn rendered(format: Format, style: Style, diagnostics: &[Diagnostic]) -> String {
    let agents = sample_agents();
    let report = Report {
        agents: &agents,
        diagnostics,
    };
    let mut out = Vec::new();
    render::render(format, &report, &sample_tree(), style, &mut out).expect("renders");
    String::from_utf8(out).expect("UTF-8 output")
}

#[test]
fn human_quotes_the_offending_source() {
    let text = rendered(Format::Human, Style::Plain, &sample_diagnostics());
    assert!(!text.contains('\u{1b}'), "plain output has no ANSI codes");
    assert!(!text.contains("sk-plain"), "secret values are masked");
    insta::assert_snapshot!("human_sample", text);
}

#[test]
fn human_styled_has_colours() {
    let text = rendered(Format::Human, Style::Styled, &sample_diagnostics());
    assert!(text.contains("\u{1b}["), "styled output has ANSI codes");
}

#[test]
fn human_without_findings_prints_only_the_summary() {
    let text = rendered(Format::Human, Style::Plain, &[]);
    assert_eq!(text, "0 errors, 0 warnings, 0 notices; 1 agent\n");
}

#[test]
fn human_survives_spans_outside_the_file() {
    let mut diagnostics = sample_diagnostics();
    for d in &mut diagnostics {
        d.span.line += 1000;
        d.span.end_line += 1000;
    }
    let text = rendered(Format::Human, Style::Plain, &diagnostics);
    assert!(
        text.contains("--> agents/triage/astrolift.toml:1002:8"),
        "{text}"
    );
}

#[test]
fn json_has_the_documented_shape() {
    let text = rendered(Format::Json, Style::Plain, &sample_diagnostics());
    assert_eq!(text.lines().count(), 1, "one JSON document on one line");
    let document = json(&text);
    insta::assert_json_snapshot!("json_sample", document);
    let keys: Vec<&str> = document["diagnostics"][1]
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "severity",
            "code",
            "message",
            "path",
            "line",
            "column",
            "end_line",
            "end_column"
        ],
        "`help` only when present"
    );
}

#[test]
fn sarif_is_valid_and_complete() {
    let text = rendered(Format::Sarif, Style::Plain, &sample_diagnostics());
    let document = json(&text);
    assert_valid_sarif(&document);
    insta::assert_json_snapshot!("sarif_sample", without_version(document));
}

#[test]
fn sarif_without_findings_is_valid() {
    let document = json(&rendered(Format::Sarif, Style::Plain, &[]));
    assert_valid_sarif(&document);
    assert_eq!(document["runs"][0]["results"], serde_json::json!([]));
}

#[test]
fn sarif_rules_take_the_catalogue_summary() {
    let Some(code) = catalogue().into_iter().next() else {
        return; // an empty catalogue has nothing to look up
    };
    let diagnostic = Diagnostic::new(code, "astrolift.toml", astrolift_manifest::Span::FILE, "x");
    let agents = [];
    let log = sarif::log(
        &Report {
            agents: &agents,
            diagnostics: &[diagnostic],
        },
        &MemTree::default(),
    );
    let rule = &log["runs"][0]["tool"]["driver"]["rules"][0];
    assert_eq!(rule["id"], code.id);
    assert_eq!(rule["shortDescription"]["text"], code.summary);
    assert_valid_sarif(&log);
}

#[test]
fn github_emits_escaped_workflow_commands() {
    let text = rendered(Format::Github, Style::Plain, &sample_diagnostics());
    insta::assert_snapshot!("github_sample", text);
    for line in text.lines() {
        assert!(line.starts_with("::"), "{line}");
        assert!(!line.contains('\r'));
    }
}

#[test]
fn github_escapes_properties() {
    let mut diagnostic = sample_diagnostics().remove(0);
    diagnostic.path = "dir,with:odd%/astrolift.toml".into();
    let command = github::command(&diagnostic);
    assert!(
        command.starts_with("::error file=dir%2Cwith%3Aodd%25/astrolift.toml,line=2,"),
        "{command}"
    );
}

#[test]
fn renderers_never_read_unlisted_files() {
    // Sources that hold nothing: the human renderer falls back to locations.
    let agents = [];
    let diagnostics = sample_diagnostics();
    let report = Report {
        agents: &agents,
        diagnostics: &diagnostics,
    };
    let mut out = Vec::new();
    render::render(
        Format::Human,
        &report,
        &MemTree::new(),
        Style::Plain,
        &mut out,
    )
    .expect("renders");
    let text = String::from_utf8(out).expect("UTF-8");
    assert!(
        text.contains("--> agents/triage/astrolift.toml:2:8"),
        "{text}"
    );
}
