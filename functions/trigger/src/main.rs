//! The trigger Lambda's entry point: clients built once per container, then every
//! invocation (a function-URL request or a stage batch) through
//! `astrolift_fn_trigger::handle_invocation`.
#![forbid(unsafe_code)]

use std::sync::Arc;

use lambda_http::{Error, LambdaEvent};

fn main() -> Result<(), Error> {
    // First of all: as a jq worker process this serves and exits; otherwise
    // trigger programs evaluate in worker processes.
    astrolift_jq::sandbox::init();
    run()
}

#[tokio::main]
async fn run() -> Result<(), Error> {
    astrolift_fn_trigger::init_logging();
    let service = Arc::new(astrolift_fn_trigger::service_from_env().await?);
    let handler = lambda_http::service_fn(
        |event: LambdaEvent<Box<serde_json::value::RawValue>>| {
            let service = Arc::clone(&service);
            async move { astrolift_fn_trigger::handle_invocation(&service, event.payload.get()).await }
        },
    );
    lambda_http::lambda_runtime::run(handler).await
}
