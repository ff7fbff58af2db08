//! The `referee` binary: the definition of the CLI plus glue. Exit codes and
//! error printing are handled here, in one place.

mod cli;
mod cmd;
mod render;

use std::process::ExitCode;

use clap::Parser;

/// jemalloc rather than glibc's malloc: its thread cache serves the blocks a
/// match allocates (a replay's rounds are 1,632 bytes, past glibc's 1,032-byte
/// cache). docs/perf/runner.md, "jemalloc for the binaries". A build without
/// the `jemalloc` feature keeps the system allocator.
#[cfg(feature = "jemalloc")]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match cmd::run(cli) {
        Ok(outcome) => outcome.exit_code(),
        Err(error) => {
            // The whole context chain on one line, each cause once (an error
            // of ours already ends with its cause's words); what it quotes
            // from a file never reaches the terminal as escapes.
            let line = duel_referee::terminal::error_line(error.as_ref());
            eprintln!("referee: error: {}", render::safe(&line));
            ExitCode::from(cmd::EXIT_ERROR)
        }
    }
}
