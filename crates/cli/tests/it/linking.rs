//! How `astrolift` is linked (crates/cli/build.rs): with packed relative relocations
//! where the glibc that builds and loads it reads them, as before everywhere else.

use std::process::Command;

/// The version the linker makes a packed binary need from glibc.
const RELR_MARKER: &[u8] = b"GLIBC_ABI_DT_RELR";

#[test]
fn the_binary_is_packed_exactly_where_glibc_reads_packed_relocations() {
    let Some(glibc) = host_glibc() else {
        return; // not glibc: build.rs links as before, nothing to tell apart
    };
    let binary = std::fs::read(env!("CARGO_BIN_EXE_astrolift")).expect("the binary reads");
    let packed = binary
        .windows(RELR_MARKER.len())
        .any(|window| window == RELR_MARKER);
    assert_eq!(
        packed,
        glibc >= (2, 36),
        "glibc {glibc:?}: packed relative relocations {packed}"
    );
}

fn host_glibc() -> Option<(u32, u32)> {
    let output = Command::new("getconf")
        .arg("GNU_LIBC_VERSION")
        .output()
        .ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    let (major, minor) = text.trim().strip_prefix("glibc ")?.split_once('.')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}
