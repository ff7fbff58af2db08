//! The `ladder` binary: `serve`, `worker`, `init` and `ledger check --db` work
//! on the database directly; every other command is a client of `ladder
//! serve`. Exit codes and error printing are handled here, in one place.

mod cli;
mod client;
mod cmd;

use std::process::ExitCode;

use clap::Parser;
use duel_plumbing::EXIT_ERROR;

/// jemalloc rather than glibc's malloc: its thread cache serves the blocks a
/// match allocates (docs/perf/runner.md, "jemalloc for the binaries").
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    duel_plumbing::logging::init(false, "info");
    let cli = cli::Cli::parse();
    match cmd::run(cli) {
        Ok(outcome) => outcome.exit_code(),
        Err(error) => {
            // The whole context chain on one line, each cause once; what it
            // quotes from the server never reaches the terminal as escapes.
            eprintln!(
                "ladder: error: {}",
                duel_referee::terminal::safe(&cmd::one_line(&error))
            );
            ExitCode::from(EXIT_ERROR)
        }
    }
}
