//! What the pool and a worker process say to each other: the environment
//! that starts a worker, the request header, and length-prefixed frames.

use std::io::{self, Read, Write};

/// Set (to `1`) in a worker process's environment.
pub const WORKER_ENV: &str = "ASTROLIFT_JQ_WORKER";
/// The worker's address-space limit, bytes.
pub(super) const MEMORY_ENV: &str = "ASTROLIFT_JQ_WORKER_MEMORY";
/// The worker's CPU-time limit over its life, seconds.
pub(super) const CPU_ENV: &str = "ASTROLIFT_JQ_WORKER_CPU";

/// A request as sent to a worker; the body follows in its own frame.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct WireRequest {
    pub jobs: Vec<WireJob>,
    pub time_ms: u64,
    pub output_limit: u64,
}

#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct WireJob {
    pub program: String,
    pub max_outputs: usize,
    pub gate: bool,
}

/// A frame: its length as 4 little-endian bytes, then the bytes.
pub(super) fn write_frame(stream: &mut impl Write, bytes: &[u8]) -> io::Result<()> {
    let len = u32::try_from(bytes.len()).map_err(io::Error::other)?;
    stream.write_all(&len.to_le_bytes())?;
    stream.write_all(bytes)?;
    stream.flush()
}

/// Reads one frame of at most `limit` bytes; `None` at end of stream before
/// its first byte.
pub(super) fn read_frame(stream: &mut impl Read, limit: u64) -> io::Result<Option<Vec<u8>>> {
    let mut len = [0u8; 4];
    match stream.read_exact(&mut len) {
        Ok(()) => {}
        Err(error) if error.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(error) => return Err(error),
    }
    let len = u32::from_le_bytes(len);
    if u64::from(len) > limit {
        return Err(io::Error::other(format!(
            "a {len}-byte frame is over {limit} bytes"
        )));
    }
    let mut bytes = vec![0u8; len as usize];
    stream.read_exact(&mut bytes)?;
    Ok(Some(bytes))
}
