//! Runs the fake GitHub standalone, for manual testing:
//!
//! ```text
//! fake-github [--port 8787] [--installation ID]... [--repo OWNER/REPO@REF:SHA=DIR]...
//!             [--example-skill-repos yes]
//! ```
//! `--example-skill-repos yes` also serves the example skill repositories
//! (`example/runbooks`, `example/catalogue`), as the tests do.
//! It prints the base URL (for `GITHUB_API_URL`), the App id and where the
//! TEST-ONLY private key is, then serves until interrupted.
#![forbid(unsafe_code)]

use std::net::SocketAddr;

use anyhow::{Context, bail};
use astrolift_fake_github::FakeGitHub;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut port = 8787u16;
    let mut installations = Vec::new();
    let mut repos = Vec::new();
    let mut example_skill_repos = false;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .with_context(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--port" => port = value.parse().context("--port")?,
            "--installation" => installations.push(value.parse::<u64>().context("--installation")?),
            "--repo" => repos.push(parse_repo(&value)?),
            "--example-skill-repos" => example_skill_repos = value == "yes",
            other => bail!("unknown flag {other}"),
        }
    }
    let fake = FakeGitHub::start_on(SocketAddr::from(([127, 0, 0, 1], port))).await?;
    installations
        .iter()
        .for_each(|id| fake.add_installation(*id));
    if example_skill_repos {
        fake.add_example_skill_repos();
    }
    for (owner, repo, git_ref, sha, dir) in &repos {
        fake.add_repo(owner, repo, git_ref, sha, dir);
    }
    println!("GITHUB_API_URL={}", fake.base_url());
    println!("GITHUB_APP_ID={}", fake.app_id());
    println!(
        "GITHUB_APP_PRIVATE_KEY_FILE={}/keys/test-app-private-key.pem",
        env!("CARGO_MANIFEST_DIR")
    );
    tokio::signal::ctrl_c().await?;
    Ok(())
}

/// `OWNER/REPO@REF:SHA=DIR`.
fn parse_repo(spec: &str) -> anyhow::Result<(String, String, String, String, String)> {
    let parse = || {
        let (name, dir) = spec.split_once('=')?;
        let (full, at) = name.split_once('@')?;
        let (owner, repo) = full.split_once('/')?;
        let (git_ref, sha) = at.split_once(':')?;
        Some((
            owner.into(),
            repo.into(),
            git_ref.into(),
            sha.into(),
            dir.into(),
        ))
    };
    parse().with_context(|| format!("--repo {spec}: expected OWNER/REPO@REF:SHA=DIR"))
}
