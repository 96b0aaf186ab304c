//! Same content → same bytes, whatever the source kind, order, mtimes or modes.

use std::fs;
use std::io::Read;
use std::path::Path;
use std::time::{Duration, SystemTime};

use astrolift_manifest::model::AgentManifest;
use astrolift_manifest::{DirTree, Limits};
use astrolift_package::SourceTarball;
use tar::EntryType;

use crate::common::{RawTar, manifest, package};

const LONG: &str = "agents/a/deeply/nested/directory/with/a/name/long/enough/to/need/a/gnu/long/name/entry/in/the/archive/file.txt";

/// (path, content, executable in the working tree)
fn files() -> Vec<(&'static str, Vec<u8>, bool)> {
    vec![
        ("agents/a/astrolift.toml", b"name = \"a\"\n".to_vec(), false),
        (
            "agents/a/bin/run.sh",
            b"#!/bin/sh\necho hi\n".to_vec(),
            true,
        ),
        (
            "agents/a/data/blob.bin",
            (0..70_000u32).map(|i| (i * 7 % 251) as u8).collect(),
            false,
        ),
        ("agents/a/empty", Vec::new(), false),
        (
            "agents/a/B-upper.txt",
            b"upper sorts before lower".to_vec(),
            false,
        ),
        ("agents/a/a-lower.txt", b"lower".to_vec(), false),
        (LONG, b"long".to_vec(), false),
        ("agents/b/astrolift.toml", b"name = \"b\"\n".to_vec(), false),
    ]
}

fn agent() -> AgentManifest {
    let mut agent = manifest("a", "agents/a");
    agent.package.executables = vec!["bin/*".to_owned()];
    agent
}

fn write_dir(root: &Path, reversed: bool, mtime_secs: u64, loose_modes: bool) {
    let mut files = files();
    if reversed {
        files.reverse();
    }
    for (path, content, executable) in files {
        let full = root.join(path);
        fs::create_dir_all(full.parent().expect("parent")).expect("mkdir");
        fs::write(&full, &content).expect("write");
        let file = fs::File::options().write(true).open(&full).expect("open");
        file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(mtime_secs))
            .expect("mtime");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = match (executable, loose_modes) {
                (true, true) => 0o775,
                (true, false) => 0o700,
                (false, true) => 0o664,
                (false, false) => 0o600,
            };
            fs::set_permissions(&full, fs::Permissions::from_mode(mode)).expect("chmod");
        }
    }
}

fn dir_digest(reversed: bool, mtime: u64, loose: bool) -> (String, Vec<u8>) {
    let dir = tempfile::tempdir().expect("tempdir");
    write_dir(dir.path(), reversed, mtime, loose);
    let tree = DirTree::open(dir.path(), 1000).expect("open");
    let (_, output, bytes) = package(&agent(), &tree);
    (output.digest, bytes)
}

fn github_tarball(top: &str, reversed: bool) -> Vec<u8> {
    let mut tar = RawTar::github(top);
    let mut files = files();
    if reversed {
        files.reverse();
    }
    tar.entry(
        format!("{top}/agents/").as_bytes(),
        EntryType::Directory,
        b"",
    );
    let mut builder = tar::Builder::new(Vec::new());
    for (path, content, executable) in &files {
        let mut header = tar::Header::new_ustar();
        header.set_size(content.len() as u64);
        header.set_mode(if *executable { 0o775 } else { 0o664 });
        header.set_mtime(1_234_567_890);
        header.set_username("octocat").expect("user");
        header.set_uid(501);
        // Long paths go through PAX here (GitHub's own choice), not GNU long names.
        let full = format!("{top}/{path}");
        if full.len() > 100 {
            let records = crate::common::pax_record("path", &full);
            let mut pax = tar::Header::new_ustar();
            pax.set_entry_type(EntryType::XHeader);
            pax.set_size(records.len() as u64);
            pax.set_path("PaxHeader/x").expect("path");
            pax.set_cksum();
            builder.append(&pax, records.as_slice()).expect("pax");
            header
                .set_path(&full[full.len() - 90..])
                .expect("short path");
            header.set_cksum();
            builder.append(&header, content.as_slice()).expect("append");
        } else {
            builder
                .append_data(&mut header, &full, content.as_slice())
                .expect("append");
        }
    }
    let body = builder.into_inner().expect("tar");
    let mut raw = tar.tar_bytes();
    raw.truncate(raw.len() - 1024);
    raw.extend_from_slice(&body);
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    std::io::Write::write_all(&mut encoder, &raw).expect("gz");
    encoder.finish().expect("gz")
}

#[test]
fn mtimes_modes_and_creation_order_do_not_change_the_digest() {
    let (first, bytes) = dir_digest(false, 1_000_000_000, false);
    let (second, _) = dir_digest(true, 1_700_000_000, true);
    assert_eq!(first, second);
    // And writing the same tree twice gives the same bytes.
    let (third, again) = dir_digest(false, 1_000_000_000, false);
    assert_eq!(first, third);
    assert_eq!(bytes, again);
}

#[test]
fn a_directory_and_a_github_tarball_of_the_same_tree_give_the_same_digest() {
    let (from_dir, _) = dir_digest(false, 42, true);
    for (top, reversed) in [("octo-repo-abc123", false), ("other-fork-def456", true)] {
        let gz = github_tarball(top, reversed);
        let tree = SourceTarball::read(gz.as_slice(), &Limits::DEFAULT).expect("tarball");
        let (_, output, _) = package(&agent(), &tree);
        assert_eq!(output.digest, from_dir, "{top}");
    }
}

#[test]
fn the_archive_has_normalized_headers_sorted_entries_and_a_bare_gzip_header() {
    let (_, bytes) = dir_digest(true, 99, true);
    // gzip: magic, deflate, no flags (no name), mtime 0, OS 255.
    assert_eq!(&bytes[..4], &[0x1f, 0x8b, 8, 0]);
    assert_eq!(&bytes[4..8], &[0, 0, 0, 0]);
    assert_eq!(bytes[9], 255);
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes.as_slice()));
    let mut seen = Vec::new();
    for entry in archive.entries().expect("entries") {
        let mut entry = entry.expect("entry");
        let header = entry.header();
        assert_eq!(header.entry_type(), EntryType::Regular);
        assert_eq!(header.mtime().expect("mtime"), 0);
        assert_eq!(header.uid().expect("uid"), 0);
        assert_eq!(header.gid().expect("gid"), 0);
        assert_eq!(header.username_bytes(), Some(&b""[..]));
        assert_eq!(header.groupname_bytes(), Some(&b""[..]));
        let mode = header.mode().expect("mode");
        let path = String::from_utf8(entry.path_bytes().into_owned()).expect("utf8");
        let mut content = Vec::new();
        entry.read_to_end(&mut content).expect("read");
        seen.push((path, mode, content.len()));
    }
    let paths: Vec<&str> = seen.iter().map(|s| s.0.as_str()).collect();
    let mut sorted = paths.clone();
    sorted.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    assert_eq!(paths, sorted);
    assert_eq!(paths[0], "B-upper.txt");
    assert!(paths.contains(&&LONG["agents/a/".len()..]));
    let modes: Vec<(&str, u32)> = seen.iter().map(|s| (s.0.as_str(), s.1)).collect();
    assert!(modes.contains(&("bin/run.sh", 0o755)));
    assert!(modes.contains(&("astrolift.toml", 0o644)));
}

#[test]
fn the_thread_count_never_changes_the_bytes_and_the_gzip_is_valid() {
    let mut tree = astrolift_manifest::MemTree::new();
    // ~2.7 MiB over three 1 MiB chunks: compressible text and noise.
    let text: Vec<u8> = (0..1_500_000u32)
        .map(|i| b"fn slice(tree) -> archive;\n"[(i % 27) as usize])
        .collect();
    let mut state = 7u32;
    let noise: Vec<u8> = (0..1_200_000)
        .map(|_| {
            state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            (state >> 16) as u8
        })
        .collect();
    tree.insert("a/text.rs", text.clone(), false);
    tree.insert("a/noise.bin", noise.clone(), false);
    let slice =
        astrolift_package::slice(&manifest("a", "a"), &tree, &Limits::DEFAULT).expect("slice");
    let mut outputs = Vec::new();
    for threads in [1, 2, 3, 8] {
        let mut bytes = Vec::new();
        let output =
            astrolift_package::write_archive_with_threads(&slice, &tree, &mut bytes, threads)
                .expect("archive");
        outputs.push((output, bytes));
    }
    for (output, bytes) in &outputs[1..] {
        assert_eq!(output, &outputs[0].0);
        assert_eq!(bytes, &outputs[0].1);
    }
    // Any gzip reader gets the files back.
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(outputs[0].1.as_slice()));
    let mut contents = Vec::new();
    for entry in archive.entries().expect("entries") {
        let mut entry = entry.expect("entry");
        let mut content = Vec::new();
        entry.read_to_end(&mut content).expect("read");
        contents.push(content);
    }
    assert_eq!(contents, [noise, text]);
    assert!(
        outputs[0].0.size < 1_300_000,
        "text compresses: {}",
        outputs[0].0.size
    );
}
