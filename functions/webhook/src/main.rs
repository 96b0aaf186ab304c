//! The `webhook` Lambda binary: build the function once, then serve invocations.
#![forbid(unsafe_code)]

use astrolift_bot::config::Environment;
use astrolift_bot::telemetry;
use astrolift_fn_webhook::WebhookFunction;
use lambda_http::Error;

// One thread: an invocation is one request at a time, and a second runtime
// thread would only add to the cold start. Blocking work (SQLite) still runs
// on Tokio's blocking pool.
fn main() -> Result<(), Error> {
    // First of all: as a jq worker process this serves and exits; otherwise
    // GitHub-sourced trigger programs evaluate in worker processes.
    astrolift_jq::sandbox::init();
    run()
}

#[tokio::main(flavor = "current_thread")]
async fn run() -> Result<(), Error> {
    telemetry::init_logging();
    let function = match WebhookFunction::from_env(&Environment::new()).await {
        Ok(function) => function,
        Err(error) => {
            tracing::error!(error = %error, "cold start failed");
            return Err(error.into());
        }
    };
    // The router is the service: `lambda_http` turns each event into its
    // request and its response into the Lambda response.
    lambda_http::run(function.router()).await
}
