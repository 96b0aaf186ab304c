//! The `sync` Lambda binary: build the runner once, then serve SQS batches.
#![forbid(unsafe_code)]

use std::convert::Infallible;

use astrolift_bot::config::Environment;
use astrolift_bot::telemetry;
use astrolift_fn_sync::SyncFunction;
use aws_lambda_events::event::sqs::SqsEvent;
use lambda_runtime::{Error, LambdaEvent, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    telemetry::init_logging();
    let function = match SyncFunction::from_env(&Environment::new()).await {
        Ok(function) => function,
        Err(error) => {
            tracing::error!(error = %error, "cold start failed");
            return Err(error.into());
        }
    };
    lambda_runtime::run(service_fn(move |event: LambdaEvent<SqsEvent>| {
        let function = function.clone();
        let deadline = event.context.deadline();
        async move { Ok::<_, Infallible>(function.handle(event.payload, Some(deadline)).await) }
    }))
    .await
}
