//! The `referee` binary: the definition of the CLI plus glue. Exit codes and
//! error printing are handled here, in one place.

mod cli;
mod cmd;
mod render;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match cmd::run(cli) {
        Ok(outcome) => outcome.exit_code(),
        Err(error) => {
            // `{:#}` prints the whole context chain on one line.
            eprintln!("referee: error: {error:#}");
            ExitCode::from(cmd::EXIT_ERROR)
        }
    }
}
