//! Integration tests of astrolift-dispatch (one binary): reading a dispatch's
//! content and rendering the runtime environment. Tests that go through the
//! trigger service (records, the outbox behind the service, callbacks,
//! rendering a recorded dispatch, workflow runs) are astrolift-trigger's.

mod answer;
mod content;
mod env;
mod layers;
mod step_functions;
