//! Integration tests of astrolift-manifest: one binary, one module per area.

mod h5_config;
mod h5_support;
mod h5_workspace;
