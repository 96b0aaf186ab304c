//! The ordering rule: commit ancestry decides, never committer timestamps.
//! A fake oracle answers from a commit graph and counts the questions.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use astrolift_manifest::MemTree;
use astrolift_store::state::AgentKey;
use astrolift_sync::{CommitOrder, Order, OrderError, OrderFuture, Report, Stores};

use crate::harness::{Push, REPO, edit, monorepo, on_both_backends, run_pushed};

on_both_backends!(
    a_fast_forward_over_a_commit_dated_2099_applies_without_asking,
    a_descendant_applies,
    a_late_ancestor_is_skipped_and_says_why,
    a_force_push_applies,
    without_an_oracle_the_pushed_commit_applies,
    an_unanswered_comparison_fails_the_sync_retryably,
);

const TRIAGE: &str = "agents/triage/astrolift.toml";
/// 2099-01-01: a committer-chosen date far in the future.
const YEAR_2099: i64 = 4_070_908_800;

/// Parents per commit; `unreachable` makes every comparison fail.
#[derive(Debug, Default)]
struct Graph {
    parents: HashMap<&'static str, Vec<&'static str>>,
    asked: AtomicUsize,
    unreachable: bool,
}

impl Graph {
    /// `root ← c1 ← c2`, and `c1 ← forced` (a rewritten history).
    fn linear_and_forced() -> Arc<Self> {
        let parents = HashMap::from([
            ("root", vec![]),
            ("c1", vec!["root"]),
            ("c2", vec!["c1"]),
            ("forced", vec!["c1"]),
        ]);
        Arc::new(Self {
            parents,
            ..Self::default()
        })
    }

    fn ancestry<'a>(&'a self, sha: &'a str) -> BTreeSet<&'a str> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![sha];
        while let Some(commit) = stack.pop() {
            if seen.insert(commit) {
                stack.extend(self.parents.get(commit).into_iter().flatten().copied());
            }
        }
        seen
    }

    fn asked(&self) -> usize {
        self.asked.load(Ordering::SeqCst)
    }
}

impl CommitOrder for Graph {
    fn compare<'a>(&'a self, registered: &'a str, pushed: &'a str) -> OrderFuture<'a> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        let answer = if self.unreachable {
            Err(OrderError {
                registered: registered.to_owned(),
                pushed: pushed.to_owned(),
                reason: "GitHub answered 503".to_owned(),
                retryable: true,
            })
        } else if registered == pushed {
            Ok(Order::Same)
        } else if self.ancestry(pushed).contains(registered) {
            Ok(Order::Newer)
        } else if self.ancestry(registered).contains(pushed) {
            Ok(Order::Older)
        } else {
            Ok(Order::Diverged)
        };
        Box::pin(async move { answer })
    }
}

fn pushed(before: Option<&str>, graph: &Arc<Graph>) -> Push {
    Push {
        before: before.map(str::to_owned),
        order: Some(graph.clone() as Arc<dyn CommitOrder>),
    }
}

/// A tree whose triage agent differs from the example's, so applying it changes state.
fn edited() -> MemTree {
    let mut tree = monorepo();
    edit(&mut tree, TRIAGE, "max_retries = 3", "max_retries = 4");
    tree
}

async fn apply(stores: &Stores, tree: &MemTree, commit: &str, time: i64, push: Push) -> Report {
    run_pushed(stores, tree, commit, time, true, push)
        .await
        .expect("sync succeeds")
}

async fn registered_commit(stores: &Stores) -> String {
    let agent = stores
        .state
        .get_agent(&AgentKey::new(REPO, TRIAGE))
        .await
        .expect("read")
        .expect("registered");
    agent.commit
}

async fn a_fast_forward_over_a_commit_dated_2099_applies_without_asking(stores: &Stores) {
    let graph = Graph::linear_and_forced();
    apply(stores, &monorepo(), "c1", YEAR_2099, pushed(None, &graph)).await;
    let next = apply(stores, &edited(), "c2", 100, pushed(Some("c1"), &graph)).await;
    assert!(next.applied, "{:?}", next.skipped);
    assert_eq!(registered_commit(stores).await, "c2");
    assert_eq!(graph.asked(), 0, "a fast-forward needs no comparison");
}

async fn a_descendant_applies(stores: &Stores) {
    let graph = Graph::linear_and_forced();
    apply(stores, &monorepo(), "c1", YEAR_2099, pushed(None, &graph)).await;
    // `before` unknown (a job queued before it existed): the oracle decides.
    let next = apply(stores, &edited(), "c2", 100, pushed(None, &graph)).await;
    assert!(next.applied, "{:?}", next.skipped);
    assert_eq!(registered_commit(stores).await, "c2");
    assert_eq!(graph.asked(), 1);
}

async fn a_late_ancestor_is_skipped_and_says_why(stores: &Stores) {
    let graph = Graph::linear_and_forced();
    apply(stores, &edited(), "c2", 100, pushed(None, &graph)).await;
    // c1 arrives late, and claims a later committer time: ancestry wins.
    let late = apply(
        stores,
        &monorepo(),
        "c1",
        YEAR_2099,
        pushed(Some("root"), &graph),
    )
    .await;
    assert!(!late.applied);
    assert_eq!(
        late.skipped.as_deref(),
        Some("commit c1 is an ancestor of c2, already registered for main; nothing was written")
    );
    assert_eq!(registered_commit(stores).await, "c2");
}

async fn a_force_push_applies(stores: &Stores) {
    let graph = Graph::linear_and_forced();
    apply(stores, &edited(), "c2", YEAR_2099, pushed(None, &graph)).await;
    let forced = apply(
        stores,
        &monorepo(),
        "forced",
        100,
        pushed(Some("c2"), &graph),
    )
    .await;
    // `before` is c2 here (GitHub reports the overwritten head): no call.
    assert!(forced.applied, "{:?}", forced.skipped);
    assert_eq!(registered_commit(stores).await, "forced");
    let graph = Graph::linear_and_forced();
    let back = apply(stores, &edited(), "c2", 100, pushed(Some("x"), &graph)).await;
    assert!(back.applied, "diverged applies: {:?}", back.skipped);
    assert_eq!(graph.asked(), 1);
    assert_eq!(registered_commit(stores).await, "c2");
}

async fn without_an_oracle_the_pushed_commit_applies(stores: &Stores) {
    apply(stores, &edited(), "c2", YEAR_2099, Push::default()).await;
    let local = apply(stores, &monorepo(), "c1", 100, Push::default()).await;
    assert!(local.applied, "{:?}", local.skipped);
    assert_eq!(registered_commit(stores).await, "c1");
}

async fn an_unanswered_comparison_fails_the_sync_retryably(stores: &Stores) {
    let graph = Graph::linear_and_forced();
    apply(stores, &edited(), "c2", 100, pushed(None, &graph)).await;
    let down = Arc::new(Graph {
        unreachable: true,
        ..Graph::default()
    });
    let error = run_pushed(stores, &monorepo(), "c1", 200, true, pushed(None, &down))
        .await
        .expect_err("the rule cannot be decided");
    assert!(error.is_retryable(), "{error}");
    assert_eq!(registered_commit(stores).await, "c2");
}
