//! The sync's sample checker (docs/reference.md §5.5, "Samples"): each binding's sample
//! requests evaluated in the jq sandbox by `astrolift_trigger::samples::check_samples`.
//! Here, not in `astrolift-trigger`, because the bot is where the pipeline and the trigger
//! runtime meet: neither crate depends on the other.

use astrolift_manifest::model::AgentManifest;
use astrolift_manifest::{Diagnostic, Limits, SourceTree};
use astrolift_store::BoxFuture;
use astrolift_sync::samples::SampleChecker;
use astrolift_trigger::samples::check_samples;

/// Evaluates samples in this process's jq sandbox, under `limits`.
#[derive(Debug, Clone, Copy)]
pub struct SandboxSamples {
    pub limits: Limits,
}

impl SampleChecker for SandboxSamples {
    fn check<'a>(
        &'a self,
        tree: &'a dyn SourceTree,
        agents: &'a [AgentManifest],
    ) -> BoxFuture<'a, Vec<Diagnostic>> {
        Box::pin(check_samples(tree, agents, &self.limits))
    }
}
