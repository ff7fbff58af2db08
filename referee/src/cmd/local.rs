//! `referee local A B`: one match between two bot specs, its tape on stdout
//! (or the replay as JSON), optionally written to a file and watched live in
//! the browser.

use std::path::Path;

use anyhow::{Context, Result, bail};
use duel_referee::credentials::Credentials;
use duel_referee::publish::{LiveEvent, LivePublisher};
use duel_referee::shutdown::Shutdown;
use duel_referee::{
    BotSpec, EndpointPolicy, InferenceLink, MatchHost, MatchOptions, MatchRecorder, MatchSession,
    ReplaySinks,
};
use duel_replays::{Replay, RoundResultRecord};
use duel_rules::ExchangeStep;

use super::source::{self, ResolvedBot, SlowNotice};
use super::watch::{Watch, open_browser};
use super::{Outcome, Stdout, host_config, init_logging, palette};
use crate::cli::LocalArgs;
use crate::render::{self, Palette, ReplayHead};

/// How long preparing the fighters may take before the user is told why.
const COMPILE_NOTICE_AFTER: std::time::Duration = std::time::Duration::from_millis(1500);

pub fn run(args: LocalArgs) -> Result<Outcome> {
    init_logging(false, "warn");
    let bots = [source::resolve(&args.bot_a)?, source::resolve(&args.bot_b)?];
    if let Some(path) = &args.replay {
        check_writable_parent(path)?;
    }
    let runtime = runtime(args.watch)?;
    let (session, inference) = runtime.block_on(prepare(&args, bots))?;
    let palette = palette(&args.color);
    let mut stdout = Stdout::new();
    let watch = match args.watch {
        true => Some(runtime.block_on(Watch::start(args.watch_addr))?),
        false => None,
    };
    // Listened for from before the URL is printed, so an early ctrl-c is seen.
    let shutdown = watch.as_ref().map(|_| Shutdown::install()).transpose()?;
    let publisher = match &watch {
        Some(watch) => Some(open_watch(&runtime, watch, &session, &args, &mut stdout)?),
        None => None,
    };
    if !args.json {
        stdout.print(&render::header(palette, &head(&session)))?;
    }
    let mut tape = Tape {
        palette,
        stdout: &mut stdout,
        quiet: args.json,
        logs: args.logs,
        publisher: publisher.as_ref(),
        error: None,
    };
    let mut replay = runtime.block_on(session.play(&mut tape));
    if let Some(error) = tape.error {
        return Err(error);
    }
    if let Some(watch) = &watch {
        runtime.block_on(watch.sinks().keep(&mut replay))?;
    }
    if let Some(publisher) = publisher {
        publisher.finish(&replay.result);
    }
    report(&mut stdout, palette, &args, &mut replay, &runtime)?;
    if let (Some(watch), Some(shutdown)) = (watch, shutdown) {
        notice(
            &mut stdout,
            args.json,
            &format!(
                "\nthe viewer stays on the replay at {} (JSON: {}); ctrl-c to stop\n",
                watch.view_url(&replay.match_id),
                watch.replay_url(&replay.match_id)
            ),
        )?;
        runtime.block_on(watch.serve_until(&shutdown))?;
    }
    // Everything asked for is written. Dropping the runtime would wake and
    // join its idle blocking thread (it built the host): a cross-thread
    // wake-up and a thread exit added to every run's wall time, for nothing
    // that needs finishing (the match, and with it the fighters, ended in
    // `play`). The process exit takes the rest.
    drop(inference);
    runtime.shutdown_background();
    Ok(Outcome::Done)
}

/// `--watch` serves HTTP while the match plays: a WASM bot's decision must not
/// stall the spectators, so it gets worker threads.
fn runtime(watch: bool) -> Result<tokio::runtime::Runtime> {
    if !watch {
        return super::runtime();
    }
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// The host and both fighters; the Inference service runs (and stays up
/// while the returned guard lives) when an endpoint bot plays.
async fn prepare(
    args: &LocalArgs,
    bots: [ResolvedBot; 2],
) -> Result<(MatchSession, Option<tokio::sync::oneshot::Sender<()>>)> {
    // One match: its two WASM instances come from a pool (a few times cheaper
    // to set up than on demand).
    let mut config = host_config(&args.model)?.playing_at_once(1);
    config.endpoints = EndpointPolicy::LOCAL;
    let inference = local_inference(&bots.each_ref().map(|bot| bot.spec.clone())).await?;
    config.inference = inference.as_ref().map(|(link, _)| link.clone());
    // Loads the tokenizer when a model is configured: before any clock runs.
    let host = tokio::task::spawn_blocking(move || MatchHost::new(config))
        .await
        .context("cannot start the match host")?;
    let mut options = MatchOptions::new(args.class.into())
        .wall_clock(std::time::Duration::from_secs_f64(args.wall_clock));
    options.seed = args.seed;
    // Compiling a large component (a Python bot: ~30 s) the first time is
    // said, not silent; from the cache it takes milliseconds and says nothing.
    let compiling = SlowNotice::after(
        COMPILE_NOTICE_AFTER,
        "compiling the bots' components (the first time takes up to ~30 s for a large bot; later runs use the cache)…",
    );
    let session = host
        .prepare(bots.each_ref().map(ResolvedBot::fighter), options)
        .await;
    compiling.done();
    let session = session?;
    Ok((session, inference.map(|(_, stop)| stop)))
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

fn head(session: &MatchSession) -> ReplayHead<'_> {
    let config = session.config();
    ReplayHead {
        ruleset: config.ruleset.version(),
        match_id: &config.match_id,
        accepted_at: &config.accepted_at,
        class: config.class.into(),
        budget: config.budget_tokens(),
        seed: config.seed,
        fighters: session.fighters(),
        opening: &[],
    }
}

/// Opens the match's live feed, prints its URL (opening a browser when there
/// is one), and waits for the first spectator for up to `--watch-wait`.
fn open_watch(
    runtime: &tokio::runtime::Runtime,
    watch: &Watch,
    session: &MatchSession,
    args: &LocalArgs,
    stdout: &mut Stdout,
) -> Result<LivePublisher> {
    let config = session.config();
    let publisher = watch.start_feed(
        &config.match_id,
        LiveEvent::start_of_match(config, session.fighters()),
    )?;
    let url = watch.view_url(&config.match_id);
    notice(stdout, args.json, &format!("watch live: {url}\n"))?;
    if open_browser(&url) {
        notice(stdout, args.json, "(opened in your browser)\n")?;
    }
    if args.watch_wait > 0 {
        notice(
            stdout,
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
    Ok(publisher)
}

/// The tape as the match is played: one line per exchange, a heading per
/// round, its result when it ends; and the live feed, when watched.
struct Tape<'a> {
    palette: Palette,
    stdout: &'a mut Stdout,
    /// `--json`: the replay is printed at the end instead.
    quiet: bool,
    /// `--logs`: each exchange's log lines under it.
    logs: bool,
    publisher: Option<&'a LivePublisher>,
    /// The first failure to print; the match goes on, the command fails after.
    error: Option<anyhow::Error>,
}

impl duel_referee::MatchObserver for Tape<'_> {
    fn exchange(&mut self, recorder: &MatchRecorder, step: &ExchangeStep) {
        if let Some(publisher) = self.publisher {
            publisher.step(recorder, step);
        }
        if self.quiet || self.error.is_some() {
            return;
        }
        let Some((round, exchange)) = recorder.last_exchange() else {
            return;
        };
        let palette = self.palette;
        let mut text = String::new();
        if step.exchange == 1 {
            text.push_str(&render::round_heading(palette, step.round));
        }
        text.push_str(&render::exchange_line(
            palette,
            recorder.config().ruleset,
            exchange,
        ));
        if self.logs {
            text.push_str(&render::exchange_logs(palette, exchange));
        }
        if let Some(result) = step.round_result {
            text.push_str(&render::round_result_line(
                palette,
                round,
                &RoundResultRecord {
                    winner: result.winner.into(),
                    by: result.by.into(),
                },
                Some(exchange),
            ));
        }
        if let Err(error) = self.stdout.print(&text) {
            self.error = Some(error);
        }
    }
}

/// The end of the output: the result and summary (or the replay as JSON), and
/// the replay file when asked for.
fn report(
    stdout: &mut Stdout,
    palette: Palette,
    args: &LocalArgs,
    replay: &mut Replay,
    runtime: &tokio::runtime::Runtime,
) -> Result<()> {
    if args.json {
        stdout.print(&replay.to_json_pretty())?;
    } else {
        stdout.print(&render::match_result_line(
            palette,
            &replay.fighters,
            &replay.result,
        ))?;
        stdout.print(&render::summary(palette, replay))?;
    }
    if let Some(path) = &args.replay {
        runtime.block_on(ReplaySinks::new().write_to(path.clone()).keep(replay))?;
        if !args.json {
            stdout.print(&format!("\nreplay written to {}\n", path.display()))?;
        }
    }
    Ok(())
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
