//! What each subcommand does: build the real objects from the parsed flags, call
//! the library, format the result.

use std::hash::{BuildHasher, Hasher};
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use duel_referee::builtin::BuiltinBot;
use duel_referee::runner::run_match_observed;
use duel_referee::verify::verify_replay;
use duel_referee::{Bot, BotSpec, MatchConfig};
use duel_replays::Replay;
use duel_rules::Side;

use crate::cli::{Cli, ColorArgs, ColorChoice, Command, LocalArgs, ReplayCommand};
use crate::render::{self, Palette, ReplayHead};

/// Exit code when a replay does not verify.
pub const EXIT_DISAGREES: u8 = 1;
/// Exit code for bad input of any kind (clap uses it for bad flags too).
pub const EXIT_BAD_INPUT: u8 = 2;

#[derive(Debug)]
pub enum Outcome {
    Done,
    Disagrees,
}

impl Outcome {
    pub fn exit_code(self) -> ExitCode {
        match self {
            Outcome::Done => ExitCode::SUCCESS,
            Outcome::Disagrees => ExitCode::from(EXIT_DISAGREES),
        }
    }
}

pub fn run(cli: Cli) -> Result<Outcome> {
    match cli.command {
        Command::Local(args) => local(args),
        Command::Replay(ReplayCommand::Show { path, color }) => show(&path, &color),
        Command::Replay(ReplayCommand::Verify { path, json }) => verify(&path, json),
    }
}

/// Standard output that stops quietly when the reader goes away (`| head`).
struct Stdout {
    closed: bool,
}

impl Stdout {
    fn new() -> Stdout {
        Stdout { closed: false }
    }

    fn print(&mut self, text: &str) -> Result<()> {
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

fn make_bot(spec: &BotSpec, seed: u64, side: Side) -> Result<Box<dyn Bot>> {
    match spec {
        BotSpec::Builtin(builtin) => Ok(Box::new(BuiltinBot::new(builtin.clone(), seed, side))),
        BotSpec::Wasm(path) => {
            std::fs::metadata(path)
                .with_context(|| format!("cannot read bot {}", path.display()))?;
            bail!(
                "bot {}: WASM bots are not supported by this build yet (use builtin: bots)",
                path.display()
            )
        }
        BotSpec::Endpoint(url) => {
            bail!(
                "bot {url}: endpoint bots are not supported by this build yet (use builtin: bots)"
            )
        }
    }
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
    let mut bot_a = make_bot(&specs[0], seed, Side::A)?;
    let mut bot_b = make_bot(&specs[1], seed, Side::B)?;
    let accepted_at = time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .context("cannot format the current time")?;
    let config = MatchConfig::new(
        uuid::Uuid::new_v4().to_string(),
        accepted_at,
        args.class.into(),
        seed,
    );
    let ruleset = config.ruleset;
    let palette = palette(&args.color);
    let mut stdout = Stdout::new();
    if !args.json {
        let fighters = [bot_a.info(), bot_b.info()];
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
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .context("cannot start the async runtime")?;
    let mut print_error = None;
    let replay = runtime.block_on(run_match_observed(
        config,
        [bot_a.as_mut(), bot_b.as_mut()],
        |recorder, step| {
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
    Ok(Outcome::Done)
}

fn show(path: &Path, color: &ColorArgs) -> Result<Outcome> {
    let replay = Replay::read(path)?;
    Stdout::new().print(&render::replay(palette(color), &replay))?;
    Ok(Outcome::Done)
}

fn verify(path: &Path, json: bool) -> Result<Outcome> {
    let replay = Replay::read(path)?;
    let verdict = verify_replay(&replay)?;
    let mut stdout = Stdout::new();
    match verdict {
        Ok(verified) => {
            let winner = match verified.result.winner.side() {
                Some(side) => format!("{} wins", replay.fighters[side.index()].name),
                None => "drawn match".to_owned(),
            };
            if json {
                stdout.print(&format!(
                    "{}\n",
                    serde_json::json!({
                        "ok": true,
                        "path": path.display().to_string(),
                        "ruleset": verified.ruleset.version(),
                        "exchanges": verified.exchanges,
                        "winner": verified.result.winner.name(),
                        "substitutions": verified.substitutions,
                    })
                ))?;
            } else {
                stdout.print(&format!(
                    "ok: {} verifies under ruleset {}: {} exchanges, {winner}, rounds {}–{}\n",
                    path.display(),
                    verified.ruleset,
                    verified.exchanges,
                    verified.result.round_wins[0],
                    verified.result.round_wins[1],
                ))?;
            }
            Ok(Outcome::Done)
        }
        Err(disagreement) => {
            if json {
                stdout.print(&format!(
                    "{}\n",
                    serde_json::json!({
                        "ok": false,
                        "path": path.display().to_string(),
                        "location": disagreement.location.to_string(),
                        "detail": disagreement.detail,
                    })
                ))?;
            } else {
                eprintln!(
                    "referee: {} does not verify: {disagreement}",
                    path.display()
                );
            }
            Ok(Outcome::Disagrees)
        }
    }
}
