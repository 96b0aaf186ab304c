//! Config manifests: includes, deep merge, file references, secrets.

use astrolift_manifest::config::{
    ConfigOptions, ConfigResult, deep_merge, load_config, load_config_with,
};
use std::borrow::Cow;

use astrolift_manifest::{FileEntry, Limits, MemTree, ReadError, SourceTree};
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::h5_support::{codes, fixture, render};

fn load(case: &str) -> ConfigResult {
    load_config(&fixture(case), "config.toml", &Limits::DEFAULT)
}

fn snapshot(case: &str, result: &ConfigResult) -> Value {
    json!({
        "case": case,
        "diagnostics": render(&result.diagnostics),
        "document": result.document,
        "origins": result.origins,
    })
}

#[test]
fn valid_config_assembles_with_origins_and_executables() {
    let result = load("config_valid");
    assert!(
        result.diagnostics.is_empty(),
        "{:?}",
        render(&result.diagnostics)
    );
    assert_eq!(
        result.files,
        ["config.toml", "base/runtime.toml", "skills/emr.toml"]
    );
    assert_eq!(
        result.document["skills"]["triage"]["scripts"][0]["executable"],
        json!(true)
    );
    assert_eq!(
        result.document["skills"]["emr"]["scripts"][0]["path"],
        json!("skills/emr/fetch.sh")
    );
    assert_eq!(result.origins["/environment/LOG_LEVEL"], "config.toml");
    assert_eq!(result.origins["/environment/REGION"], "base/runtime.toml");
    insta::assert_yaml_snapshot!("config_valid", snapshot("config_valid", &result));
}

#[test]
fn later_includes_win_then_the_main_file_and_arrays_are_replaced() {
    let result = load("config_merge_order");
    assert!(
        result.diagnostics.is_empty(),
        "{:?}",
        render(&result.diagnostics)
    );
    let env = &result.document["environment"];
    assert_eq!(
        (&env["A"], &env["B"], &env["C"]),
        (&json!("first"), &json!("second"), &json!("main"))
    );
    assert_eq!(
        result.document["skills"]["triage"]["tools"],
        json!(["main-tool"])
    );
    assert_eq!(
        result.document["skills"]["writer"]["tools"],
        json!(["second-writer"])
    );
    assert_eq!(result.origins["/skills/writer/tools"], "second.toml");
    insta::assert_yaml_snapshot!(
        "config_merge_order",
        snapshot("config_merge_order", &result)
    );
}

#[test]
fn include_cycle_names_the_whole_cycle() {
    let result = load("config_cycle");
    assert_eq!(codes(&result.diagnostics), ["config/include-cycle"]);
    assert!(
        result.diagnostics[0]
            .message
            .contains("a.toml → nested/b.toml → a.toml")
    );
    assert_eq!(result.diagnostics[0].path, "nested/b.toml");
    insta::assert_yaml_snapshot!("config_cycle", render(&result.diagnostics));
}

#[test]
fn sixteen_levels_of_includes_are_allowed() {
    let result = load("config_depth_16");
    assert!(
        result.diagnostics.is_empty(),
        "{:?}",
        render(&result.diagnostics)
    );
    assert_eq!(result.document["environment"]["DEEPEST"], json!("l16"));
}

#[test]
fn the_seventeenth_level_is_an_error_on_the_include_entry() {
    let result = load("config_depth_17");
    assert_eq!(codes(&result.diagnostics), ["config/include-depth"]);
    assert_eq!(result.diagnostics[0].path, "l16.toml");
    insta::assert_yaml_snapshot!("config_depth_17", render(&result.diagnostics));
}

#[test]
fn include_errors_point_at_each_entry() {
    let result = load("config_include_errors");
    insta::assert_yaml_snapshot!("config_include_errors", render(&result.diagnostics));
    assert_eq!(
        codes(&result.diagnostics),
        [
            "config/include-missing",
            "config/path-escape",
            "config/path-escape",
            "config/not-utf8"
        ]
    );
    let lines: Vec<u32> = result.diagnostics.iter().map(|d| d.span.line).collect();
    assert_eq!(lines, [2, 3, 4, 5]);
}

#[test]
fn referenced_files_must_exist_and_prompts_be_utf8() {
    let result = load("config_files");
    insta::assert_yaml_snapshot!("config_files", snapshot("config_files", &result));
    let found = codes(&result.diagnostics);
    for code in [
        "config/not-utf8",
        "config/missing-file",
        "config/path-escape",
    ] {
        assert!(found.contains(&code), "{code} missing from {found:?}");
    }
}

#[test]
fn environment_and_secrets_rules() {
    let result = load("config_env_secrets");
    let rendered = render(&result.diagnostics);
    insta::assert_yaml_snapshot!(
        "config_env_secrets",
        snapshot("config_env_secrets", &result)
    );
    let all = rendered.join("\n");
    assert!(!all.contains("hunter2"), "a plaintext secret was echoed");
    assert!(!all.contains("sk-live"), "a plaintext secret was echoed");
    assert!(
        result.document["environment"]
            .get("ASTROLIFT_TASK_ID")
            .is_none()
    );
    assert_eq!(result.document["skill_slug"], json!("triage"));
    let found = codes(&result.diagnostics);
    for code in [
        "config/skill-slug-alias",
        "config/reserved-env",
        "config/plaintext-secret",
        "config/invalid-skill-slug",
        "toml/wrong-type",
        "toml/unknown-key",
    ] {
        assert!(found.contains(&code), "{code} missing from {found:?}");
    }
}

#[test]
fn unknown_keys_get_did_you_mean() {
    let result = load("config_unknown_keys");
    insta::assert_yaml_snapshot!("config_unknown_keys", render(&result.diagnostics));
    assert!(
        result
            .diagnostics
            .iter()
            .all(|d| d.code == "toml/unknown-key")
    );
    assert!(result.diagnostics.iter().all(|d| {
        d.help
            .as_deref()
            .is_some_and(|h| h.starts_with("did you mean"))
    }));
}

#[test]
fn files_without_a_blob_store_are_an_error() {
    let tree = fixture("config_no_blob_store");
    let with_store = load_config(&tree, "config.toml", &Limits::DEFAULT);
    assert!(with_store.diagnostics.is_empty());
    let options = ConfigOptions {
        limits: Limits::DEFAULT,
        blob_store: false,
    };
    let without = load_config_with(&tree, "config.toml", &options);
    insta::assert_yaml_snapshot!("config_no_blob_store", render(&without.diagnostics));
    assert_eq!(codes(&without.diagnostics), ["config/no-blob-store"]);
}

#[test]
fn a_missing_main_file_is_a_diagnostic() {
    let result = load_config(&MemTree::new(), "nope.toml", &Limits::DEFAULT);
    assert_eq!(codes(&result.diagnostics), ["config/missing-file"]);
    assert_eq!(result.to_json(false), json!({}));
}

#[test]
fn assemble_json_with_origins() {
    let tree = MemTree::from_files([("c.toml", "[environment]\nA = \"1\"\n")]);
    let result = load_config(&tree, "c.toml", &Limits::DEFAULT);
    assert_eq!(
        result.to_json(true),
        json!({"document": {"environment": {"A": "1"}}, "origins": {"/environment/A": "c.toml"}})
    );
}

/// Documents shaped like config manifests: a key is either always a table or
/// never one (the schema fixes it, and a value of the wrong type is dropped
/// with a diagnostic before merging). Here keys `t`–`w` hold tables and keys
/// `a`–`d` hold scalars or arrays.
fn config_like() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        any::<bool>().prop_map(Value::from),
        (0i64..5).prop_map(Value::from),
        "[a-c]{0,2}".prop_map(Value::from),
        prop::collection::vec((0i64..3).prop_map(Value::from), 0..3).prop_map(Value::from),
    ];
    let table = prop::collection::btree_map("[a-d]", leaf.clone(), 0..4)
        .prop_map(|m| Value::Object(m.into_iter().collect()));
    table.prop_recursive(3, 32, 4, move |inner| {
        (
            prop::collection::btree_map("[a-d]", leaf.clone(), 0..4),
            prop::collection::btree_map("[t-w]", inner, 0..3),
        )
            .prop_map(|(leaves, tables)| Value::Object(leaves.into_iter().chain(tables).collect()))
    })
}

fn merged(mut a: Value, b: Value) -> Value {
    deep_merge(&mut a, b);
    a
}

proptest! {
    /// Later wins, tables merge: merge(merge(a,b),c) == merge(a,merge(b,c)).
    #[test]
    fn deep_merge_is_associative(a in config_like(), b in config_like(), c in config_like()) {
        let left = merged(merged(a.clone(), b.clone()), c.clone());
        let right = merged(a, merged(b, c));
        prop_assert_eq!(left, right);
    }

    /// The later value always wins on scalars and arrays.
    #[test]
    fn later_wins(a in config_like(), b in config_like()) {
        let result = merged(a, b.clone());
        if let Value::Object(b) = b {
            for (key, value) in b {
                if !value.is_object() {
                    prop_assert_eq!(&result[&key], &value);
                }
            }
        }
    }
}

#[test]
fn a_file_included_twice_is_not_a_cycle() {
    let result = load("config_diamond");
    assert!(
        result.diagnostics.is_empty(),
        "{:?}",
        render(&result.diagnostics)
    );
    assert_eq!(
        result.document["environment"],
        json!({"BASE": "yes", "SIDE": "right"})
    );
    assert_eq!(result.origins["/environment/SIDE"], "right.toml");
    assert_eq!(result.origins["/environment/BASE"], "shared/base.toml");
}

#[test]
fn problems_inside_included_files_are_reported_in_those_files() {
    let result = load("config_included_errors");
    insta::assert_yaml_snapshot!("config_included_errors", render(&result.diagnostics));
    let paths: Vec<&str> = result.diagnostics.iter().map(|d| d.path.as_str()).collect();
    assert!(paths.contains(&"parts/broken.toml"), "{paths:?}");
    assert!(paths.contains(&"parts/typo.toml"), "{paths:?}");
    assert!(paths.contains(&"config.toml"), "{paths:?}");
    assert_eq!(result.document["environment"]["MAIN"], json!("ok"));
}

/// A tree that counts the files read through it: work, measured without a clock.
struct CountingTree<T> {
    inner: T,
    reads: std::sync::atomic::AtomicUsize,
}

impl<T: SourceTree> CountingTree<T> {
    fn new(inner: T) -> Self {
        Self {
            inner,
            reads: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    fn reads(&self) -> usize {
        self.reads.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl<T: SourceTree> SourceTree for CountingTree<T> {
    fn entries(&self) -> &[FileEntry] {
        self.inner.entries()
    }

    fn read(&self, path: &str, limit: u64) -> Result<Cow<'_, [u8]>, ReadError> {
        self.reads
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.inner.read(path, limit)
    }
}

#[test]
fn six_files_that_each_include_the_next_sixteen_times_load_six_files() {
    // Without loading each file once this is 16⁵ loads (over a million).
    let tree = CountingTree::new(fixture("config_fanout_16x16"));
    let result = load_config(&tree, "config.toml", &Limits::DEFAULT);
    assert_eq!(tree.reads(), 6, "each file is read once");
    assert_eq!(
        result.files,
        [
            "config.toml",
            "f1.toml",
            "f2.toml",
            "f3.toml",
            "f4.toml",
            "f5.toml"
        ]
    );
    // One warning per file that repeats an include; nothing else.
    assert_eq!(codes(&result.diagnostics), ["config/duplicate-include"; 5]);
    assert_eq!(result.diagnostics[0].span.line, 4, "on the first repeat");
    let env = &result.document["environment"];
    assert_eq!(env.as_object().map(|e| e.len()), Some(6));
    assert_eq!(result.origins["/environment/LEVEL_5"], "f5.toml");
    insta::assert_yaml_snapshot!(
        "config_fanout_16x16",
        snapshot("config_fanout_16x16", &result)
    );
}

#[test]
fn the_sixteen_by_sixteen_graph_seventeen_deep_is_one_depth_error() {
    // 16¹⁷ loads without memoization: it would never finish.
    let tree = CountingTree::new(fixture("config_fanout_16x16_deep"));
    let result = load_config(&tree, "config.toml", &Limits::DEFAULT);
    assert_eq!(tree.reads(), 17, "f17.toml, level 17, is never read");
    assert_eq!(result.files.len(), 17);
    let errors: Vec<_> = result.diagnostics.iter().filter(|d| d.is_error()).collect();
    assert_eq!(errors.len(), 1, "{:?}", render(&result.diagnostics));
    assert_eq!(errors[0].code, "config/include-depth");
    assert_eq!(
        (errors[0].path.as_str(), errors[0].span.line),
        ("f16.toml", 3)
    );
    assert_eq!(
        result.document["environment"]["LEVEL_16"],
        json!("f16.toml")
    );
}

/// `config.toml` including `count` distinct files, one per line from line 2.
fn flat_includes(count: usize) -> MemTree {
    let mut main = String::from("include = [\n");
    let mut files = Vec::new();
    for n in 1..=count {
        main.push_str(&format!("  \"parts/p{n:03}.toml\",\n"));
        files.push((
            format!("parts/p{n:03}.toml"),
            format!("[environment]\nP{n:03} = \"{n}\"\n"),
        ));
    }
    main.push_str("]\n");
    files.push(("config.toml".to_owned(), main));
    MemTree::from_files(files)
}

#[test]
fn two_hundred_fifty_six_files_load_and_one_more_is_an_error_on_its_include() {
    let limit = Limits::DEFAULT.config_files;
    assert_eq!(limit, 256);
    let at_limit = CountingTree::new(flat_includes(limit - 1));
    let result = load_config(&at_limit, "config.toml", &Limits::DEFAULT);
    assert!(
        result.diagnostics.is_empty(),
        "{:?}",
        render(&result.diagnostics)
    );
    assert_eq!((result.files.len(), at_limit.reads()), (256, 256));

    let over = CountingTree::new(flat_includes(limit));
    let result = load_config(&over, "config.toml", &Limits::DEFAULT);
    assert_eq!(
        (result.files.len(), over.reads()),
        (256, 256),
        "file 257 is not read"
    );
    assert_eq!(codes(&result.diagnostics), ["config/too-many-includes"]);
    let diagnostic = &result.diagnostics[0];
    assert_eq!(
        (diagnostic.path.as_str(), diagnostic.span.line),
        ("config.toml", 257),
        "on the 256th include entry (line 1 is `include = [`)"
    );
    assert!(diagnostic.message.contains("parts/p256.toml"));
    assert_eq!(result.document["environment"]["P255"], json!("255"));
    assert!(result.document["environment"].get("P256").is_none());
    insta::assert_yaml_snapshot!("config_too_many_includes", render(&result.diagnostics));
}

#[test]
fn a_file_reused_deeper_than_the_limit_allows_is_a_depth_error_where_it_is_reused() {
    // `shared.toml` (one level of includes below it) is loaded first at
    // level 1, then reached again at level 16 through a chain.
    let mut files = vec![
        (
            "config.toml".to_owned(),
            "include = [\"shared.toml\", \"c1.toml\"]\n".to_owned(),
        ),
        (
            "shared.toml".to_owned(),
            "include = [\"leaf.toml\"]\n".to_owned(),
        ),
        (
            "leaf.toml".to_owned(),
            "[environment]\nLEAF = \"yes\"\n".to_owned(),
        ),
    ];
    for n in 1..=15 {
        let next = if n == 15 {
            "shared.toml".to_owned()
        } else {
            format!("c{}.toml", n + 1)
        };
        files.push((format!("c{n}.toml"), format!("include = [\"{next}\"]\n")));
    }
    let tree = CountingTree::new(MemTree::from_files(files));
    let result = load_config(&tree, "config.toml", &Limits::DEFAULT);
    assert_eq!(tree.reads(), 18, "every file once");
    assert_eq!(codes(&result.diagnostics), ["config/include-depth"]);
    let diagnostic = &result.diagnostics[0];
    assert_eq!(diagnostic.path, "c15.toml");
    assert!(
        diagnostic.message.contains("level 17"),
        "{}",
        diagnostic.message
    );
    // The first, allowed inclusion still applies.
    assert_eq!(result.document["environment"]["LEAF"], json!("yes"));
}

#[test]
fn a_repeated_include_applies_at_its_last_position() {
    let tree = MemTree::from_files([
        (
            "config.toml",
            "include = [\"b.toml\", \"c.toml\", \"b.toml\"]\n",
        ),
        ("b.toml", "[environment]\nWHO = \"b\"\nB = \"b\"\n"),
        ("c.toml", "[environment]\nWHO = \"c\"\nC = \"c\"\n"),
    ]);
    let result = load_config(&tree, "config.toml", &Limits::DEFAULT);
    assert_eq!(codes(&result.diagnostics), ["config/duplicate-include"]);
    assert_eq!(
        result.document["environment"],
        json!({"WHO": "b", "B": "b", "C": "c"})
    );
    assert_eq!(result.origins["/environment/WHO"], "b.toml");
    assert_eq!(result.files, ["config.toml", "b.toml", "c.toml"]);
}

#[test]
fn an_unreadable_include_is_read_once_and_reported_at_every_entry() {
    let tree = CountingTree::new(MemTree::from_files([
        (
            "config.toml",
            b"include = [\"a.toml\", \"b.toml\"]\n".as_slice(),
        ),
        ("a.toml", b"include = [\"bad.toml\"]\n"),
        ("b.toml", b"include = [\"bad.toml\"]\n"),
        ("bad.toml", b"\xff\xfe"),
    ]));
    let result = load_config(&tree, "config.toml", &Limits::DEFAULT);
    assert_eq!(codes(&result.diagnostics), ["config/not-utf8"; 2]);
    let paths: Vec<&str> = result.diagnostics.iter().map(|d| d.path.as_str()).collect();
    assert_eq!(paths, ["a.toml", "b.toml"]);
    assert_eq!(tree.reads(), 4, "bad.toml is read once");
}
