//! Trigger samples in the pipeline (docs/reference.md §5.5, "Samples"): the caller's
//! [`SampleChecker`] evaluates each binding's `samples` folder right after validation, and
//! its findings join the validation's diagnostics, so a `trigger/sample-mismatch` fails its
//! agent as any validation error does.
//!
//! The pipeline evaluates no jq itself: evaluation needs the sandbox (`astrolift-trigger`),
//! which only a binary that called `astrolift_jq::sandbox::init` runs, so the checker is the
//! caller's (the bot's `SandboxSamples`). Without one (`SyncRequest::samples` is `None`)
//! samples are not evaluated.

use std::fmt::Debug;

use astrolift_manifest::model::AgentManifest;
use astrolift_manifest::{Diagnostic, SourceTree};
use astrolift_store::BoxFuture;

/// Evaluates the `samples` folders of `agents`' bindings in `tree` and returns the
/// findings (see `astrolift_trigger::samples::check_samples`).
pub trait SampleChecker: Debug + Send + Sync {
    fn check<'a>(
        &'a self,
        tree: &'a dyn SourceTree,
        agents: &'a [AgentManifest],
    ) -> BoxFuture<'a, Vec<Diagnostic>>;
}
