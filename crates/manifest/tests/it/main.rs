//! Integration tests of astrolift-manifest: one binary, one module per area.
