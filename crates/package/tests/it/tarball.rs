//! Hostile and ordinary GitHub tarballs.

use astrolift_manifest::{EntryKind, Limits, SourceTree};
use astrolift_package::tarball::TarballOptions;
use astrolift_package::{SourceTarball, TarballError, TarballTree};
use tar::EntryType;

use crate::common::{RawTar, manifest, pax_record};

const TOP: &str = "octo-repo-0123abc";

fn read(tar: &RawTar) -> Result<TarballTree, TarballError> {
    SourceTarball::read(tar.gzip().as_slice(), &Limits::DEFAULT)
}

fn rejection(tar: &RawTar) -> String {
    match read(tar) {
        Ok(tree) => panic!("accepted: {:?}", tree.entries()),
        Err(error) => {
            let d = error.to_diagnostic();
            format!("{}: {}", d.code, d.message)
        }
    }
}

#[test]
fn reads_a_github_tarball_and_strips_the_top_directory() {
    let mut tar = RawTar::github(TOP);
    tar.entry(
        format!("{TOP}/agents/").as_bytes(),
        EntryType::Directory,
        b"",
    )
    .file(&format!("{TOP}/astrolift.toml"), b"name = \"a\"\n", 0o644)
    .file(&format!("{TOP}/bin/run.sh"), b"#!/bin/sh\n", 0o755)
    .file(&format!("{TOP}/data.bin"), &[7u8; 3000], 0o644);
    let tree = read(&tar).expect("read");
    assert_eq!(tree.top_directory(), TOP);
    let listed: Vec<_> = tree
        .entries()
        .iter()
        .map(|e| (e.path.as_str(), e.size, e.executable))
        .collect();
    assert_eq!(
        listed,
        [
            ("astrolift.toml", 11, false),
            ("bin/run.sh", 10, true),
            ("data.bin", 3000, false)
        ]
    );
    assert_eq!(
        tree.read_text("astrolift.toml", 100).unwrap(),
        "name = \"a\"\n"
    );
    assert_eq!(&*tree.read("data.bin", 5000).unwrap(), &[7u8; 3000][..]);
    assert!(tree.read("data.bin", 10).is_err());
}

#[test]
fn spools_beyond_the_memory_budget_and_serves_the_same_bytes() {
    let mut tar = RawTar::github(TOP);
    for i in 0..20 {
        let body = format!("# file {i}\n").repeat(100);
        tar.file(&format!("{TOP}/docs/{i:02}.md"), body.as_bytes(), 0o644);
    }
    let options = TarballOptions {
        memory_budget: 4000,
        ..TarballOptions::default()
    };
    let tree = SourceTarball::read_with(tar.gzip().as_slice(), &options).expect("read");
    for i in 0..20 {
        let expected = format!("# file {i}\n").repeat(100);
        assert_eq!(
            tree.read_text(&format!("docs/{i:02}.md"), 1 << 20).unwrap(),
            expected
        );
    }
}

#[test]
fn files_larger_than_any_package_are_listed_but_not_kept() {
    let mut tar = RawTar::github(TOP);
    tar.file(&format!("{TOP}/big.bin"), &[1u8; 2048], 0o644);
    let options = TarballOptions {
        max_kept_file: 1024,
        ..TarballOptions::default()
    };
    let tree = SourceTarball::read_with(tar.gzip().as_slice(), &options).expect("read");
    assert_eq!(tree.entry("big.bin").map(|e| e.size), Some(2048));
    assert!(tree.read("big.bin", u64::MAX).is_err());
}

#[test]
fn links_and_special_files_are_listed_not_fatal() {
    let mut tar = RawTar::github(TOP);
    tar.symlink(&format!("{TOP}/a/link"), "../../../etc/passwd")
        .entry(format!("{TOP}/a/hard").as_bytes(), EntryType::Link, b"")
        .entry(format!("{TOP}/a/fifo").as_bytes(), EntryType::Fifo, b"")
        .entry(format!("{TOP}/a/dev").as_bytes(), EntryType::Char, b"")
        .file(&format!("{TOP}/b/ok.txt"), b"ok", 0o644);
    let tree = read(&tar).expect("links do not fail the tarball");
    let kinds: Vec<_> = tree
        .entries()
        .iter()
        .map(|e| (e.path.as_str(), e.kind))
        .collect();
    assert_eq!(
        kinds,
        [
            ("a/dev", EntryKind::Other),
            ("a/fifo", EntryKind::Other),
            ("a/hard", EntryKind::Other),
            ("a/link", EntryKind::Symlink),
            ("b/ok.txt", EntryKind::File),
        ]
    );
    assert!(tree.read("a/link", 100).is_err());
    // Only the agent whose slice holds them fails.
    let limits = Limits::DEFAULT;
    assert!(astrolift_package::slice(&manifest("b", "b"), &tree, &limits).is_ok());
    let diagnostics = astrolift_package::slice(&manifest("a", "a"), &tree, &limits).unwrap_err();
    let codes: Vec<_> = diagnostics.iter().map(|d| d.code.as_str()).collect();
    assert_eq!(
        codes,
        [
            "package/special-file",
            "package/special-file",
            "package/special-file",
            "package/symlink"
        ]
    );
    assert!(diagnostics[3].message.contains("a/link"));
}

/// Every whole-tarball rejection, each naming its entry.
#[test]
fn hostile_tarballs_are_rejected_naming_the_entry() {
    let mut report = Vec::new();
    let mut case = |name: &str, tar: &RawTar| report.push(format!("{name}: {}", rejection(tar)));

    let mut t = RawTar::github(TOP);
    t.file(&format!("{TOP}/../escape.txt"), b"x", 0o644);
    case("dot-dot", &t);

    let mut t = RawTar::github(TOP);
    t.file(&format!("{TOP}/a/../../b"), b"x", 0o644);
    case("dot-dot-deep", &t);

    let mut t = RawTar::github(TOP);
    t.file("/etc/passwd", b"x", 0o644);
    case("absolute", &t);

    let mut t = RawTar::github(TOP);
    t.entry(
        b"././@LongLink",
        EntryType::GNULongName,
        format!("{TOP}/x/../../{}\0", "y".repeat(120)).as_bytes(),
    )
    .file(&format!("{TOP}/innocent"), b"x", 0o644);
    case("gnu-long-name-escape", &t);

    let mut t = RawTar::github(TOP);
    t.entry(
        b"PaxHeader/innocent",
        EntryType::XHeader,
        &pax_record("path", &format!("{TOP}/../../etc/cron.d/x")),
    )
    .file(&format!("{TOP}/innocent"), b"x", 0o644);
    case("pax-path-escape", &t);

    let mut t = RawTar::github(TOP);
    t.entry(
        b"PaxHeader/innocent",
        EntryType::XHeader,
        &pax_record("path", "/etc/shadow"),
    )
    .file(&format!("{TOP}/innocent"), b"x", 0o644);
    case("pax-path-absolute", &t);

    let mut t = RawTar::github(TOP);
    t.entry(
        b"PaxHeader/innocent",
        EntryType::XHeader,
        &pax_record("path", "other-top/file"),
    )
    .file(&format!("{TOP}/innocent"), b"x", 0o644);
    case("pax-path-other-top", &t);

    let mut t = RawTar::github(TOP);
    t.entry(
        b"pax_global_header",
        EntryType::XGlobalHeader,
        &pax_record("path", "../x"),
    );
    case("pax-global-path", &t);

    let mut t = RawTar::github(TOP);
    t.file("other-top/file", b"x", 0o644);
    case("second-top-directory", &t);

    let mut t = RawTar::github(TOP);
    t.file("file-at-top", b"x", 0o644);
    case("file-beside-top-directory", &t);

    let mut t = RawTar::github(TOP);
    t.entry_sized(
        format!("{TOP}/huge.bin").as_bytes(),
        EntryType::Regular,
        b"",
        5 << 30,
        0o644,
    );
    case("declared-size-over-bound", &t);

    let mut t = RawTar::github(TOP);
    t.entry(
        format!("{TOP}/sparse").as_bytes(),
        EntryType::GNUSparse,
        b"",
    );
    case("gnu-sparse", &t);

    let mut t = RawTar::github(TOP);
    t.entry(
        b"PaxHeader/s",
        EntryType::XHeader,
        &pax_record("GNU.sparse.major", "1"),
    )
    .file(&format!("{TOP}/s"), b"x", 0o644);
    case("pax-sparse", &t);

    let mut t = RawTar::github(TOP);
    t.entry(
        b"PaxHeader/s",
        EntryType::XHeader,
        &pax_record("size", "999"),
    )
    .file(&format!("{TOP}/s"), b"x", 0o644);
    case("pax-size-mismatch", &t);

    let mut t = RawTar::github(TOP);
    t.entry(
        b"././@LongLink",
        EntryType::GNULongName,
        &vec![b'a'; 70_000],
    )
    .file(&format!("{TOP}/s"), b"x", 0o644);
    case("oversized-long-name", &t);

    let mut t = RawTar::github(TOP);
    t.entry(
        b"PaxHeader/a",
        EntryType::XHeader,
        &pax_record("path", &format!("{TOP}/a")),
    )
    .entry(
        b"././@LongLink",
        EntryType::GNULongName,
        format!("{TOP}/../b\0").as_bytes(),
    )
    .file(&format!("{TOP}/innocent"), b"x", 0o644);
    case("two-extension-headers", &t);

    let mut t = RawTar::github(TOP);
    t.file(&format!("{TOP}/twice"), b"1", 0o644)
        .file(&format!("{TOP}/twice"), b"2", 0o644);
    case("duplicate-entry", &t);

    let mut t = RawTar::github(TOP);
    let mut name = format!("{TOP}/bad-\u{1b}[31m-").into_bytes();
    name.push(0xff);
    t.entry(&name, EntryType::Regular, b"");
    case("non-utf8-path", &t);

    let mut t = RawTar::github(TOP);
    t.entry_sized(
        format!("{TOP}/short").as_bytes(),
        EntryType::Regular,
        b"only a bit",
        100_000,
        0o644,
    );
    case("truncated-entry", &t);

    insta::assert_snapshot!("hostile_tarballs", report.join("\n"));
}

#[test]
fn over_the_entry_limit_is_rejected() {
    let mut tar = RawTar::github(TOP);
    for i in 0..10 {
        tar.file(&format!("{TOP}/f{i}"), b"x", 0o644);
    }
    let limits = Limits {
        tarball_files: 5,
        ..Limits::DEFAULT
    };
    let error = SourceTarball::read(tar.gzip().as_slice(), &limits).unwrap_err();
    assert!(
        matches!(error, TarballError::TooManyEntries { limit: 5 }),
        "{error}"
    );
    assert_eq!(error.to_diagnostic().code, "package/too-many-files");
}

#[test]
fn garbage_is_a_corrupt_tarball_not_a_panic() {
    for bytes in [
        &b""[..],
        b"not gzip at all",
        &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 1, 2],
    ] {
        let error = SourceTarball::read(bytes, &Limits::DEFAULT);
        assert!(error.is_err() || error.is_ok_and(|t| t.entries().is_empty()));
    }
}
