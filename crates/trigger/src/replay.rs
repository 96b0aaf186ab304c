//! What a changed binding does to a kept request (docs/reference.md §10, "Trigger replay"):
//! the request's outcome through the registered binding and through the head's, compared.
//! Pure: the evaluations happen elsewhere (in the jq sandbox); this module only compares
//! their outcomes and describes the difference.
//!
//! A difference names JSON paths with the value's type and length, never the value: the
//! kept bodies are tenant data, and a check run is read by everyone who can read the pull
//! request. The work is bounded: at most [`MAX_DIFF_PATHS`] paths per request, and no deeper
//! than [`MAX_DIFF_DEPTH`] levels (a deeper difference is reported at that level).

use std::collections::BTreeSet;
use std::fmt;

use serde::Serialize;
use serde_json::Value;

/// The most paths one request's difference lists; the rest are counted.
pub const MAX_DIFF_PATHS: usize = 20;
/// The deepest level a difference is looked for; below it, a subtree that differs is one
/// `changed` path.
pub const MAX_DIFF_DEPTH: usize = 16;

/// What one binding did with one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Dispatched, with this payload (`Value::Null` for the empty payload).
    Dispatched(Value),
    /// The filter dropped it.
    Filtered,
    /// The filter or the mapping failed (jq's error, or a payload that is not an object).
    Error(String),
}

/// How a request fared under the head's binding, against the registered one.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "class", rename_all = "snake_case")]
pub enum Replayed {
    /// The same outcome, the same payload.
    Unchanged,
    /// Dispatched by both, with payloads that differ.
    Changed { diff: PayloadDiff },
    /// Dispatched before, filtered now.
    NewlyFiltered,
    /// Filtered before, dispatched now.
    NewlyDispatched,
    /// The head's binding fails on it (`was_dispatched`: the registered one dispatched it);
    /// the error's text.
    Error { error: String, was_dispatched: bool },
}

impl Replayed {
    /// The head filters or errors on a request that dispatched: what the check run warns of.
    pub fn loses_a_dispatch(&self) -> bool {
        matches!(
            self,
            Replayed::NewlyFiltered
                | Replayed::Error {
                    was_dispatched: true,
                    ..
                }
        )
    }
}

/// Compares the head's `new` outcome of a request with the registered binding's `old`.
pub fn replay(old: &Outcome, new: &Outcome) -> Replayed {
    match (old, new) {
        (_, Outcome::Error(error)) => Replayed::Error {
            error: error.clone(),
            was_dispatched: matches!(old, Outcome::Dispatched(_)),
        },
        (Outcome::Dispatched(_), Outcome::Filtered) => Replayed::NewlyFiltered,
        (Outcome::Filtered | Outcome::Error(_), Outcome::Dispatched(_)) => {
            Replayed::NewlyDispatched
        }
        (Outcome::Dispatched(before), Outcome::Dispatched(after)) => {
            let diff = diff_payloads(before, after);
            if diff.is_empty() {
                Replayed::Unchanged
            } else {
                Replayed::Changed { diff }
            }
        }
        (Outcome::Filtered | Outcome::Error(_), Outcome::Filtered) => Replayed::Unchanged,
    }
}

/// The counts of a binding's replay.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ReplayCounts {
    pub unchanged: usize,
    pub changed: usize,
    pub newly_filtered: usize,
    pub newly_dispatched: usize,
    pub error: usize,
}

impl ReplayCounts {
    /// The counts of `replayed`.
    pub fn of<'a>(replayed: impl IntoIterator<Item = &'a Replayed>) -> Self {
        let mut counts = ReplayCounts::default();
        for one in replayed {
            match one {
                Replayed::Unchanged => counts.unchanged += 1,
                Replayed::Changed { .. } => counts.changed += 1,
                Replayed::NewlyFiltered => counts.newly_filtered += 1,
                Replayed::NewlyDispatched => counts.newly_dispatched += 1,
                Replayed::Error { .. } => counts.error += 1,
            }
        }
        counts
    }
}

/// A value's shape, shown instead of the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Shape {
    /// `null`, `boolean`, `number`, `string`, `array` or `object`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Characters of a string, items of an array, keys of an object; none for the rest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub length: Option<usize>,
}

impl Shape {
    pub fn of(value: &Value) -> Self {
        let (kind, length) = match value {
            Value::Null => ("null", None),
            Value::Bool(_) => ("boolean", None),
            Value::Number(_) => ("number", None),
            Value::String(text) => ("string", Some(text.chars().count())),
            Value::Array(items) => ("array", Some(items.len())),
            Value::Object(map) => ("object", Some(map.len())),
        };
        Shape { kind, length }
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.length {
            Some(length) => write!(f, "{} of {length}", self.kind),
            None => f.write_str(self.kind),
        }
    }
}

/// One path whose value differs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "change", rename_all = "snake_case")]
pub enum PathChange {
    Added {
        path: String,
        new: Shape,
    },
    Removed {
        path: String,
        old: Shape,
    },
    Changed {
        path: String,
        old: Shape,
        new: Shape,
    },
}

impl PathChange {
    /// `PATH added (string of 6)`, `PATH removed (…)`, `PATH changed (string of 6 → number)`,
    /// with the path as `path` shows it (plain, or a Markdown code span).
    pub fn describe(&self, path: impl Fn(&str) -> String) -> String {
        match self {
            PathChange::Added { path: at, new } => format!("{} added ({new})", path(at)),
            PathChange::Removed { path: at, old } => format!("{} removed ({old})", path(at)),
            PathChange::Changed { path: at, old, new } => {
                format!("{} changed ({old} → {new})", path(at))
            }
        }
    }
}

impl PayloadDiff {
    /// Every path's [`PathChange::describe`], `; `-separated, with the count of the rest.
    pub fn describe(&self, path: impl Fn(&str) -> String) -> String {
        let mut parts: Vec<String> = self.paths.iter().map(|c| c.describe(&path)).collect();
        if self.more > 0 {
            parts.push(format!("and {} more", self.more));
        }
        parts.join("; ")
    }
}

/// The paths of a payload that differ, at most [`MAX_DIFF_PATHS`], in path order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PayloadDiff {
    pub paths: Vec<PathChange>,
    /// Paths that differ beyond the ones listed.
    #[serde(skip_serializing_if = "is_zero")]
    pub more: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl PayloadDiff {
    pub fn is_empty(&self) -> bool {
        self.paths.is_empty() && self.more == 0
    }

    fn push(&mut self, change: PathChange) {
        if self.paths.len() < MAX_DIFF_PATHS {
            self.paths.push(change);
        } else {
            self.more += 1;
        }
    }
}

/// The difference between two payloads: the paths added, removed and changed, by shape.
pub fn diff_payloads(old: &Value, new: &Value) -> PayloadDiff {
    let mut diff = PayloadDiff::default();
    walk(&mut diff, &mut String::new(), old, new, 0);
    diff
}

fn walk(diff: &mut PayloadDiff, path: &mut String, old: &Value, new: &Value, depth: usize) {
    match (old, new) {
        (Value::Object(before), Value::Object(after)) if depth < MAX_DIFF_DEPTH => {
            let keys: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
            for key in keys {
                let len = path.len();
                push_key(path, key);
                match (before.get(key), after.get(key)) {
                    (Some(b), Some(a)) => walk(diff, path, b, a, depth + 1),
                    (Some(b), None) => diff.push(PathChange::Removed {
                        path: shown(path),
                        old: Shape::of(b),
                    }),
                    (None, Some(a)) => diff.push(PathChange::Added {
                        path: shown(path),
                        new: Shape::of(a),
                    }),
                    (None, None) => {}
                }
                path.truncate(len);
            }
        }
        (Value::Array(before), Value::Array(after))
            if depth < MAX_DIFF_DEPTH && before.len() == after.len() =>
        {
            for (index, (b, a)) in before.iter().zip(after).enumerate() {
                let len = path.len();
                path.push_str(&format!("[{index}]"));
                walk(diff, path, b, a, depth + 1);
                path.truncate(len);
            }
        }
        _ if old == new => {}
        _ => diff.push(PathChange::Changed {
            path: shown(path),
            old: Shape::of(old),
            new: Shape::of(new),
        }),
    }
}

/// `.key` for a plain key, `["key"]` (JSON-quoted) for any other, as jq writes paths.
fn push_key(path: &mut String, key: &str) {
    let plain = !key.is_empty()
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !key.starts_with(|c: char| c.is_ascii_digit());
    if plain {
        path.push('.');
        path.push_str(key);
    } else {
        path.push_str(&format!("[{}]", Value::String(key.to_owned())));
    }
}

fn shown(path: &str) -> String {
    if path.is_empty() {
        ".".to_owned()
    } else {
        path.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn dispatched(value: Value) -> Outcome {
        Outcome::Dispatched(value)
    }

    #[test]
    fn each_pair_of_outcomes_has_its_class() {
        let a = dispatched(json!({"x": 1}));
        let b = dispatched(json!({"x": 2}));
        let error = Outcome::Error("jq: error".into());
        assert_eq!(replay(&a, &a), Replayed::Unchanged);
        assert!(matches!(replay(&a, &b), Replayed::Changed { .. }));
        assert_eq!(replay(&a, &Outcome::Filtered), Replayed::NewlyFiltered);
        assert_eq!(replay(&Outcome::Filtered, &a), Replayed::NewlyDispatched);
        assert_eq!(
            replay(&Outcome::Filtered, &Outcome::Filtered),
            Replayed::Unchanged
        );
        assert!(replay(&a, &error).loses_a_dispatch());
        assert!(!replay(&Outcome::Filtered, &error).loses_a_dispatch());
        assert!(replay(&a, &Outcome::Filtered).loses_a_dispatch());
        let all = [replay(&a, &a), replay(&a, &b), replay(&a, &error)];
        let counts = ReplayCounts::of(&all);
        assert_eq!((counts.unchanged, counts.changed, counts.error), (1, 1, 1));
    }

    #[test]
    fn a_difference_names_paths_and_shapes_never_values() {
        let old =
            json!({"issue": "OPS-7", "title": "Checkout is down", "labels": ["p1"], "gone": 1});
        let new = json!({"issue": "OPS-7", "title": "secret-sentinel", "labels": ["p1", "p2"], "mode": true});
        let diff = diff_payloads(&old, &new);
        let shown = serde_json::to_string(&diff).expect("json");
        assert!(
            !shown.contains("secret-sentinel") && !shown.contains("Checkout"),
            "{shown}"
        );
        assert_eq!(
            diff.paths,
            vec![
                PathChange::Removed {
                    path: ".gone".into(),
                    old: Shape {
                        kind: "number",
                        length: None
                    }
                },
                PathChange::Changed {
                    path: ".labels".into(),
                    old: Shape {
                        kind: "array",
                        length: Some(1)
                    },
                    new: Shape {
                        kind: "array",
                        length: Some(2)
                    },
                },
                PathChange::Added {
                    path: ".mode".into(),
                    new: Shape {
                        kind: "boolean",
                        length: None
                    }
                },
                PathChange::Changed {
                    path: ".title".into(),
                    old: Shape {
                        kind: "string",
                        length: Some(16)
                    },
                    new: Shape {
                        kind: "string",
                        length: Some(15)
                    },
                },
            ]
        );
    }

    #[test]
    fn keys_that_are_not_plain_are_quoted_and_array_items_indexed() {
        let diff = diff_payloads(
            &json!({"a b": [1, {"c": 1}]}),
            &json!({"a b": [1, {"c": 2}]}),
        );
        assert_eq!(
            diff.paths,
            vec![PathChange::Changed {
                path: r#"["a b"][1].c"#.into(),
                old: Shape {
                    kind: "number",
                    length: None
                },
                new: Shape {
                    kind: "number",
                    length: None
                },
            }]
        );
        let whole = diff_payloads(&json!(1), &json!("1"));
        assert!(matches!(&whole.paths[0], PathChange::Changed { path, .. } if path == "."));
    }

    #[test]
    fn at_most_twenty_paths_are_listed_and_the_rest_counted() {
        let old: serde_json::Map<String, Value> = (0..MAX_DIFF_PATHS + 5)
            .map(|i| (format!("k{i:02}"), json!(i)))
            .collect();
        let diff = diff_payloads(&Value::Object(old), &json!({}));
        assert_eq!((diff.paths.len(), diff.more), (MAX_DIFF_PATHS, 5));
        let exactly: serde_json::Map<String, Value> = (0..MAX_DIFF_PATHS)
            .map(|i| (format!("k{i:02}"), json!(i)))
            .collect();
        let diff = diff_payloads(&Value::Object(exactly), &json!({}));
        assert_eq!((diff.paths.len(), diff.more), (MAX_DIFF_PATHS, 0));
    }

    #[test]
    fn a_difference_below_the_depth_limit_is_one_path_at_it() {
        let mut old = json!(1);
        let mut new = json!(2);
        for _ in 0..(MAX_DIFF_DEPTH + 10) {
            old = json!({ "n": old });
            new = json!({ "n": new });
        }
        let diff = diff_payloads(&old, &new);
        assert_eq!(diff.paths.len(), 1);
        let PathChange::Changed { path, old, .. } = &diff.paths[0] else {
            panic!("{diff:?}");
        };
        assert_eq!(path.matches(".n").count(), MAX_DIFF_DEPTH);
        assert_eq!(old.kind, "object");
    }
}
