//! Trigger bindings at run time (DESIGN.md §3, §5 "Trigger bindings", §9).
#![forbid(unsafe_code)]

pub mod dispatch;
pub mod env;
mod error;
mod evaluate;
pub mod sandbox;
pub mod secrets;
pub mod verify;

pub use error::{Stage, TriggerError};
pub use evaluate::{CompiledBinding, Outcome, evaluate, evaluate_verified};
pub use secrets::{AwsSecretResolver, EnvSecretResolver, SecretError, SecretResolver};
