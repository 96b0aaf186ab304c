//! The trigger Lambda's entry point: clients built once per container, then
//! every request through `astrolift_fn_trigger::router`.
#![forbid(unsafe_code)]

use std::sync::Arc;

use lambda_http::Error;

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
    lambda_http::run(astrolift_fn_trigger::router(service)).await
}
