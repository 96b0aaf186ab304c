//! Integration tests of the forge crate: one binary, one module per area.

mod envelope;
mod ingress;
mod payload_corpus;

mod github;
