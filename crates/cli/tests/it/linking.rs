//! How `astrolift` is linked (crates/cli/build.rs): with packed relative relocations
//! where the glibc that builds and loads it reads them, as before everywhere else.

/// The version the linker makes a packed binary need from glibc.
const RELR_MARKER: &[u8] = b"GLIBC_ABI_DT_RELR";

/// build.rs decides (a native build on glibc 2.36 or later) and says what it decided; the
/// binary must carry the marker exactly then, so a linker that ignored the option, or
/// packed where it was not asked to, fails here.
#[test]
fn the_binary_is_packed_exactly_where_glibc_reads_packed_relocations() {
    let decided = env!("ASTROLIFT_PACKED_RELOCATIONS") == "true";
    let binary = std::fs::read(env!("CARGO_BIN_EXE_astrolift")).expect("the binary reads");
    let packed = binary
        .windows(RELR_MARKER.len())
        .any(|window| window == RELR_MARKER);
    assert_eq!(packed, decided, "build.rs decided packed={decided}");
}
