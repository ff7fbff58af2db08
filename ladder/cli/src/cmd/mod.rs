//! The commands, one module each: [`init`], [`serve`] (`serve` and `worker`),
//! [`ledger`] and [`bench`] (`bench`, `bench-site`); the client commands are
//! [`crate::client`]'s. Each parses nothing: it gets its arguments from
//! [`crate::cli`], does its work and returns how it ended.

mod bench;
mod init;
mod ledger;
mod serve;

use anyhow::{Context, Result};
use duel_plumbing::Outcome;

use crate::cli::{Cli, Command};

/// `println!` that survives a closed pipe (`ladder bench | head -1`).
macro_rules! say {
    ($($arg:tt)*) => {
        crate::client::emit(&format!("{}\n", format_args!($($arg)*)))
    };
}
pub(crate) use say;

/// Runs `cli`'s command on a fresh async runtime.
pub fn run(cli: Cli) -> Result<Outcome> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(dispatch(cli))
}

async fn dispatch(cli: Cli) -> Result<Outcome> {
    match cli.command {
        Command::Init(args) => init::run(args).await,
        Command::Worker(args) => serve::worker(args).await,
        Command::Serve(args) => serve::serve(args).await,
        Command::Bench(args) => bench::settle(args).await,
        Command::BenchSite { command } => bench::site(command).await,
        Command::Ledger { command } => ledger::run(cli.connection, command).await,
        Command::Client(command) => {
            crate::client::run(cli.connection, command).await?;
            Ok(Outcome::Done)
        }
    }
}

/// An error and its chain on one line, `context: error: cause`, as `{:#}`
/// prints it, but each cause once: the ladder's errors end their message
/// with their source's words (`database error: …`), which the chain would
/// print again.
pub fn one_line(error: &anyhow::Error) -> String {
    duel_referee::terminal::error_line(error.as_ref())
}

/// A verdict as an outcome: done when `ok`, else negative (exit 1).
fn verdict(ok: bool) -> Outcome {
    if ok { Outcome::Done } else { Outcome::Negative }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chain_names_each_cause_once() {
        let address = "127.0.0.1:1".parse().expect("address");
        let error = anyhow::Error::new(duel_ladder::ServiceError::Listen {
            address,
            what: "gRPC",
            source: std::io::Error::other("address in use"),
        })
        .context("serving l.db on 127.0.0.1:1");
        assert_eq!(
            one_line(&error),
            "serving l.db on 127.0.0.1:1: cannot listen on 127.0.0.1:1 (gRPC): address in use"
        );
        let plain = anyhow::anyhow!("no such file").context("opening l.db");
        assert_eq!(one_line(&plain), format!("{plain:#}"));
    }
}
