//! The `sync` Lambda binary: build the runner once, then serve SQS batches and the
//! reconcile schedule's events.
#![forbid(unsafe_code)]

use astrolift_bot::config::Environment;
use astrolift_bot::telemetry;
use astrolift_fn_sync::{Invocation, SyncFunction};
use lambda_runtime::{Error, LambdaEvent, service_fn};

fn main() -> Result<(), Error> {
    // First of all: as a jq worker process this serves and exits; otherwise a check's
    // trigger replay and samples evaluate in worker processes.
    astrolift_jq::sandbox::init();
    run()
}

#[tokio::main]
async fn run() -> Result<(), Error> {
    telemetry::init_logging();
    let function = match SyncFunction::from_env(&Environment::new()).await {
        Ok(function) => function,
        Err(error) => {
            tracing::error!(error = %error, "cold start failed");
            return Err(error.into());
        }
    };
    lambda_runtime::run(service_fn(move |event: LambdaEvent<serde_json::Value>| {
        let function = function.clone();
        let deadline = event.context.deadline();
        async move {
            let answer = match Invocation::parse(event.payload)? {
                Invocation::Batch(batch) => {
                    serde_json::to_value(function.handle(batch, Some(deadline)).await)?
                }
                Invocation::Reconcile => serde_json::to_value(function.reconcile().await?.totals)?,
            };
            Ok::<_, Error>(answer)
        }
    }))
    .await
}
