//! `GET /repos/{owner}/{repo}/compare/{base}...{head}` over a commit graph
//! the test sets (parents per SHA), with GitHub's `status`, `ahead_by` and
//! `behind_by`; 404 for a SHA the graph does not know, as on GitHub.

use std::collections::{BTreeSet, HashMap};

use axum::extract::{Path, State as AxumState};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::json;

use crate::{Shared, bad_credentials, github_error, json_response, valid_token};

const DOCS: &str = "https://docs.github.com/rest/commits/commits#compare-two-commits";

/// Parents per commit SHA, for one repository.
pub(crate) type CommitGraph = HashMap<String, Vec<String>>;

pub(crate) async fn compare(
    AxumState(state): AxumState<Shared>,
    Path((owner, repo, basehead)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    let state = state.lock();
    if !valid_token(&state, &headers) {
        return bad_credentials();
    }
    let Some((base, head)) = basehead.split_once("...") else {
        return github_error(StatusCode::NOT_FOUND, "Not Found", DOCS);
    };
    let Some(graph) = state.commit_graphs.get(&(owner, repo)) else {
        return github_error(StatusCode::NOT_FOUND, "Not Found", DOCS);
    };
    let (Some(base_ancestry), Some(head_ancestry)) = (ancestry(graph, base), ancestry(graph, head))
    else {
        return github_error(StatusCode::NOT_FOUND, "Not Found", DOCS);
    };
    let ahead_by = head_ancestry.difference(&base_ancestry).count();
    let behind_by = base_ancestry.difference(&head_ancestry).count();
    let status = match (ahead_by, behind_by) {
        (0, 0) => "identical",
        (_, 0) => "ahead",
        (0, _) => "behind",
        _ => "diverged",
    };
    let body = json!({
        "status": status,
        "ahead_by": ahead_by,
        "behind_by": behind_by,
        "total_commits": ahead_by,
        "base_commit": { "sha": base },
        "commits": [],
        "files": [],
    });
    json_response(StatusCode::OK, body, HeaderMap::new())
}

/// `sha` and every commit reachable from it; `None` when the graph does not know `sha`.
fn ancestry(graph: &CommitGraph, sha: &str) -> Option<BTreeSet<String>> {
    if !graph.contains_key(sha) {
        return None;
    }
    let mut seen = BTreeSet::new();
    let mut stack = vec![sha.to_owned()];
    while let Some(commit) = stack.pop() {
        if seen.insert(commit.clone()) {
            stack.extend(graph.get(&commit).into_iter().flatten().cloned());
        }
    }
    Some(seen)
}
