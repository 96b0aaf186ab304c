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
//!
//! It also lays out the code `serve` runs at its start together, where the linker is the
//! toolchain's own LLD: `start-order.txt` lists those functions (`bench/start_order.py`
//! writes it for the `cli` profile's build), and the linker places them first. Spread over
//! the binary's code, each page the start ran was mapped with the 64 KiB around it;
//! together they are a few hundred KiB, and `serve` holds 1.5 to 3 MiB less at its first
//! answer (BENCHMARKS.md, issue 26).

use std::env;
use std::path::Path;
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
    order_start_code();
}

/// The start's code laid out together (the module docs): only where the linker is LLD,
/// the toolchain's own on x86_64 Linux, as another linker has no such option. A name the
/// build does not define is skipped, so a list older than the code still orders what it
/// names; the names carry rustc's and Cargo's hashes, so a build with another rustc than
/// the list's (ARCHITECTURE.md, "Release profile") orders nothing.
/// `ASTROLIFT_LINK_MAP=FILE` writes the linker's map, from which the list is made.
fn order_start_code() {
    println!("cargo:rerun-if-changed=start-order.txt");
    println!("cargo:rerun-if-env-changed=ASTROLIFT_LINK_MAP");
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    if !links_with_rust_lld() {
        return;
    }
    let order =
        Path::new(&env::var("CARGO_MANIFEST_DIR").unwrap_or_default()).join("start-order.txt");
    if order.is_file() {
        println!(
            "cargo:rustc-link-arg-bin=astrolift=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        println!("cargo:rustc-link-arg-bin=astrolift=-Wl,--no-warn-symbol-ordering");
    }
    if let Ok(map) = env::var("ASTROLIFT_LINK_MAP") {
        println!("cargo:rustc-link-arg-bin=astrolift=-Wl,-Map={map}");
    }
}

/// Whether rustc links this build with its own LLD: x86_64 Linux with glibc from Rust
/// 1.90 on, unless a linker is chosen (Cargo's `RUSTC_LINKER`, from the configuration's
/// `linker` or `CARGO_TARGET_<TRIPLE>_LINKER`) or the flags name a linker or its features.
fn links_with_rust_lld() -> bool {
    let var = |name: &str| env::var(name).unwrap_or_default();
    let chosen_elsewhere =
        env::var_os("RUSTC_LINKER").is_some() || var("CARGO_ENCODED_RUSTFLAGS").contains("link");
    native_glibc_build()
        && var("TARGET") == "x86_64-unknown-linux-gnu"
        && !chosen_elsewhere
        && rustc_minor().is_some_and(|minor| minor >= 90)
}

/// The minor version of the rustc that builds this (`rustc -V`: "rustc 1.95.0 (…)").
fn rustc_minor() -> Option<u32> {
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let output = Command::new(rustc).arg("-V").output().ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    let version = text.split_whitespace().nth(1)?;
    let mut parts = version.split('.');
    (parts.next()? == "1").then_some(())?;
    parts.next()?.parse().ok()
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
