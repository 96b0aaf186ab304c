//! Abuse cases for tarballs: a million empty files and a 10 GiB
//! file, each refused quickly, without reading the whole stream and without
//! memory growth. The hostile streams are generated on the fly, never stored.

use std::io::{self, Read};
use std::time::{Duration, Instant};

use astrolift_manifest::Limits;
use astrolift_package::{SourceTarball, TarballError};
use flate2::Compression;
use flate2::read::GzEncoder;
use tar::{EntryType, Header};

use crate::common::RawTar;

const TOP: &str = "octo-repo-0123abc";
const GIB: u64 = 1 << 30;

/// Loose bound for debug builds on a shared machine.
const QUICKLY: Duration = Duration::from_secs(10);

/// Loose CPU bound for reading 100 MB of tar headers in a debug build, where
/// zlib-rs's CRC-32 and inflate are unoptimized: a few times what a debug
/// build needs, and far above a release build's need. CPU time, not wall time: on a machine
/// shared with parallel builds the wall clock says nothing about the reader.
const CPU_BOUND: Duration = Duration::from_secs(90);

/// CPU time (user + system) of the calling thread, from
/// `/proc/thread-self/stat` (Linux; zero elsewhere). Ticks are USER_HZ, 100
/// on every Linux architecture Rust supports.
fn thread_cpu() -> Duration {
    let ticks = std::fs::read_to_string("/proc/thread-self/stat")
        .ok()
        .and_then(|stat| {
            let fields: Vec<u64> = stat
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .skip(11)
                .take(2)
                .filter_map(|field| field.parse().ok())
                .collect();
            Some(fields.iter().sum::<u64>())
        })
        .unwrap_or(0);
    Duration::from_millis(ticks * 10)
}

/// A `tar.gz` stream of a GitHub top directory and then `files` empty
/// regular files, made one 512-byte header at a time: a million entries cost
/// no memory, and the test counts how many were asked for.
///
/// The gzip framing is written by hand (a gzip header, then each tar block
/// as a deflate *stored* block): a compressor in a debug build would spend
/// minutes on 100 MB, and the reader must be what this test measures. The
/// trailer's CRC is a placeholder: a reader that stops at the files limit
/// never reaches it.
struct EmptyFiles {
    files: usize,
    next: usize,
    block: Vec<u8>,
    at: usize,
}

/// gzip magic, deflate, no flags, no mtime, no extra flags, unknown OS.
const GZIP_HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255];

impl EmptyFiles {
    fn new(files: usize) -> Self {
        let mut block = GZIP_HEADER.to_vec();
        push_stored(&mut block, &github_start(), false);
        Self {
            files,
            next: 0,
            block,
            at: 0,
        }
    }

    fn refill(&mut self) {
        self.at = 0;
        self.block.clear();
        if self.next < self.files {
            let mut header = Header::new_gnu();
            let name = format!("{TOP}/f{}", self.next);
            header.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
            header.set_entry_type(EntryType::Regular);
            header.set_size(0);
            header.set_mode(0o644);
            header.set_cksum();
            push_stored(&mut self.block, header.as_bytes(), false);
        } else if self.next == self.files {
            push_stored(&mut self.block, &[0; 1024], true);
            // Placeholder CRC-32, then the length modulo 2^32.
            self.block.extend_from_slice(&[0; 8]);
        }
        self.next += 1;
    }
}

/// Appends `data` (at most 65,535 bytes) as one deflate stored block.
fn push_stored(out: &mut Vec<u8>, data: &[u8], last: bool) {
    let len = u16::try_from(data.len()).expect("a stored block holds 64 KiB");
    out.push(u8::from(last));
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&(!len).to_le_bytes());
    out.extend_from_slice(data);
}

impl Read for EmptyFiles {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.at == self.block.len() {
            self.refill();
        }
        let n = buf.len().min(self.block.len() - self.at);
        buf[..n].copy_from_slice(&self.block[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// GitHub's first entries (global PAX header, top directory), without the
/// end-of-archive blocks.
fn github_start() -> Vec<u8> {
    let mut bytes = RawTar::github(TOP).tar_bytes();
    bytes.truncate(bytes.len() - 1024);
    bytes
}

/// The resident set of this process, KiB (Linux; 0 elsewhere).
fn resident_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("VmRSS:"))
                .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

#[test]
fn a_million_empty_files_stop_at_the_files_limit() {
    let limit = Limits::DEFAULT.tarball_files;
    let mut source = EmptyFiles::new(1_000_000);
    let before = resident_kib();
    let start = Instant::now();
    let cpu_before = thread_cpu();
    let result = SourceTarball::read(&mut source, &Limits::DEFAULT);
    let cpu = thread_cpu().saturating_sub(cpu_before);
    let elapsed = start.elapsed();
    println!("1,000,000 empty files refused after {cpu:?} of CPU ({elapsed:?} wall)");
    let grown_kib = resident_kib().saturating_sub(before);
    let error = result.expect_err("a million files are refused");
    assert!(
        matches!(error, TarballError::TooManyEntries { limit: l } if l == limit),
        "{error}"
    );
    assert_eq!(error.to_diagnostic().code, "package/too-many-files");
    assert!(cpu < CPU_BOUND, "took {cpu:?} of CPU");
    // Stopped just past the limit: the other 800,000 headers were never made.
    assert!(
        source.next <= limit + 1_000,
        "read {} of 1,000,000 entries",
        source.next
    );
    // The index of 200,000 entries is a few tens of MiB; the stream is never held.
    assert!(grown_kib < 256 * 1024, "grew by {grown_kib} KiB");
}

/// An entry whose header claims 10 GiB, followed by a few bytes and the end:
/// refused on the header (the 4 GiB tarball bound), before its body is read.
#[test]
fn a_header_claiming_10_gib_is_refused_before_its_body() {
    let mut tar = RawTar::github(TOP);
    tar.entry_sized(
        format!("{TOP}/huge.bin").as_bytes(),
        EntryType::Regular,
        b"short body",
        10 * GIB,
        0o644,
    );
    let start = Instant::now();
    let error = SourceTarball::read(tar.gzip().as_slice(), &Limits::DEFAULT).expect_err("refused");
    assert!(start.elapsed() < QUICKLY);
    assert!(
        matches!(&error, TarballError::TooLarge { entry, .. } if entry.contains("huge.bin")),
        "{error}"
    );
    assert_eq!(error.to_diagnostic().code, "package/too-large");
}

/// A GNU sparse entry for a 10 GiB file (real size in the GNU header, one
/// small data block): refused as sparse, never expanded.
#[test]
fn a_10_gib_gnu_sparse_file_is_refused_without_expanding_it() {
    let mut header = Header::new_gnu();
    let name = format!("{TOP}/sparse.img");
    header.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
    header.set_entry_type(EntryType::GNUSparse);
    header.set_size(512);
    header.set_mode(0o644);
    if let Some(gnu) = header.as_gnu_mut() {
        // One 512-byte data block at offset 10 GiB - 512, then holes.
        write_octal(&mut gnu.sparse[0].offset, 10 * GIB - 512);
        write_octal(&mut gnu.sparse[0].numbytes, 512);
        write_octal(&mut gnu.realsize, 10 * GIB);
    }
    header.set_cksum();
    let mut bytes = github_start();
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(&[0xAA; 512]);
    bytes.extend_from_slice(&[0; 1024]);
    let start = Instant::now();
    let error = SourceTarball::read(
        GzEncoder::new(bytes.as_slice(), Compression::fast()),
        &Limits::DEFAULT,
    )
    .expect_err("refused");
    assert!(start.elapsed() < QUICKLY);
    assert!(error.to_string().contains("sparse.img"), "{error}");
    assert!(
        matches!(
            error,
            TarballError::Unsupported { .. } | TarballError::TooLarge { .. }
        ),
        "{error}"
    );
}

/// A zero-padded octal field, as tar writes numbers.
fn write_octal(field: &mut [u8], value: u64) {
    let text = format!("{value:0width$o}", width = field.len() - 1);
    field[..text.len()].copy_from_slice(text.as_bytes());
    field[text.len()..].fill(0);
}
