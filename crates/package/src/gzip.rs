//! Deterministic, parallel gzip (the pigz scheme) on flate2's raw deflate
//! (zlib-rs backend).
//!
//! The uncompressed stream is cut into fixed [`CHUNK`]-byte chunks. Each
//! chunk is deflated on its own, primed with the last 32 KiB of the chunk
//! before it as the dictionary (so matches across the cut are kept), and
//! ended with a sync flush (byte-aligned, not final); the last chunk ends the
//! stream. The concatenation is one valid deflate stream, wrapped in a gzip
//! header written here (no name, mtime 0, OS 255) and the CRC-32/length
//! trailer.
//!
//! Inside a chunk, each [`SEGMENT`] whose bytes are near-uniform (random
//! data, media, archives) is written as stored blocks instead: deflate
//! cannot shrink it (level 6 adds bytes) and spends most of its time trying.
//! Consecutive segments with the same decision form one run, compressed in
//! one go (primed with the 32 KiB before it, sync-flushed), so text keeps
//! deflate's full context. The test is a chi-square against the uniform byte
//! distribution below [`UNIFORM_CHI_SQUARE`], in integer arithmetic so that
//! every machine decides alike.
//!
//! Written by hand because `GzBuilder` compresses on one thread only. The
//! bytes depend only on the input, the level and the chunk size, never on the
//! number of threads or their timing: each chunk is a pure function of
//! (dictionary, chunk, is-last).

use std::collections::VecDeque;
use std::io::{self, Write};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use flate2::{Compress, Compression, Crc, FlushCompress, Status};

/// Uncompressed bytes per independently compressed chunk. Part of the
/// archive format: changing it changes every digest.
pub const CHUNK: usize = 1 << 20;
const WINDOW: usize = 32 * 1024;
/// Chunks whose byte histogram has a chi-square below this (255 degrees of
/// freedom: random data scores about 255) are stored, not deflated. Part of
/// the archive format.
pub const UNIFORM_CHI_SQUARE: u128 = 1024;
/// The unit of the stored-or-deflated decision. Part of the archive format.
pub const SEGMENT: usize = 64 * 1024;
/// Shorter segments (the tail of the stream) are always deflated.
const MIN_STORED_SEGMENT: usize = 4096;

struct Job {
    dictionary: Vec<u8>,
    data: Vec<u8>,
    last: bool,
    reply: Sender<io::Result<Vec<u8>>>,
}

/// The worker threads; absent when compressing on the caller's thread.
struct Pool {
    jobs: Option<Sender<Job>>,
    workers: Vec<JoinHandle<()>>,
    pending: VecDeque<Receiver<io::Result<Vec<u8>>>>,
    max_pending: usize,
}

/// A `Write` that gzips what it is given; [`ParallelGzip::finish`] ends the stream.
pub struct ParallelGzip<W: Write> {
    inner: W,
    level: u32,
    chunk: Vec<u8>,
    dictionary: Vec<u8>,
    crc: Crc,
    inline: Deflater,
    pool: Option<Pool>,
    header_written: bool,
}

impl<W: Write> std::fmt::Debug for ParallelGzip<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParallelGzip")
            .field("level", &self.level)
            .field(
                "threads",
                &self.pool.as_ref().map_or(1, |p| p.workers.len()),
            )
            .finish_non_exhaustive()
    }
}

impl<W: Write> ParallelGzip<W> {
    /// `threads` ≤ 1 compresses on the caller's thread.
    pub fn new(inner: W, level: u32, threads: usize) -> Self {
        let pool = (threads > 1).then(|| Pool::start(level, threads));
        Self {
            inner,
            level,
            chunk: Vec::with_capacity(CHUNK),
            dictionary: Vec::new(),
            crc: Crc::new(),
            inline: Deflater::new(level),
            pool,
            header_written: false,
        }
    }

    /// Compresses what is buffered, writes the trailer, returns the writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.write_header()?;
        let data = std::mem::take(&mut self.chunk);
        self.dispatch(data, true)?;
        if let Some(pool) = &mut self.pool {
            while let Some(reply) = pool.pending.pop_front() {
                let bytes = receive(&reply)?;
                self.inner.write_all(&bytes)?;
            }
            pool.stop();
        }
        let mut trailer = [0u8; 8];
        trailer[..4].copy_from_slice(&self.crc.sum().to_le_bytes());
        trailer[4..].copy_from_slice(&self.crc.amount().to_le_bytes());
        self.inner.write_all(&trailer)?;
        Ok(self.inner)
    }

    fn write_header(&mut self) -> io::Result<()> {
        if self.header_written {
            return Ok(());
        }
        self.header_written = true;
        let extra_flags = match self.level {
            9.. => 2,
            0 | 1 => 4,
            _ => 0,
        };
        // Magic, deflate, no flags (no name, no comment), mtime 0, XFL, OS unknown.
        self.inner
            .write_all(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, extra_flags, 255])
    }

    fn dispatch(&mut self, data: Vec<u8>, last: bool) -> io::Result<()> {
        self.crc.update(&data);
        let dictionary = std::mem::take(&mut self.dictionary);
        self.dictionary = data[data.len().saturating_sub(WINDOW)..].to_vec();
        match &mut self.pool {
            None => {
                let bytes = self.inline.chunk(&dictionary, &data, last)?;
                self.inner.write_all(&bytes)
            }
            Some(pool) => {
                if pool.pending.len() >= pool.max_pending
                    && let Some(reply) = pool.pending.pop_front()
                {
                    let bytes = receive(&reply)?;
                    self.inner.write_all(&bytes)?;
                }
                pool.submit(dictionary, data, last)
            }
        }
    }
}

impl<W: Write> Write for ParallelGzip<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_header()?;
        let room = CHUNK - self.chunk.len();
        let n = buf.len().min(room);
        self.chunk.extend_from_slice(&buf[..n]);
        if self.chunk.len() == CHUNK {
            let data = std::mem::replace(&mut self.chunk, Vec::with_capacity(CHUNK));
            self.dispatch(data, false)?;
        }
        Ok(n)
    }

    /// Chunks are cut at fixed offsets only, so a flush writes nothing new.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Pool {
    fn start(level: u32, threads: usize) -> Self {
        let (jobs, queue) = mpsc::channel::<Job>();
        let queue = Arc::new(Mutex::new(queue));
        let workers = (0..threads)
            .map(|_| {
                let queue = Arc::clone(&queue);
                std::thread::spawn(move || worker(&queue, level))
            })
            .collect();
        Self {
            jobs: Some(jobs),
            workers,
            pending: VecDeque::new(),
            max_pending: threads * 2,
        }
    }

    fn submit(&mut self, dictionary: Vec<u8>, data: Vec<u8>, last: bool) -> io::Result<()> {
        let (reply, answer) = mpsc::channel();
        let job = Job {
            dictionary,
            data,
            last,
            reply,
        };
        let sent = self.jobs.as_ref().map(|jobs| jobs.send(job));
        if !matches!(sent, Some(Ok(()))) {
            return Err(io::Error::other("the compression workers stopped"));
        }
        self.pending.push_back(answer);
        Ok(())
    }

    fn stop(&mut self) {
        self.jobs = None;
        for worker in self.workers.drain(..) {
            // A worker that panicked already reported through its reply channel.
            let _ = worker.join();
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        // Closing the queue ends the workers once their current job is done.
        self.jobs = None;
    }
}

fn worker(queue: &Mutex<Receiver<Job>>, level: u32) {
    let mut deflater = Deflater::new(level);
    loop {
        let job = match queue.lock() {
            Ok(queue) => queue.recv(),
            Err(_) => return,
        };
        let Ok(job) = job else { return };
        let result = deflater.chunk(&job.dictionary, &job.data, job.last);
        // The writer may have gone away after an error; nothing to do then.
        let _ = job.reply.send(result);
    }
}

fn receive(reply: &Receiver<io::Result<Vec<u8>>>) -> io::Result<Vec<u8>> {
    reply
        .recv()
        .map_err(|_| io::Error::other("a compression worker stopped"))?
}

/// The two compressors a chunk may go through: the archive's level, and
/// stored blocks for near-uniform data.
struct Deflater {
    deflate: Compress,
    store: Compress,
}

impl Deflater {
    fn new(level: u32) -> Self {
        Self {
            deflate: Compress::new(Compression::new(level), false),
            store: Compress::new(Compression::none(), false),
        }
    }

    /// The chunk as runs of stored and deflated segments.
    fn chunk(&mut self, dictionary: &[u8], data: &[u8], last: bool) -> io::Result<Vec<u8>> {
        let runs = runs(data);
        if runs.is_empty() {
            return deflate_chunk(&mut self.deflate, dictionary, data, last);
        }
        let mut out = Vec::with_capacity(data.len() + data.len() / 100 + 1024);
        for (start, end, stored) in runs {
            let is_last = last && end == data.len();
            let bytes = if stored {
                deflate_chunk(&mut self.store, &[], &data[start..end], is_last)?
            } else {
                let primer = if start == 0 {
                    dictionary
                } else {
                    &data[start.saturating_sub(WINDOW)..start]
                };
                deflate_chunk(&mut self.deflate, primer, &data[start..end], is_last)?
            };
            out.extend_from_slice(&bytes);
        }
        Ok(out)
    }
}

/// `(start, end, stored)` runs of consecutive segments with one decision.
fn runs(data: &[u8]) -> Vec<(usize, usize, bool)> {
    let mut runs: Vec<(usize, usize, bool)> = Vec::new();
    for (index, segment) in data.chunks(SEGMENT).enumerate() {
        let start = index * SEGMENT;
        let end = start + segment.len();
        let stored = is_near_uniform(segment);
        match runs.last_mut() {
            Some(run) if run.2 == stored => run.1 = end,
            _ => runs.push((start, end, stored)),
        }
    }
    runs
}

/// Chi-square of the byte histogram against uniform, below the threshold:
/// sum((256·count − n)²) / (256·n) < T, compared without division.
fn is_near_uniform(data: &[u8]) -> bool {
    if data.len() < MIN_STORED_SEGMENT {
        return false;
    }
    let mut counts = [0u64; 256];
    for &byte in data {
        counts[usize::from(byte)] += 1;
    }
    let n = data.len() as u128;
    let sum: u128 = counts
        .iter()
        .map(|&c| {
            let d = (256 * u128::from(c)).abs_diff(n);
            d * d
        })
        .sum();
    sum < UNIFORM_CHI_SQUARE * 256 * n
}

/// Raw deflate of one chunk, primed with `dictionary`; sync-flushed unless last.
fn deflate_chunk(
    compress: &mut Compress,
    dictionary: &[u8],
    data: &[u8],
    last: bool,
) -> io::Result<Vec<u8>> {
    compress.reset();
    if !dictionary.is_empty() {
        compress
            .set_dictionary(dictionary)
            .map_err(io::Error::other)?;
    }
    let flush = if last {
        FlushCompress::Finish
    } else {
        FlushCompress::Sync
    };
    let mut out = Vec::with_capacity(data.len() + data.len() / 100 + 1024);
    loop {
        let consumed = usize::try_from(compress.total_in()).unwrap_or(data.len());
        let status = compress
            .compress_vec(&data[consumed.min(data.len())..], &mut out, flush)
            .map_err(io::Error::other)?;
        let all_in = compress.total_in() == data.len() as u64;
        let done = if last {
            status == Status::StreamEnd
        } else {
            all_in && out.len() < out.capacity()
        };
        if done {
            return Ok(out);
        }
        out.reserve(64 * 1024);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noise(len: usize) -> Vec<u8> {
        let mut state = 0x2545_f491_u64;
        (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 24) as u8
            })
            .collect()
    }

    /// Gzips `data` and checks that a standard reader gets it back.
    fn round_trip(data: &[u8]) -> io::Result<Vec<u8>> {
        let mut gzip = ParallelGzip::new(Vec::new(), 6, 1);
        gzip.write_all(data)?;
        let bytes = gzip.finish()?;
        let mut decoded = Vec::new();
        std::io::Read::read_to_end(
            &mut flate2::read::GzDecoder::new(bytes.as_slice()),
            &mut decoded,
        )?;
        assert_eq!(decoded, data);
        Ok(bytes)
    }

    #[test]
    fn only_near_uniform_chunks_are_stored() {
        assert!(is_near_uniform(&noise(SEGMENT)));
        assert!(!is_near_uniform(&noise(100)), "short segments are deflated");
        let text: Vec<u8> = b"let x = slice(tree);\n".repeat(50_000);
        assert!(!is_near_uniform(&text));
        assert!(!is_near_uniform(&vec![0u8; CHUNK]));
    }

    #[test]
    fn mixed_chunks_round_trip_and_text_still_compresses() -> io::Result<()> {
        let mut data = b"fn archive() {}\n".repeat(10_000);
        data.extend(noise(200_000));
        data.extend(b"fn archive() {}\n".repeat(80_000));
        data.extend(noise(5_000));
        let runs = runs(&data[..CHUNK]);
        assert!(
            runs.iter().any(|r| r.2) && runs.iter().any(|r| !r.2),
            "{runs:?}"
        );
        let bytes = round_trip(&data)?;
        assert!(bytes.len() < 220_000, "{}", bytes.len());
        Ok(())
    }

    #[test]
    fn stored_chunks_cost_a_few_bytes_and_round_trip() -> io::Result<()> {
        let data = noise(3 * CHUNK + 123);
        let bytes = round_trip(&data)?;
        assert!(
            bytes.len() < data.len() + data.len() / 1000,
            "{}",
            bytes.len()
        );
        Ok(())
    }
}
