//! What each subcommand does: build the real objects from the parsed flags, call
//! the library, format the result.

use std::hash::{BuildHasher, Hasher};
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use duel_referee::credentials::Credentials;
use duel_referee::publish::LiveEvent;
use duel_referee::runner::run_match_observed;
use duel_referee::{
    BotContext, BotSpec, InferenceLink, MatchConfig, ModelConfig, ModelGateway, make_bot,
};
use duel_rules::Side;

use crate::cli::{Cli, ColorArgs, ColorChoice, Command, LocalArgs, ModelArgs, ReplayCommand};
use crate::render::{self, Palette, ReplayHead};
use crate::replay_commands;
use crate::watch::{Interrupt, Watch};

/// Exit code when a replay does not verify.
pub const EXIT_DISAGREES: u8 = 1;
/// Exit code for bad input of any kind (clap uses it for bad flags too).
pub const EXIT_BAD_INPUT: u8 = 2;

/// Exit code of `sprt` when H0 was accepted.
pub const EXIT_H0: u8 = 1;
/// Exit code of `sprt` without a verdict.
pub const EXIT_NO_VERDICT: u8 = 3;
/// Exit code after ctrl-c (128 + SIGINT, as shells report it).
pub const EXIT_INTERRUPTED: u8 = 130;

#[derive(Debug)]
pub enum Outcome {
    Done,
    Disagrees,
    AcceptedH0,
    NoVerdict,
    Interrupted,
}

impl Outcome {
    pub fn exit_code(self) -> ExitCode {
        match self {
            Outcome::Done => ExitCode::SUCCESS,
            Outcome::Disagrees => ExitCode::from(EXIT_DISAGREES),
            Outcome::AcceptedH0 => ExitCode::from(EXIT_H0),
            Outcome::NoVerdict => ExitCode::from(EXIT_NO_VERDICT),
            Outcome::Interrupted => ExitCode::from(EXIT_INTERRUPTED),
        }
    }
}

pub fn run(cli: Cli) -> Result<Outcome> {
    match cli.command {
        Command::Local(args) => local(args),
        Command::Replay(ReplayCommand::Show { path, color }) => {
            replay_commands::show(&path, palette(&color))
        }
        Command::Replay(ReplayCommand::Verify {
            path,
            public_key,
            json,
        }) => replay_commands::verify(&path, public_key.as_deref(), json),
        Command::Replay(ReplayCommand::Fetch(args)) => replay_commands::fetch(args),
        Command::Replay(ReplayCommand::Serve(args)) => replay_commands::serve(args),
        Command::Replay(ReplayCommand::Put { store, paths }) => {
            replay_commands::put(&store, &paths)
        }
        Command::Replay(ReplayCommand::Sign { path, out, key }) => {
            replay_commands::sign(&path, out.as_deref(), &key)
        }
        Command::Tournament(args) => crate::report::tournament(args),
        Command::Sprt(args) => crate::report::sprt(args),
        Command::Serve(args) => crate::serve::serve(args),
    }
}

/// Standard output that stops quietly when the reader goes away (`| head`).
pub(crate) struct Stdout {
    closed: bool,
}

impl Stdout {
    pub(crate) fn new() -> Stdout {
        Stdout { closed: false }
    }

    pub(crate) fn print(&mut self, text: &str) -> Result<()> {
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

fn palette(color: &ColorArgs) -> Palette {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|value| !value.is_empty());
    Palette::new(match color.color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => !no_color && std::io::stdout().is_terminal(),
    })
}

fn random_seed() -> u64 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|elapsed| elapsed.as_nanos())
            .unwrap_or_default(),
    );
    // Keep seeds short enough to retype.
    hasher.finish() % 1_000_000_000
}

/// The model gateway the flags ask for (the key from the environment only).
pub fn gateway(model: &ModelArgs) -> Result<ModelGateway> {
    match (&model.model_url, &model.model) {
        (Some(url), Some(name)) => Ok(ModelGateway::new(ModelConfig::from_env(
            url.clone(),
            name.clone(),
        ))?),
        _ => Ok(ModelGateway::disabled()),
    }
}

/// Starts `duel.v1.Inference` on an ephemeral loopback port when an endpoint bot
/// plays, so it can think through the metered gateway like in `referee serve`.
async fn local_inference(
    specs: &[BotSpec; 2],
) -> Result<Option<(InferenceLink, tokio::sync::oneshot::Sender<()>)>> {
    if !specs
        .iter()
        .any(|spec| matches!(spec, BotSpec::Endpoint(_)))
    {
        return Ok(None);
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .context("cannot open a loopback port for the Inference service")?;
    let address = listener
        .local_addr()
        .context("cannot read the Inference address")?;
    let credentials = Credentials::new();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(duel_referee::grpc::serve_inference(
        listener,
        credentials.clone(),
        async move {
            let _ = stopped.await;
        },
    ));
    Ok(Some((
        InferenceLink {
            url: format!("http://{address}"),
            credentials,
        },
        stop,
    )))
}

fn check_writable_parent(path: &Path) -> Result<()> {
    let parent = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    if !parent.is_dir() {
        bail!(
            "cannot write replay {}: folder {} does not exist",
            path.display(),
            parent.display()
        );
    }
    Ok(())
}

fn local(args: LocalArgs) -> Result<Outcome> {
    let specs = [BotSpec::parse(&args.bot_a)?, BotSpec::parse(&args.bot_b)?];
    if let Some(path) = &args.replay {
        check_writable_parent(path)?;
    }
    let seed = args.seed.unwrap_or_else(random_seed);
    let gateway = gateway(&args.model)?;
    let accepted_at = time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .context("cannot format the current time")?;
    let mut config = MatchConfig::new(
        uuid::Uuid::new_v4().to_string(),
        accepted_at,
        args.class.into(),
        seed,
    );
    config.decision_wall_clock = std::time::Duration::from_secs_f64(args.wall_clock);
    // --watch serves HTTP while the match plays: a WASM bot's decision must
    // not stall the spectators, so it gets worker threads.
    let runtime = if args.watch {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    }
    .context("cannot start the async runtime")?;
    let (mut bot_a, mut bot_b, _inference_stop) = runtime.block_on(async {
        let inference = local_inference(&specs).await?;
        let link = inference.as_ref().map(|(link, _)| link.clone());
        let mut bots = Vec::with_capacity(2);
        for (spec, side) in specs.iter().zip(Side::BOTH) {
            let context = BotContext::new(
                &config,
                side,
                gateway.meter(config.budget_tokens()),
                link.clone(),
            );
            bots.push(make_bot(spec, &context).await?);
        }
        let bot_b = bots.pop().context("two bots")?;
        let bot_a = bots.pop().context("two bots")?;
        anyhow::Ok((bot_a, bot_b, inference.map(|(_, stop)| stop)))
    })?;
    let ruleset = config.ruleset;
    let palette = palette(&args.color);
    let mut stdout = Stdout::new();
    let fighters = [bot_a.info(), bot_b.info()];
    let watch = if args.watch {
        Some(runtime.block_on(Watch::start(args.watch_addr))?)
    } else {
        None
    };
    let publisher = match &watch {
        Some(watch) => Some(watch.start_feed(
            &config.match_id,
            LiveEvent::start_of_match(&config, &fighters),
        )?),
        None => None,
    };
    if let (Some(watch), Some(publisher)) = (&watch, &publisher) {
        let url = watch.view_url(&config.match_id);
        notice(&mut stdout, args.json, &format!("watch live: {url}\n"))?;
        if crate::watch::open_browser(&url) {
            notice(&mut stdout, args.json, "(opened in your browser)\n")?;
        }
        if args.watch_wait > 0 {
            notice(
                &mut stdout,
                args.json,
                &format!(
                    "the match starts when the viewer connects, or in {} s\n",
                    args.watch_wait
                ),
            )?;
            runtime.block_on(async {
                let wait = std::time::Duration::from_secs(args.watch_wait);
                let _ = tokio::time::timeout(wait, publisher.spectator_joined()).await;
            });
        }
    }
    if !args.json {
        stdout.print(&render::header(
            palette,
            &ReplayHead {
                ruleset: ruleset.version(),
                match_id: &config.match_id,
                accepted_at: &config.accepted_at,
                class: config.class.into(),
                budget: config.budget_tokens(),
                seed,
                fighters: &fighters,
            },
        ))?;
    }
    let mut print_error = None;
    let mut replay = runtime.block_on(run_match_observed(
        config,
        [bot_a.as_mut(), bot_b.as_mut()],
        |recorder, step| {
            if let Some(publisher) = &publisher {
                publisher.step(recorder, step);
            }
            if args.json || print_error.is_some() {
                return;
            }
            let Some((round, exchange)) = recorder.last_exchange() else {
                return;
            };
            let mut text = String::new();
            if step.exchange == 1 {
                text.push_str(&render::round_heading(palette, step.round));
            }
            text.push_str(&render::exchange_line(palette, ruleset, exchange));
            if let Some(result) = step.round_result {
                text.push_str(&render::round_result_line(
                    palette,
                    round,
                    &duel_replays::RoundResultRecord {
                        winner: result.winner.into(),
                        by: result.by.into(),
                    },
                    Some(exchange),
                ));
            }
            if let Err(error) = stdout.print(&text) {
                print_error = Some(error);
            }
        },
    ));
    if let Some(watch) = &watch {
        // Stored before spectators hear the end, so the viewer finds it.
        runtime.block_on(watch.publish(&mut replay))?;
    }
    if let Some(publisher) = publisher {
        publisher.finish(&replay.result);
    }
    if let Some(error) = print_error {
        return Err(error);
    }
    if args.json {
        stdout.print(&replay.to_json_pretty())?;
    } else {
        stdout.print(&render::match_result_line(
            palette,
            &replay.fighters,
            &replay.result,
        ))?;
        stdout.print(&render::summary(palette, &replay))?;
    }
    if let Some(path) = &args.replay {
        replay.write(path)?;
        if !args.json {
            stdout.print(&format!("\nreplay written to {}\n", path.display()))?;
        }
    }
    if let Some(watch) = watch {
        let interrupt = {
            let _context = runtime.enter();
            Interrupt::register()?
        };
        notice(
            &mut stdout,
            args.json,
            &format!(
                "\nthe viewer stays on the replay at {} (JSON: {}); ctrl-c to stop\n",
                watch.view_url(&replay.match_id),
                watch.replay_url(&replay.match_id)
            ),
        )?;
        runtime.block_on(watch.serve_until(interrupt))?;
    }
    Ok(Outcome::Done)
}

/// What `--watch` tells the user: on stdout, or on stderr when stdout carries
/// the replay JSON.
fn notice(stdout: &mut Stdout, json: bool, text: &str) -> Result<()> {
    if json {
        eprint!("{text}");
        Ok(())
    } else {
        stdout.print(text)
    }
}
