//! Trigger samples (`samples.rs`) and the binding keys around them: the folder's limits
//! (100 samples, 256 KiB a file) at and one past the limit, each way a sample or expected
//! file is refused, and where each binding is written (`trigger_spans`). The keys'
//! diagnostics in a whole manifest are the fixtures `trigger-samples` and
//! `trigger-keep-deliveries`.

use astrolift_manifest::samples::{
    ExpectedOutcome, MAX_SAMPLE_BYTES, MAX_SAMPLES, Sample, SampleFile, read_sample, sample_files,
};
use astrolift_manifest::triggers::{DEFAULT_KEEP_DELIVERIES, TriggerSource, TriggerSpec};
use astrolift_manifest::{Diagnostic, MemTree, Span};
use serde_json::json;

use crate::support::validate;

const MANIFEST: &str = r#"astrolift_version = 1
name = "sampled"

[[workloads]]
name = "sampled"
kind = "agent"

  [[workloads.containers]]
  name = "agent"
  is_primary = true
  image_ref = "ghcr.io/example/agent:1.0"

[[triggers]]
name = "jira"
source = "generic"
verify = { kind = "token", header = "X-Token", secret = "secret://agents/jira" }
samples = "samples"
"#;

/// An agent at `agents/sampled/` whose one binding names `samples`, with `files` in it.
fn tree_with(files: &[(&str, &[u8])]) -> MemTree {
    let mut tree = MemTree::from_files([("agents/sampled/astrolift.toml", MANIFEST)]);
    for (name, bytes) in files {
        tree.insert(format!("agents/sampled/samples/{name}"), *bytes, false);
    }
    tree
}

fn codes(diagnostics: &[Diagnostic]) -> Vec<&str> {
    diagnostics.iter().map(|d| d.code.as_str()).collect()
}

fn sample_file(name: &str, expected: bool) -> SampleFile {
    let folder = "agents/sampled/samples";
    SampleFile {
        name: name.to_owned(),
        path: format!("{folder}/{name}.json"),
        expected_path: expected.then(|| format!("{folder}/{name}.expected.json")),
    }
}

fn read(files: &[(&str, &[u8])], name: &str) -> Result<Sample, Box<Diagnostic>> {
    let tree = tree_with(files);
    let expected = files
        .iter()
        .any(|(file, _)| *file == format!("{name}.expected.json"));
    read_sample(&tree, &sample_file(name, expected))
}

/// `count` samples (each with an expected file, which does not count), plus one nested
/// deeper, which does not either.
fn folder_of(count: usize) -> MemTree {
    let mut tree = tree_with(&[("nested/deep.json", b"{\"body\": 1}")]);
    for i in 0..count {
        let stem = format!("agents/sampled/samples/s{i:03}");
        tree.insert(format!("{stem}.json"), "{\"body\": {}}", false);
        tree.insert(format!("{stem}.expected.json"), "null", false);
    }
    tree
}

#[test]
fn a_folder_of_exactly_the_limit_is_accepted_and_one_more_is_refused() {
    let at_limit = validate(&folder_of(MAX_SAMPLES));
    assert!(
        at_limit.diagnostics.is_empty(),
        "{:#?}",
        at_limit.diagnostics
    );
    assert_eq!(
        at_limit.agents[0].triggers[0].samples.as_deref(),
        Some("samples")
    );

    let past = validate(&folder_of(MAX_SAMPLES + 1));
    assert_eq!(codes(&past.diagnostics), ["trigger/invalid-samples"]);
    let diagnostic = &past.diagnostics[0];
    assert_eq!(diagnostic.path, "agents/sampled/astrolift.toml");
    assert_eq!(
        diagnostic.message,
        "`samples` `samples` holds 101 samples, over the limit of 100"
    );
    // On the value: line 17 of the manifest, `samples = "samples"`.
    assert_eq!(
        (diagnostic.span.line, diagnostic.span.column),
        (17, 11),
        "{diagnostic:?}"
    );
    assert_eq!(past.agents[0].triggers[0].samples, None);
}

#[test]
fn samples_are_listed_by_name_with_their_expected_files() {
    let tree = tree_with(&[
        ("b.json", b"{\"body\": 1}"),
        ("a.json", b"{\"body\": 1}"),
        ("a.expected.json", b"null"),
        ("orphan.expected.json", b"null"),
        ("notes.md", b"text"),
        ("nested/c.json", b"{\"body\": 1}"),
    ]);
    let files = sample_files(&tree, "agents/sampled", "./samples/");
    assert_eq!(files, vec![sample_file("a", true), sample_file("b", false)]);
    assert!(sample_files(&tree, "agents/sampled", "../../../x").is_empty());
    assert!(sample_files(&tree, "agents/sampled", "missing").is_empty());
    let validation = validate(&tree);
    assert_eq!(codes(&validation.diagnostics), ["trigger/orphan-expected"]);
    assert_eq!(
        validation.diagnostics[0].path,
        "agents/sampled/samples/orphan.expected.json"
    );
}

#[test]
fn a_sample_file_of_exactly_256_kib_is_read_and_one_byte_more_is_refused_unread() {
    // `{"body": "xxx…"}` padded to the exact size.
    let padded = |size: u64| {
        let overhead = "{\"body\": \"\"}".len();
        let fill = "x".repeat(usize::try_from(size).expect("fits") - overhead);
        format!("{{\"body\": \"{fill}\"}}").into_bytes()
    };
    let exact = padded(MAX_SAMPLE_BYTES);
    assert_eq!(exact.len() as u64, MAX_SAMPLE_BYTES);
    let sample = read(&[("big.json", &exact)], "big").expect("exactly the limit is read");
    assert_eq!(sample.body.len() as u64, MAX_SAMPLE_BYTES - 10);

    let over = padded(MAX_SAMPLE_BYTES + 1);
    let error = read(&[("big.json", &over)], "big").expect_err("one byte past is refused");
    assert_eq!(error.code, "trigger/invalid-sample");
    assert_eq!(error.span, Span::FILE);
    assert_eq!(
        error.message,
        "`big.json` is 262145 bytes, over the 262144-byte limit of a sample file, so it was not read"
    );

    // Refused by its listed size, never read: a listed entry without content.
    let mut tree = tree_with(&[]);
    tree.insert_entry(astrolift_manifest::FileEntry {
        path: "agents/sampled/samples/huge.json".to_owned(),
        size: 10 * MAX_SAMPLE_BYTES,
        executable: false,
        kind: astrolift_manifest::EntryKind::File,
    });
    let error = read_sample(&tree, &sample_file("huge", false)).expect_err("refused");
    assert!(
        error.message.contains("over the 262144-byte limit"),
        "{error:?}"
    );

    // The expected file has the same limit.
    let error = read(
        &[("a.json", b"{\"body\": 1}"), ("a.expected.json", &over)],
        "a",
    )
    .expect_err("refused");
    assert_eq!(error.path, "agents/sampled/samples/a.expected.json");
}

#[test]
fn a_json_syntax_error_is_positioned_where_the_parser_stopped() {
    // At the `]`: line 3, column 22 (characters, not bytes: `é` is two bytes).
    let text = "{\n  \"headers\": {},\n  \"body\": {\"é\": \"x\", ]}\n}\n";
    let error = read(&[("bad.json", text.as_bytes())], "bad").expect_err("not JSON");
    assert_eq!(error.code, "trigger/invalid-sample");
    assert_eq!(error.path, "agents/sampled/samples/bad.json");
    assert_eq!(error.span, Span::new(3, 22, 3, 23), "{}", error.message);
    assert!(
        error.message.starts_with("`bad.json` is not JSON: "),
        "{}",
        error.message
    );

    let truncated = read(&[("cut.json", b"{\"body\": [1, 2")], "cut").expect_err("cut");
    assert_eq!((truncated.span.line, truncated.span.column), (1, 14));
}

#[test]
fn each_shape_problem_of_a_sample_is_an_invalid_sample() {
    let cases: &[(&[u8], &str)] = &[
        (b"[1]", "sample `s` is not an object"),
        (b"{\"headers\": {}}", "sample `s` has no `body`"),
        (
            b"{\"body\": 1, \"method\": \"POST\"}",
            "sample `s` has the key `method`; a sample has only `headers` and `body`",
        ),
        (
            b"{\"body\": 1, \"headers\": [\"x\"]}",
            "the `headers` of sample `s` is not an object of strings",
        ),
        (
            b"{\"body\": 1, \"headers\": {\"X-Count\": 2}}",
            "header `X-Count` of sample `s` is not a string",
        ),
        (
            b"{\"body\": 1, \"headers\": {\"X-A\": \"1\", \"x-a\": \"2\"}}",
            "of sample `s` is given twice (header names are case-insensitive)",
        ),
    ];
    for (bytes, message) in cases {
        let error = read(&[("s.json", bytes)], "s").expect_err(message);
        assert_eq!(error.code, "trigger/invalid-sample", "{message}");
        assert_eq!(error.span, Span::FILE, "{message}");
        assert!(error.message.contains(message), "{}", error.message);
    }
}

#[test]
fn an_expected_file_is_a_payload_the_empty_payload_or_filtered() {
    let sample: &[u8] =
        b"{\"headers\": {\"X-GitHub-Event\": \"issues\"}, \"body\": {\"a\": [1, 2]}}";
    let outcome = |expected: &[u8]| {
        read(&[("s.json", sample), ("s.expected.json", expected)], "s")
            .map(|s| s.expected.map(|e| e.outcome))
    };
    assert_eq!(
        outcome(b"{\"filtered\": true}").expect("reads"),
        Some(ExpectedOutcome::Filtered)
    );
    for empty in [&b"null"[..], b"{}", b" { } \n"] {
        assert_eq!(
            outcome(empty).expect("reads"),
            Some(ExpectedOutcome::Payload(None))
        );
    }
    for payload in [
        json!({"mode": "triage"}),
        json!({"filtered": false}),
        json!({"filtered": true, "also": 1}),
    ] {
        let text = payload.to_string();
        assert_eq!(
            outcome(text.as_bytes()).expect("reads"),
            Some(ExpectedOutcome::Payload(Some(payload)))
        );
    }
    for wrong in [&b"[]"[..], b"true", b"\"filtered\"", b"3"] {
        let error = outcome(wrong).expect_err("not an outcome");
        assert_eq!(error.code, "trigger/invalid-sample");
        assert_eq!(error.path, "agents/sampled/samples/s.expected.json");
        assert!(
            error.message.contains("or `{\"filtered\": true}`"),
            "{}",
            error.message
        );
    }

    let read = read(&[("s.json", sample)], "s").expect("reads");
    assert_eq!(read.body, "{\"a\":[1,2]}", "the body as compact JSON");
    assert_eq!(
        read.headers.into_iter().collect::<Vec<_>>(),
        [("x-github-event".to_owned(), "issues".to_owned())],
        "header names lowercased"
    );
    assert_eq!(read.expected, None);
}

#[test]
fn each_binding_is_located_by_its_name() {
    let manifest = format!(
        "{MANIFEST}\n[[triggers]]\nname = \"second\"\nsource = \"generic\"\nverify = {{ kind = \"token\", header = \"X\", secret = \"secret://a\" }}\n\n[[triggers]]\nsource = \"generic\"\n"
    );
    let tree = MemTree::from_files([
        ("astrolift.toml", manifest.as_str()),
        ("samples/a.json", "{\"body\": 1}"),
    ]);
    let validation = validate(&tree);
    let agent = &validation.agents[0];
    let spans: Vec<(&str, u32, u32)> = agent
        .trigger_spans
        .iter()
        .map(|(name, span)| (name.as_str(), span.line, span.column))
        .collect();
    assert_eq!(spans, [("jira", 14, 8), ("second", 20, 8)]);
    assert_eq!(agent.triggers.len(), 2);
}

#[test]
fn the_new_keys_are_left_out_of_a_stored_binding_when_absent() {
    // A binding stored before the keys existed reads back with their defaults and
    // serializes to the same JSON, so its digest is unchanged.
    let stored = json!({"name": "jira", "source": "generic", "events": [], "verify": null,
                        "filter": null, "payload": null, "env_spec": null});
    let spec: TriggerSpec = serde_json::from_value(stored.clone()).expect("reads");
    assert_eq!(
        (&spec.samples, spec.keep_deliveries, spec.replay_values),
        (&None, None, false)
    );
    assert_eq!(spec.source, TriggerSource::Generic);
    assert_eq!(spec.deliveries_kept(), DEFAULT_KEEP_DELIVERIES);
    assert_eq!(serde_json::to_value(&spec).expect("serializes"), stored);

    let kept = TriggerSpec {
        samples: Some("samples".to_owned()),
        keep_deliveries: Some(0),
        replay_values: true,
        ..spec
    };
    let stored = serde_json::to_value(&kept).expect("serializes");
    assert_eq!(stored["samples"], "samples");
    assert_eq!(stored["keep_deliveries"], 0);
    assert_eq!(stored["replay_values"], true);
    assert_eq!(kept.deliveries_kept(), 0);
}

#[test]
fn without_a_tree_samples_is_checked_as_a_path_only() {
    let text = "[[triggers]]\nname = \"a\"\nsource = \"github\"\nevents = [\"issues\"]\nsamples = \"../shared\"\n\n[[triggers]]\nname = \"b\"\nsource = \"github\"\nevents = [\"issues\"]\nsamples = \"C:\\\\x\"\n";
    let (mut file, root) = astrolift_manifest::toml_walk::TomlFile::parse("astrolift.toml", text);
    let specs = astrolift_manifest::triggers::validate_triggers(&mut file, root.get_ref());
    assert_eq!(specs[0].samples.as_deref(), Some("../shared"));
    assert_eq!(specs[1].samples, None);
    assert_eq!(codes(&file.diagnostics), ["trigger/invalid-samples"]);
}
