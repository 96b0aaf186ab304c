//! Integration tests of astrolift-manifest: one binary, one module per area.

mod abuse;
mod catalogue;
mod examples;
mod fixes;
mod fixtures;
mod props;
mod remote_skills;
mod rules;
mod samples;
mod scale;
mod seeds;
mod support;
mod workflows;

mod h5_config;
mod h5_drift;
mod h5_props;
mod h5_schema;
mod h5_support;
mod h5_triggers;
mod h5_workspace;
