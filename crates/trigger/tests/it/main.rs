//! Integration tests of astrolift-trigger (one binary).

mod aws;
mod dispatch;
mod env;
mod env_spec;
mod evaluate;
mod github;
mod runaway;
mod service;
mod support;
mod tenancy;
mod verify;
