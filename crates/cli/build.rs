//! Links `astrolift` with packed relative relocations (`DT_RELR`) where the C library
//! that will load it can read them.
//!
//! The binary is position-independent, so the loader relocates every pointer in its
//! read-only data at start. As `Elf64_Rela` entries the table of those relocations is
//! about a megabyte that every start reads through; packed, it is a few kilobytes.
//! That megabyte was most of what `serve` held at its first answer over its 15 MiB
//! target (BENCHMARKS.md, issue 26).
//!
//! The linker marks a packed binary as needing glibc's `GLIBC_ABI_DT_RELR` version, so
//! an older glibc refuses to load it. glibc reads the packed form from 2.36 on; the
//! binary is packed only when it is built for the machine that builds it (host and
//! target the same, Linux with glibc) and that machine's glibc is 2.36 or later. Any
//! other build (a cross build, musl, macOS, an older glibc) links as before. No crate
//! answers "which glibc will load this binary"; `getconf GNU_LIBC_VERSION` is glibc's
//! own answer for the host. The Lambda functions are not packed: their runtime's glibc
//! is older (docs/deploy.md).

use std::env;
use std::process::Command;

/// The first glibc whose loader reads `DT_RELR`.
const FIRST_GLIBC_WITH_RELR: (u32, u32) = (2, 36);

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let packed = native_glibc_build()
        && host_glibc().is_some_and(|version| version >= FIRST_GLIBC_WITH_RELR);
    if packed {
        println!("cargo:rustc-link-arg-bin=astrolift=-Wl,-z,pack-relative-relocs");
    }
    // What was decided, for the test that checks the linker did it (tests/it/linking.rs).
    println!("cargo:rustc-env=ASTROLIFT_PACKED_RELOCATIONS={packed}");
}

/// Whether this build's target is the building machine, Linux with glibc.
fn native_glibc_build() -> bool {
    let var = |name: &str| env::var(name).unwrap_or_default();
    var("HOST") == var("TARGET")
        && var("CARGO_CFG_TARGET_OS") == "linux"
        && var("CARGO_CFG_TARGET_ENV") == "gnu"
}

/// The host's glibc version, from `getconf GNU_LIBC_VERSION` ("glibc 2.36").
fn host_glibc() -> Option<(u32, u32)> {
    let output = Command::new("getconf")
        .arg("GNU_LIBC_VERSION")
        .output()
        .ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    let (major, minor) = text.trim().strip_prefix("glibc ")?.split_once('.')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}
