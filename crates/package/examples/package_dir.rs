//! Benchmark driver: package a local directory as one agent (`include = ["**"]`).
//!
//!     cargo run --release -p astrolift-package --example package_dir -- DIR OUT.tar.gz
//!
//! Prints `{"digest":"sha256:…","size":N,"files":N,"uncompressed_size":N}`.

#[allow(dead_code)]
#[path = "../tests/it/common.rs"]
mod common;

use std::error::Error;
use std::io::BufWriter;

use astrolift_manifest::{DirTree, Limits};
use astrolift_package::{slice, write_archive};

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir, out] = args.as_slice() else {
        return Err("usage: package_dir DIR OUT.tar.gz".into());
    };
    let limits = Limits::DEFAULT;
    let tree = DirTree::open(dir, limits.tarball_files)?;
    let agent = common::manifest("bench", "");
    let slice = slice(&agent, &tree, &limits).map_err(|d| format!("{d:#?}"))?;
    let file = std::fs::File::create(out)?;
    let output = write_archive(&slice, &tree, BufWriter::with_capacity(1 << 20, file))?;
    println!("{}", serde_json::to_string(&output)?);
    Ok(())
}
