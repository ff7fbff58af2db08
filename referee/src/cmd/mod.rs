//! The subcommands, one module each (`local`, `replay`, `arena`, `serve`), and
//! what they share: the outcome and its exit code, standard output, colour,
//! logging, and the match host built from flags and the environment. The
//! submodules depend on this one and on the few helpers docs/ARCHITECTURE.md
//! lists (`source`, `watch`, `python_endpoint`, `fork`, `replay`'s loading
//! and keys), never otherwise on each other.

pub mod arena;
mod fork;
pub mod local;
mod losses;
pub mod new;
pub mod python_endpoint;
pub mod replay;
pub mod serve;
pub mod source;
mod watch;

use std::io::{IsTerminal, Write};

use anyhow::{Context, Result};
use duel_referee::HostConfig;

use crate::cli::{Cli, ColorArgs, ColorChoice, Command, ModelArgs, ReplayCommand};
use crate::render::Palette;

pub use duel_plumbing::outcome::{EXIT_ERROR, Outcome};

pub fn run(cli: Cli) -> Result<Outcome> {
    match cli.command {
        Command::Local(args) => local::run(args),
        Command::Replay(ReplayCommand::Show { path, logs, color }) => {
            replay::show(&path, palette(&color), logs)
        }
        Command::Replay(ReplayCommand::Verify {
            path,
            public_key,
            transcript,
            parent,
            json,
        }) => replay::verify(
            &path,
            public_key.as_deref(),
            transcript.as_deref(),
            parent.as_deref(),
            json,
        ),
        Command::Replay(ReplayCommand::Fetch(args)) => replay::fetch(args),
        Command::Replay(ReplayCommand::Serve(args)) => replay::serve(args),
        Command::Replay(ReplayCommand::Put { store, paths }) => replay::put(&store, &paths),
        Command::Replay(ReplayCommand::Sign { path, out, key }) => {
            replay::sign(&path, out.as_deref(), &key)
        }
        Command::Tournament(args) => arena::tournament(args),
        Command::Sprt(args) if args.from_losses.is_some() => losses::sprt(args),
        Command::Sprt(args) => arena::sprt(args),
        Command::Serve(args) => serve::run(args),
        Command::New(args) => new::run(args),
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
    duel_plumbing::logging::init(json, default_level);
}

/// The match host's configuration from the model flags and the environment
/// (the model key, extra TLS roots, the compiled-bot cache): the one place the
/// referee binary reads them.
pub fn host_config(model: &ModelArgs) -> Result<HostConfig> {
    Ok(duel_referee::env::host_config(model.flags())?)
}

/// Starts the metered gateway (`duel.v1.Inference` and its OpenAI-compatible
/// face) on an ephemeral loopback port when an endpoint bot plays, so it can
/// think through it as in `referee serve`. Dropping the sender stops it.
pub async fn local_inference(
    specs: &[duel_referee::BotSpec],
) -> Result<
    Option<(
        duel_referee::InferenceLink,
        tokio::sync::oneshot::Sender<()>,
    )>,
> {
    if !specs
        .iter()
        .any(|spec| matches!(spec, duel_referee::BotSpec::Endpoint(_)))
    {
        return Ok(None);
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .context("cannot open a loopback port for the Inference service")?;
    let address = listener
        .local_addr()
        .context("cannot read the Inference address")?;
    let credentials = duel_referee::credentials::Credentials::new();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(duel_referee::grpc::serve_inference(
        listener,
        credentials.clone(),
        async move {
            let _ = stopped.await;
        },
    ));
    Ok(Some((
        duel_referee::InferenceLink {
            url: format!("http://{address}"),
            credentials,
        },
        stop,
    )))
}

/// A single-threaded runtime for commands that do a little async work.
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}
