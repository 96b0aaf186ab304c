//! Tarball bounds against memory exhaustion: path length (at the limit and
//! one byte past it), extension headers counted as entries, and the whole
//! index bounded — the last on a 200,000-entry stream generated on the fly,
//! in a child process whose peak RSS is measured.

use std::io::Read;
use std::process::Command;

use astrolift_manifest::Limits;
use astrolift_package::{SourceTarball, TarballError};
use flate2::Compression;
use flate2::read::GzEncoder;
use tar::{EntryType, Header};

use crate::common::{RawTar, pax_record};

const TOP: &str = "octo-repo-0123abc";

/// A path of exactly `len` bytes under the top directory, in short components.
fn path_of_len(len: usize, salt: usize) -> String {
    let mut path = format!("{TOP}/{salt}/");
    while path.len() < len {
        path.push_str(if len - path.len() > 8 {
            "abcdefg/"
        } else {
            "z"
        });
    }
    path.truncate(len);
    path
}

fn pax_file(tar: &mut RawTar, path: &str) {
    tar.entry(b"pax", EntryType::XHeader, &pax_record("path", path));
    tar.file(&format!("{TOP}/placeholder"), b"x", 0o644);
}

#[test]
fn a_path_of_4096_bytes_is_read_and_one_byte_more_is_refused() {
    assert_eq!(Limits::DEFAULT.tarball_path, 4096);
    for (len, accepted) in [(4096, true), (4097, false)] {
        let path = path_of_len(len, 1);
        assert_eq!(path.len(), len);
        let mut pax = RawTar::github(TOP);
        pax_file(&mut pax, &path);
        let mut gnu = RawTar::github(TOP);
        gnu.entry(b"././@LongLink", EntryType::GNULongName, path.as_bytes())
            .file(&format!("{TOP}/placeholder"), b"x", 0o644);
        for tar in [pax, gnu] {
            let read = SourceTarball::read(tar.gzip().as_slice(), &Limits::DEFAULT);
            match (read, accepted) {
                (Ok(tree), true) => {
                    use astrolift_manifest::SourceTree as _;
                    assert_eq!(tree.entries().len(), 1);
                    assert_eq!(tree.entries()[0].path.len(), len - TOP.len() - 1);
                }
                (Err(TarballError::PathTooLong { entry, limit: 4096 }), false) => {
                    assert!(entry.len() < 300, "the message shows a cut name: {entry}");
                }
                (other, _) => panic!("{len} bytes: {:?}", other.map(|_| "accepted")),
            }
        }
    }
}

#[test]
fn every_extension_header_counts_against_the_entry_limit() {
    let limits = Limits {
        tarball_files: 5,
        ..Limits::DEFAULT
    };
    let kinds = [
        EntryType::XGlobalHeader,
        EntryType::GNULongLink,
        EntryType::new(b'x'),
    ];
    for kind in kinds {
        let mut tar = RawTar::new();
        tar.entry(format!("{TOP}/").as_bytes(), EntryType::Directory, b"");
        for _ in 0..5 {
            let data = pax_record("comment", "padding");
            let data = if kind == EntryType::GNULongLink {
                b"target".to_vec()
            } else {
                data
            };
            tar.entry(b"ext", kind, &data);
            if kind != EntryType::XGlobalHeader {
                tar.file(&format!("{TOP}/f"), b"x", 0o644);
                break;
            }
        }
        let error = SourceTarball::read(tar.gzip().as_slice(), &limits);
        if kind == EntryType::XGlobalHeader {
            assert!(
                matches!(error, Err(TarballError::TooManyEntries { limit: 5 })),
                "{kind:?}: {:?}",
                error.map(|_| ())
            );
        } else {
            // Directory + header + file: three entries, within five.
            assert!(error.is_ok(), "{kind:?}: {:?}", error.map(|_| ()));
        }
    }
    // Three files each with a PAX header: six entries with the top directory over five.
    let mut tar = RawTar::new();
    tar.entry(format!("{TOP}/").as_bytes(), EntryType::Directory, b"");
    for i in 0..3 {
        pax_file(&mut tar, &format!("{TOP}/f{i}"));
    }
    let error = SourceTarball::read(tar.gzip().as_slice(), &limits).map(|_| ());
    assert!(
        matches!(error, Err(TarballError::TooManyEntries { limit: 5 })),
        "{error:?}"
    );
}

/// A tarball of `entries` empty files, each named by a PAX `path` record of
/// `path_len` bytes, produced as it is read: never whole in memory.
struct GeneratedTar {
    entries: usize,
    path_len: usize,
    next: usize,
    pending: Vec<u8>,
    offset: usize,
    finished: bool,
}

impl GeneratedTar {
    fn new(entries: usize, path_len: usize) -> Self {
        let mut first = Vec::new();
        append(
            &mut first,
            format!("{TOP}/").as_bytes(),
            EntryType::Directory,
            b"",
        );
        Self {
            entries,
            path_len,
            next: 0,
            pending: first,
            offset: 0,
            finished: false,
        }
    }

    fn refill(&mut self) {
        self.pending.clear();
        self.offset = 0;
        if self.next == self.entries {
            if !self.finished {
                self.pending.resize(1024, 0);
                self.finished = true;
            }
            return;
        }
        let path = path_of_len(self.path_len, self.next);
        append(
            &mut self.pending,
            b"pax",
            EntryType::XHeader,
            &pax_record("path", &path),
        );
        append(&mut self.pending, b"placeholder", EntryType::Regular, b"");
        self.next += 1;
    }
}

fn append(out: &mut Vec<u8>, name: &[u8], kind: EntryType, data: &[u8]) {
    let mut header = Header::new_gnu();
    header.as_old_mut().name[..name.len()].copy_from_slice(name);
    header.set_entry_type(kind);
    header.set_size(data.len() as u64);
    header.set_mode(0o644);
    header.set_cksum();
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out.extend(std::iter::repeat_n(0u8, (512 - data.len() % 512) % 512));
}

impl Read for GeneratedTar {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.offset == self.pending.len() {
            self.refill();
        }
        let n = buf.len().min(self.pending.len() - self.offset);
        buf[..n].copy_from_slice(&self.pending[self.offset..self.offset + n]);
        self.offset += n;
        Ok(n)
    }
}

/// Peak resident memory of this process (VmHWM), bytes.
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|kib| kib.parse::<u64>().ok())
        .expect("VmHWM")
        * 1024
}

const CHILD: &str = "ASTROLIFT_TARBALL_BOUNDS_CHILD";
const MIB: u64 = 1024 * 1024;

/// Runs `test` (this module's test of that name) alone in a child process,
/// where it reads the stream of `CHILD`'s value; returns what it printed.
/// The child's report line must be there: a filter that matched no test fails.
fn in_child(test: &str, path_len: usize) -> (String, u64) {
    let output = Command::new(std::env::current_exe().expect("test binary"))
        .args([
            &format!("bounds::{test}"),
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, path_len.to_string())
        .output()
        .expect("child runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report = stdout
        .lines()
        .find_map(|l| l.split_once("bounds-child: ").map(|(_, report)| report))
        .unwrap_or_else(|| panic!("the child ran no test: {stdout}"));
    let (outcome, peak) = report.rsplit_once(" peak=").expect("report");
    (outcome.to_owned(), peak.parse().expect("peak bytes"))
}

/// In the child: reads 200,000 entries of `path_len`-byte paths and prints the outcome.
fn read_generated_stream() -> bool {
    let Some(path_len) = std::env::var(CHILD).ok().and_then(|v| v.parse().ok()) else {
        return false;
    };
    // Stored (level 0) gzip: the reader's work, not the generator's, is what is measured.
    let stream = GzEncoder::new(GeneratedTar::new(200_000, path_len), Compression::none());
    let outcome = match SourceTarball::read(stream, &Limits::DEFAULT) {
        Ok(_) => "accepted".to_owned(),
        Err(error) => {
            // The code and the end of the message (the entry's name may be long).
            let message = error.to_string();
            let tail: String = message
                .chars()
                .skip(message.chars().count().saturating_sub(80))
                .collect();
            format!("{} …{tail}", error.to_diagnostic().code)
        }
    };
    println!("bounds-child: {outcome} peak={}", peak_rss());
    true
}

#[test]
fn a_200000_entry_stream_of_60_kib_pax_paths_is_refused_in_bounded_memory() {
    if read_generated_stream() {
        return;
    }
    let (outcome, peak) = in_child(
        "a_200000_entry_stream_of_60_kib_pax_paths_is_refused_in_bounded_memory",
        60 * 1024,
    );
    assert!(outcome.contains("longer than 4096 bytes"), "{outcome}");
    assert!(peak < 256 * MIB, "peak RSS {} MiB", peak / MIB);
}

#[test]
fn a_200000_entry_stream_of_4000_byte_paths_is_refused_in_bounded_memory() {
    if read_generated_stream() {
        return;
    }
    let (outcome, peak) = in_child(
        "a_200000_entry_stream_of_4000_byte_paths_is_refused_in_bounded_memory",
        4000,
    );
    eprintln!("4000-byte paths: {outcome}, peak RSS {} MiB", peak / MIB);
    assert!(outcome.starts_with("package/too-many-files"), "{outcome}");
    assert!(peak < 256 * MIB, "peak RSS {} MiB", peak / MIB);
}
