//! The `referee` binary: the definition of the CLI plus glue. Exit codes and
//! error printing are handled here, in one place.

mod cli;
mod cmd;
mod render;

use std::process::ExitCode;

use clap::Parser;

/// jemalloc rather than glibc's malloc: its thread cache serves the blocks a
/// match allocates (a replay's rounds are 1,632 bytes, past glibc's 1,032-byte
/// cache). docs/perf/runner.md, "jemalloc for the binaries".
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match cmd::run(cli) {
        Ok(outcome) => outcome.exit_code(),
        Err(error) => {
            // `{:#}` prints the whole context chain on one line; what it
            // quotes from a file never reaches the terminal as escapes.
            eprintln!("referee: error: {}", render::safe(&format!("{error:#}")));
            ExitCode::from(cmd::EXIT_ERROR)
        }
    }
}
