//! One module per subcommand. Each has an `Args` (clap derive) and a
//! `run(Args) -> anyhow::Result<ExitCode>`; an `Err` is reported by `main`
//! and exits [`EXIT_FAILURE`].

pub mod validate;

/// Findings with at least one error.
pub const EXIT_FINDINGS: u8 = 1;
/// Usage or I/O failure.
pub const EXIT_FAILURE: u8 = 2;
