//! `referee local A B`: one match between two bot specs, its tape on stdout
//! (or the replay as JSON), optionally written to a file and watched live in
//! the browser.

use std::path::Path;

use anyhow::{Context, Result, bail};
use duel_plumbing::Shutdown;
use duel_referee::publish::{LiveEvent, LivePublisher};
use duel_referee::{
    EndpointPolicy, ForkStart, MatchHost, MatchOptions, MatchRecorder, MatchSession, Played,
    ReplaySinks,
};
use duel_replays::{CallOutcome, RoundResultRecord};
use duel_rules::{ExchangeStep, Side};

use super::fork::{self, ForkPlan};
use super::source::{self, ResolvedBot, SlowNotice};
use super::watch::{Watch, open_browser};
use super::{Outcome, Stdout, host_config, init_logging, local_inference, palette};
use crate::cli::LocalArgs;
use crate::render::{self, Palette, ReplayHead};

/// How long preparing the fighters may take before the user is told why.
const COMPILE_NOTICE_AFTER: std::time::Duration = std::time::Duration::from_millis(1500);

pub fn run(args: LocalArgs) -> Result<Outcome> {
    init_logging(false, "warn");
    let (bots, fork, key) = match (&args.from, &args.bot_a, &args.bot_b) {
        (Some(from), _, _) => {
            let plan = ForkPlan::load(from, &args.swap)?;
            // Made (or loaded) before the match, so a key problem costs no match.
            let key = super::replay::signing_key(&args.key)?;
            (plan.bots, Some(plan.start), Some(key))
        }
        (None, _, _) if !args.swap.is_empty() => {
            bail!("--swap replaces a side of a recorded match: give the match with --from REPLAY")
        }
        (None, Some(a), Some(b)) => ([source::resolve(a)?, source::resolve(b)?], None, None),
        // clap requires A and B without --from.
        _ => bail!("give two bots (A B), or a replay to fork with --from"),
    };
    // Endpoint bots run from their folder play while these are kept.
    let _processes: Vec<_> = bots.iter().filter_map(|bot| bot.process.clone()).collect();
    for path in [&args.replay, &args.transcript].into_iter().flatten() {
        check_writable_parent(path)?;
    }
    let runtime = runtime(args.watch)?;
    let (session, inference, model_configured) = runtime.block_on(prepare(&args, bots, fork))?;
    let fork_marker = match &session.config().fork {
        Some(fork) => {
            fork::check_recorded(fork, session.fighters())?;
            Some((
                fork.prefix_len(),
                render::fork_point_line(fork.record(), session.fighters()),
            ))
        }
        None => None,
    };
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
        if let Some(fork) = &session.config().fork {
            stdout.print(&render::fork_line(fork.record()))?;
        }
    }
    let mut tape = Tape {
        palette,
        stdout: &mut stdout,
        quiet: args.json,
        logs: args.logs,
        publisher: publisher.as_ref(),
        error: None,
        warn_no_model: !model_configured,
        fork_marker,
        exchanges_seen: 0,
    };
    let mut played = runtime.block_on(session.play(&mut tape));
    if let Some(error) = tape.error {
        return Err(error);
    }
    if let Some(watch) = &watch {
        runtime.block_on(watch.sinks().keep_played(&mut played))?;
    }
    // After the viewer's copy (signed with the session's key): the fork's
    // file and JSON carry the user's key.
    if let Some(key) = &key {
        duel_replays::sign(&mut played.replay, key).context("cannot sign the fork's replay")?;
    }
    if let Some(publisher) = publisher {
        publisher.finish(&played.replay.result);
    }
    report(&mut stdout, palette, &args, &mut played, &runtime)?;
    let replay = &played.replay;
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
/// while the returned guard lives) when an endpoint bot plays. Also says
/// whether a model is configured.
async fn prepare(
    args: &LocalArgs,
    bots: [ResolvedBot; 2],
    fork: Option<ForkStart>,
) -> Result<(MatchSession, Option<tokio::sync::oneshot::Sender<()>>, bool)> {
    // One match: its two WASM instances come from a pool (a few times cheaper
    // to set up than on demand).
    let mut config = host_config(&args.model)?.playing_at_once(1);
    config.endpoints = EndpointPolicy::LOCAL;
    let model_configured = config.gateway.is_enabled();
    let inference = local_inference(&bots.each_ref().map(|bot| bot.spec.clone())).await?;
    config.inference = inference.as_ref().map(|(link, _)| link.clone());
    // Loads the tokenizer when a model is configured: before any clock runs.
    let host = tokio::task::spawn_blocking(move || MatchHost::new(config))
        .await
        .context("cannot start the match host")?;
    let wall_clock = std::time::Duration::from_secs_f64(args.wall_clock);
    let options = match fork {
        Some(fork) => fork.options(wall_clock),
        None => {
            let mut options = MatchOptions::new(args.class.into()).wall_clock(wall_clock);
            options.seed = args.seed;
            options
        }
    };
    // Compiling a large component (a Python bot) the first time is said,
    // with the time it took, not silent; from the cache it takes
    // milliseconds and says nothing.
    let compiling = SlowNotice::after(
        COMPILE_NOTICE_AFTER,
        "compiling the bots' components to machine code (kept in the cache for later runs)…",
        "compiled the bots' components",
    );
    let session = host
        .prepare(bots.each_ref().map(ResolvedBot::fighter), options)
        .await;
    compiling.done();
    let session = session?;
    Ok((session, inference.map(|(_, stop)| stop), model_configured))
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
    /// No model is configured: the first model call says so on stderr, once.
    warn_no_model: bool,
    /// A fork: how many exchanges are the parent's, and the line printed
    /// before the first that is not.
    fork_marker: Option<(usize, String)>,
    exchanges_seen: usize,
}

impl duel_referee::MatchObserver for Tape<'_> {
    fn exchange(&mut self, recorder: &MatchRecorder, step: &ExchangeStep) {
        // Watched by the bot's author alone: what its models said goes too.
        if let Some(publisher) = self.publisher {
            publisher.step_with_transcript(recorder, step);
        }
        if self.warn_no_model
            && Side::BOTH.iter().any(|side| {
                recorder
                    .last_calls(*side)
                    .iter()
                    .any(|call| call.outcome == CallOutcome::Unavailable && call.price.is_none())
            })
        {
            self.warn_no_model = false;
            eprintln!(
                "warning: a bot called a model, but none is configured: its calls are refused as unavailable (free). Try --model-url builtin:house (offline), --model-url URL --model NAME, or --models FILE."
            );
        }
        if self.quiet || self.error.is_some() {
            return;
        }
        let Some((round, exchange)) = recorder.last_exchange() else {
            return;
        };
        let palette = self.palette;
        let mut text = String::new();
        self.exchanges_seen += 1;
        if let Some((prefix_len, marker)) = &self.fork_marker
            && self.exchanges_seen == prefix_len + 1
            && *prefix_len > 0
        {
            text.push_str(marker);
        }
        if step.exchange == 1 {
            text.push_str(&render::round_heading(palette, step.round));
        }
        text.push_str(&render::exchange_line(
            palette,
            recorder.config().ruleset,
            exchange,
        ));
        let views = Side::BOTH.map(|side| {
            recorder
                .last_calls(side)
                .iter()
                .map(render::CallView::live)
                .collect::<Vec<_>>()
        });
        text.push_str(&render::exchange_calls(
            palette,
            [&views[0], &views[1]],
            self.logs,
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
/// the replay and transcript files when asked for.
fn report(
    stdout: &mut Stdout,
    palette: Palette,
    args: &LocalArgs,
    played: &mut Played,
    runtime: &tokio::runtime::Runtime,
) -> Result<()> {
    let replay = &played.replay;
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
    let mut sinks = ReplaySinks::new();
    if let Some(path) = &args.replay {
        sinks = sinks.write_to(path.clone());
    }
    if let Some(path) = &args.transcript {
        sinks = sinks.transcript_to(path.clone());
    }
    runtime.block_on(sinks.keep_played(played))?;
    if !args.json {
        if let Some(path) = &args.replay {
            stdout.print(&format!("\nreplay written to {}\n", path.display()))?;
        }
        if let Some(path) = &args.transcript {
            let decisions = played
                .transcript
                .as_ref()
                .map_or(0, |kept| kept.decisions.len());
            stdout.print(&format!(
                "transcript written to {} ({decisions} decision{} with model calls)\n",
                path.display(),
                if decisions == 1 { "" } else { "s" }
            ))?;
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
