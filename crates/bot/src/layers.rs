//! After a sync: hand the agents whose packages need dependency layers to the packager
//! agent (docs/reference.md "Dependency layers"), and put what became of each on the
//! report, so the check run shows it. The one step `check --apply`, `serve` and the sync
//! function share.

use std::sync::Arc;

use astrolift_dispatch::content::{BlobContent, UrlOptions};
use astrolift_dispatch::dispatch::DispatchQueue;
use astrolift_dispatch::layers::{
    LayerOutcome, PACKAGER_AGENT_ENV, PackagerContext, request_layers,
};
use astrolift_dispatch::workflow::RecordingDispatcher;
use astrolift_manifest::{Diagnostic, Limits, Span};
use astrolift_package::codes::{PACKAGER_DISPATCHED, PACKAGER_FAILED, PACKAGER_NOT_CONFIGURED};
use astrolift_store::state::UnixSeconds;
use astrolift_store::state::{LayerBuild, LayerRequest, LayerStatus};
use astrolift_store::{StateStore, StoreResult};
use astrolift_sync::Report;
use astrolift_sync::Stores;

use crate::config::Environment;
use crate::triggers::{TriggerSetupError, callback_base_from_env, dispatch_queue_from_env};

/// What packager dispatches go through: the dispatch queue, the content source of the
/// packager's own package, `ASTROLIFT_PACKAGER_AGENT` and the callback base. Workflow
/// stages that reconcile dispatches again go through the same parts
/// ([`LayerPackager::stage_dispatcher`]).
#[derive(Debug, Clone)]
pub struct LayerPackager {
    pub queue: Arc<dyn DispatchQueue>,
    pub content: BlobContent,
    /// `ASTROLIFT_PACKAGER_AGENT`; `None` when unset or empty.
    pub packager: Option<String>,
    pub callback_base: Option<String>,
}

impl LayerPackager {
    /// From the environment, on `stores`: the dispatch queue `serve`, the functions and
    /// `astrolift dispatch` share ([`dispatch_queue_from_env`]).
    pub async fn from_env(
        stores: &Stores,
        aws: Option<&Environment>,
    ) -> Result<Self, TriggerSetupError> {
        let queue = dispatch_queue_from_env(&stores.state, aws).await?;
        let urls = UrlOptions::from_env().map_err(TriggerSetupError::Config)?;
        Ok(LayerPackager {
            queue,
            content: BlobContent::new(Arc::clone(&stores.blobs), urls, Limits::DEFAULT),
            packager: packager_from_env(),
            callback_base: callback_base_from_env(),
        })
    }

    /// The dispatcher of workflow stages through the same queue, content and callback
    /// base: what reconcile dispatches a due retry with ([`crate::reconcile`]).
    pub fn stage_dispatcher<'a>(&'a self, state: &'a dyn StateStore) -> RecordingDispatcher<'a> {
        RecordingDispatcher {
            state,
            queue: Some(self.queue.as_ref()),
            content: &self.content,
            callback_base: self.callback_base.as_deref(),
        }
    }

    /// Requests the layers `report.layer_needs` lists and adds one diagnostic per
    /// outcome that is not a reuse (a notice for a packager dispatch, a warning when no
    /// packager can be dispatched), each after a warning naming the failed packager
    /// dispatch of its layer build, if its last one failed (docs/reference.md §16). A store
    /// failure is `Err`.
    pub async fn request(
        &self,
        stores: &Stores,
        report: &mut Report,
        now: UnixSeconds,
    ) -> StoreResult<()> {
        if report.layer_needs.is_empty() {
            return Ok(());
        }
        let context = PackagerContext {
            state: stores.state.as_ref(),
            queue: self.queue.as_ref(),
            content: &self.content,
            packager: self.packager.as_deref(),
            callback_base: self.callback_base.as_deref(),
            now,
        };
        let mut failed = Vec::with_capacity(report.layer_needs.len());
        for request in &report.layer_needs {
            let build = stores
                .state
                .layers()
                .get_layer_build(&request.layer_key)
                .await?;
            failed.push(build.filter(|b| b.status == LayerStatus::Failed));
        }
        let outcomes = request_layers(context, &report.layer_needs).await?;
        let found: Vec<_> = report
            .layer_needs
            .iter()
            .zip(&outcomes)
            .zip(&failed)
            .flat_map(|((request, outcome), failed)| {
                let failed = failed.as_ref().map(|build| failed_run(build, request));
                failed.into_iter().chain(diagnostic(outcome, request))
            })
            .collect();
        report.add_diagnostics(found);
        Ok(())
    }
}

/// `ASTROLIFT_PACKAGER_AGENT`, when set and not empty.
pub fn packager_from_env() -> Option<String> {
    std::env::var(PACKAGER_AGENT_ENV)
        .ok()
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
}

/// The check-run warning of `build`, the failed layer build of `request`'s key: which
/// packager dispatch failed, and the error it returned.
pub fn failed_run(build: &LayerBuild, request: &LayerRequest) -> Diagnostic {
    let key = short_key(request);
    let dispatch = build
        .dispatch_id
        .as_deref()
        .map_or_else(String::new, |id| format!(" ({id})"));
    let error = build.error.as_deref().unwrap_or("no error was given");
    let message = format!(
        "{}: the last packager dispatch{dispatch} for dependency layers {key} failed: {error}",
        request.name
    );
    Diagnostic::new(
        &PACKAGER_FAILED,
        request.manifest_path.clone(),
        Span::FILE,
        message,
    )
}

/// The first 12 digits of `request`'s layer key, as the diagnostics name it.
fn short_key(request: &LayerRequest) -> &str {
    request.layer_key.get(..12).unwrap_or(&request.layer_key)
}

/// The check-run diagnostic of `outcome` for `request`, on its manifest (none for a reuse).
pub fn diagnostic(outcome: &LayerOutcome, request: &LayerRequest) -> Option<Diagnostic> {
    let key = short_key(request);
    let name = &request.name;
    let (code, message) = match outcome {
        LayerOutcome::Reused => return None,
        LayerOutcome::InFlight => (
            &PACKAGER_DISPATCHED,
            format!(
                "{name}: dependency layers {key} are being built by the packager agent; the agent is layers-pending until they arrive"
            ),
        ),
        LayerOutcome::Dispatched { dispatch_id } => (
            &PACKAGER_DISPATCHED,
            format!(
                "{name}: the packager agent was dispatched ({dispatch_id}) to build dependency layers {key}; the agent is layers-pending until they arrive"
            ),
        ),
        LayerOutcome::NoPackager { reason } => (
            &PACKAGER_NOT_CONFIGURED,
            format!(
                "{name}: the package needs dependency layers, but {reason}: the agent is registered layers-pending and its dispatches are refused"
            ),
        ),
        LayerOutcome::Failed { error } => (
            &PACKAGER_FAILED,
            format!(
                "{name}: the packager agent could not be dispatched for dependency layers {key}: {error}"
            ),
        ),
    };
    let diagnostic = Diagnostic::new(code, request.manifest_path.clone(), Span::FILE, message);
    Some(match outcome {
        LayerOutcome::NoPackager { .. } => diagnostic.with_help(format!(
            "register a packager agent (examples/layers/agents/packager is one; docs/reference.md §16) and set {PACKAGER_AGENT_ENV} to its name, then sync again"
        )),
        _ => diagnostic,
    })
}
