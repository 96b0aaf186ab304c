//! Benchmark driver: read a GitHub-style tarball once and package every agent
//! (`agents/<slug>/astrolift.toml`, or a root `astrolift.toml`), each with
//! `include = ["**"]`, writing OUT_DIR/<slug>.tar.gz.
//!
//!     cargo run --release -p astrolift-package --example package_tarball -- REPO.tar.gz OUT_DIR
//!
//! Prints one JSON line per agent.

#[allow(dead_code)]
#[path = "../tests/it/common.rs"]
mod common;

use std::error::Error;
use std::io::BufWriter;

use astrolift_manifest::{Limits, SourceTree};
use astrolift_package::{SourceTarball, slice, snapshot, write_archive};

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [tarball, out_dir] = args.as_slice() else {
        return Err("usage: package_tarball REPO.tar.gz OUT_DIR".into());
    };
    let limits = Limits::DEFAULT;
    let file = std::io::BufReader::with_capacity(1 << 20, std::fs::File::open(tarball)?);
    let tree = SourceTarball::read(file, &limits)?;
    std::fs::create_dir_all(out_dir)?;
    let agents: Vec<(String, String)> = tree
        .entries()
        .iter()
        .filter_map(|e| agent_dir(&e.path))
        .collect();
    for (name, dir) in agents {
        let agent = common::manifest(&name, &dir);
        let slice = slice(&agent, &tree, &limits).map_err(|d| format!("{d:#?}"))?;
        let out = std::fs::File::create(format!("{out_dir}/{name}.tar.gz"))?;
        let output = write_archive(&slice, &tree, BufWriter::with_capacity(1 << 20, out))?;
        let version = snapshot(&agent, &slice, &tree, &output)?.digest();
        println!(
            "{{\"agent\":\"{name}\",\"version\":\"{version}\",\"payload\":{}}}",
            serde_json::to_string(&output)?
        );
    }
    Ok(())
}

/// `(slug, dir)` for `astrolift.toml` and `agents/<slug>/astrolift.toml`.
fn agent_dir(path: &str) -> Option<(String, String)> {
    if path == "astrolift.toml" {
        return Some(("root".to_owned(), String::new()));
    }
    let slug = path
        .strip_prefix("agents/")?
        .strip_suffix("/astrolift.toml")?;
    (!slug.contains('/')).then(|| (slug.to_owned(), format!("agents/{slug}")))
}
