//! A repository tarball: read (gzip or, wrapped here, plain tar), validate,
//! then slice and package every agent that validates.
#![no_main]

use std::io::Write as _;

use astrolift_manifest::{Limits, ValidateOptions, validate_repository};
use astrolift_package::{SourceTarball, package_agent};
use flate2::Compression;
use flate2::write::GzEncoder;
use libfuzzer_sys::fuzz_target;

const GZIP_MAGIC: &[u8] = &[0x1f, 0x8b];

/// The reader wants `tar.gz`; plain tar input is compressed first so the
/// mutator can work on tar headers directly.
fn gzipped(data: &[u8]) -> Vec<u8> {
    if data.starts_with(GZIP_MAGIC) {
        return data.to_vec();
    }
    let mut encoder = GzEncoder::new(Vec::new(), Compression::fast());
    // Writing to a Vec cannot fail.
    let _ = encoder.write_all(data);
    encoder.finish().unwrap_or_default()
}

fuzz_target!(|data: &[u8]| {
    let limits = Limits::DEFAULT;
    let Ok(tree) = SourceTarball::read(gzipped(data).as_slice(), &limits) else {
        return;
    };
    let options = ValidateOptions {
        limits,
        config_paths: Vec::new(),
    };
    let validation = validate_repository(&tree, &options);
    let failing = validation.agents_with_errors();
    for (agent, failed) in validation.agents.iter().zip(failing) {
        if !failed {
            let _ = package_agent(agent, &tree, &limits, std::io::sink());
        }
    }
});
