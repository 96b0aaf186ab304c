//! Standard output of every command, and what a closed pipe means.
//!
//! Every write to stdout goes through [`Stdout`] (directly, buffered, or through
//! [`outln!`]), which notes a broken pipe. Commands propagate the write's error as any
//! other (whatever wraps it: a context, a JSON serializer); `main` asks
//! [`stdout_closed`] and exits 0 quietly, as other Unix tools do when their reader stops
//! early (`astrolift … | head`, docs/reference.md §3). Only stdout is noted: a broken
//! pipe to GitHub, a queue or a worker process stays a failure.

use std::fmt;
use std::io::{self, BufWriter, StdoutLock, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once a write to standard output met a broken pipe.
static CLOSED: AtomicBool = AtomicBool::new(false);

/// A writer to standard output (or a stream over it) that notes a broken pipe.
pub struct Stdout<W>(W);

impl<W: Write> Write for Stdout<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf).map_err(mark)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush().map_err(mark)
    }
}

fn mark(error: io::Error) -> io::Error {
    if error.kind() == io::ErrorKind::BrokenPipe {
        CLOSED.store(true, Ordering::Relaxed);
    }
    error
}

/// Standard output, line-buffered as `println!`'s.
pub fn stdout() -> Stdout<StdoutLock<'static>> {
    Stdout(io::stdout().lock())
}

/// Standard output, buffered: for a document written in many pieces. Flush it.
pub fn buffered() -> BufWriter<Stdout<StdoutLock<'static>>> {
    BufWriter::new(stdout())
}

/// Standard output, buffered, with ANSI styles kept only where
/// [`astrolift_cli::colour::stdout`] allows them. Flush it.
pub fn styled() -> BufWriter<Stdout<anstream::AutoStream<StdoutLock<'static>>>> {
    let choice = if astrolift_cli::colour::stdout() {
        anstream::ColorChoice::Always
    } else {
        anstream::ColorChoice::Never
    };
    BufWriter::new(Stdout(anstream::AutoStream::new(
        io::stdout().lock(),
        choice,
    )))
}

/// Writes `args` and a line break to standard output.
pub fn line(args: fmt::Arguments<'_>) -> io::Result<()> {
    let mut out = stdout();
    out.write_fmt(args)?;
    out.write_all(b"\n")
}

/// Writes `text` to standard output as it is, and flushes it.
pub fn text(text: &str) -> io::Result<()> {
    let mut out = stdout();
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// `println!` that returns the write's error instead of panicking.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::output::line(format_args!($($arg)*))
    };
}
pub(crate) use outln;

/// Whether standard output's reader has gone away: a command that failed after that
/// failed because of it.
pub fn stdout_closed() -> bool {
    CLOSED.load(Ordering::Relaxed)
}
