//! The subcommands, one module each (`local`, `replay`, `arena`, `serve`), and
//! what they share: the outcome and its exit code, standard output, colour,
//! logging, and the match host built from flags and the environment. The
//! submodules depend on this one only, never on each other.

pub mod arena;
pub mod local;
pub mod replay;
pub mod serve;
mod watch;

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use anyhow::{Context, Result};
use duel_referee::{HostConfig, ModelConfig, ModelGateway};
use tracing_subscriber::EnvFilter;

use crate::cli::{Cli, ColorArgs, ColorChoice, Command, ModelArgs, ReplayCommand};
use crate::render::Palette;

/// How a command ended. The exit codes are one rule for both binaries
/// (README, "Exit codes"): 0 done, 1 a negative verdict, 2 bad input or any
/// error that stopped the command, 3 no verdict, 130 interrupted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Done (a match played, whatever its result; a replay that verifies; H1).
    Done,
    /// A negative verdict: the replay disagrees with the rules; SPRT accepted H0.
    Negative,
    /// No verdict: SPRT ran out of pairs.
    NoVerdict,
    /// Stopped by ctrl-c or SIGTERM before the end.
    Interrupted,
}

/// Exit code of an error (bad input, or anything that stopped the command).
pub const EXIT_ERROR: u8 = 2;

impl Outcome {
    pub fn exit_code(self) -> ExitCode {
        ExitCode::from(match self {
            Outcome::Done => 0,
            Outcome::Negative => 1,
            Outcome::NoVerdict => 3,
            Outcome::Interrupted => 130,
        })
    }
}

pub fn run(cli: Cli) -> Result<Outcome> {
    match cli.command {
        Command::Local(args) => local::run(args),
        Command::Replay(ReplayCommand::Show { path, logs, color }) => {
            replay::show(&path, palette(&color), logs)
        }
        Command::Replay(ReplayCommand::Verify {
            path,
            public_key,
            json,
        }) => replay::verify(&path, public_key.as_deref(), json),
        Command::Replay(ReplayCommand::Fetch(args)) => replay::fetch(args),
        Command::Replay(ReplayCommand::Serve(args)) => replay::serve(args),
        Command::Replay(ReplayCommand::Put { store, paths }) => replay::put(&store, &paths),
        Command::Replay(ReplayCommand::Sign { path, out, key }) => {
            replay::sign(&path, out.as_deref(), &key)
        }
        Command::Tournament(args) => arena::tournament(args),
        Command::Sprt(args) => arena::sprt(args),
        Command::Serve(args) => serve::run(args),
    }
}

/// Standard output that stops quietly when the reader goes away (`| head`).
pub struct Stdout {
    closed: bool,
}

impl Stdout {
    pub fn new() -> Stdout {
        Stdout { closed: false }
    }

    pub fn print(&mut self, text: &str) -> Result<()> {
        if self.closed {
            return Ok(());
        }
        let mut stdout = std::io::stdout().lock();
        match stdout
            .write_all(text.as_bytes())
            .and_then(|()| stdout.flush())
        {
            Ok(()) => Ok(()),
            Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(())
            }
            Err(error) => Err(error).context("cannot write to standard output"),
        }
    }
}

/// Colour when asked, or when stdout is a terminal and `NO_COLOR` is unset.
pub fn palette(color: &ColorArgs) -> Palette {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|value| !value.is_empty());
    Palette::new(match color.color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => !no_color && std::io::stdout().is_terminal(),
    })
}

/// Log lines to stderr, filtered by `RUST_LOG` (default: `default_level`).
pub fn init_logging(json: bool, default_level: &str) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_level));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    // A second initialisation (tests) is harmless; ignore it.
    let _ = if json {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
}

/// The match host's configuration from the model flags and the environment
/// (the model key, extra TLS roots, the compiled-bot cache): the one place the
/// referee binary reads them.
pub fn host_config(model: &ModelArgs) -> Result<HostConfig> {
    let trust = duel_referee::env::trust()?;
    let gateway = match (&model.model_url, &model.model) {
        (Some(url), Some(name)) => ModelGateway::trusting(
            ModelConfig::new(
                url.clone(),
                name.clone(),
                duel_referee::env::model_api_key(),
            ),
            &trust,
        )?,
        _ => ModelGateway::disabled(),
    };
    let mut config = HostConfig::new(gateway);
    config.wasm_cache_dir = duel_referee::env::wasm_cache_dir();
    config.trust = trust;
    Ok(config)
}

/// A single-threaded runtime for commands that do a little async work.
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}
