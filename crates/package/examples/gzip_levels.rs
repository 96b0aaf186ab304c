//! Benchmark helper: compress stdin with the archive's gzip at each level on
//! one thread and print the size and CPU-bound time, to choose the level.
//!
//!     tar -cf - DIR | cargo run --release -p astrolift-package --example gzip_levels

use std::error::Error;
use std::io::{Read, Write};
use std::time::Instant;

use astrolift_package::gzip::ParallelGzip;

fn main() -> Result<(), Box<dyn Error>> {
    let mut input = Vec::new();
    std::io::stdin().read_to_end(&mut input)?;
    for level in 1..=9 {
        let start = Instant::now();
        let mut gzip = ParallelGzip::new(Vec::new(), level, 1);
        gzip.write_all(&input)?;
        let out = gzip.finish()?;
        println!(
            "level {level}: {} bytes, {:.2} s",
            out.len(),
            start.elapsed().as_secs_f64()
        );
    }
    Ok(())
}
