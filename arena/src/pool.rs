//! The match pool: plays scheduled matches on J worker threads — built-in pairings
//! on the bare runner, anything else on the async runner — and hands each result,
//! summarised, to the caller's thread as it finishes.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use duel_replays::{Replay, SourceName, WinnerName};
use duel_rules::WeightClass;
use serde::{Deserialize, Serialize};

use crate::error::ArenaError;
use duel_match::builtin::BuiltinFighter;
use duel_match::host::{Fighter, MatchHost, MatchOptions};
use duel_match::opening::OpeningSource;
use duel_match::runner::run_bare_match;
use duel_match::spec::BotSpec;

/// A bot taking part in a tournament or an SPRT run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entrant {
    /// Played on the bare runner when both fighters are built-in.
    Builtin(BuiltinFighter),
    Bot {
        spec: BotSpec,
        /// The name in tables and replays; `None`: the bot's own (a file stem).
        name: Option<String>,
        /// The spec as the user gave it (a source folder the component was
        /// built from, say); `None`: the spec itself.
        given: Option<String>,
    },
}

impl Entrant {
    pub fn parse(text: &str) -> Result<Entrant, ArenaError> {
        Ok(match BotSpec::parse(text)? {
            BotSpec::Builtin(spec) => Entrant::Builtin(BuiltinFighter::new(spec)),
            spec => Entrant::Bot {
                spec,
                name: None,
                given: None,
            },
        })
    }

    /// A bot played from `spec` but shown as `name` and given as `given` (a
    /// component built from the source folder `given`).
    pub fn shown(spec: BotSpec, name: String, given: String) -> Entrant {
        Entrant::Bot {
            spec,
            name: Some(name),
            given: Some(given),
        }
    }

    /// The spec as given: what a saved plan keeps, so that a resumed run
    /// parses it again (canonical for built-in bots).
    pub fn name(&self) -> String {
        match self {
            Entrant::Builtin(fighter) => fighter.spec.to_string(),
            Entrant::Bot {
                given: Some(given), ..
            } => given.clone(),
            Entrant::Bot { spec, .. } => spec.to_string(),
        }
    }

    /// The name people read in tables, the same as the tape's: a component's
    /// file stem (or its source folder's name), an endpoint's address, a
    /// built-in's spec.
    pub fn display_name(&self) -> String {
        match self {
            Entrant::Bot {
                name: Some(name), ..
            } => name.clone(),
            Entrant::Bot {
                spec: BotSpec::Wasm(path),
                ..
            } => path
                .file_stem()
                .map(|stem| stem.to_string_lossy().into_owned())
                .unwrap_or_else(|| self.name()),
            _ => self.name(),
        }
    }

    /// Builds the bot once (an endpoint is asked `Hello`, a component is
    /// compiled), so a bad spec fails before any match is played.
    pub fn check(&self, settings: &PoolSettings) -> Result<(), ArenaError> {
        if let Entrant::Builtin(_) = self {
            return Ok(());
        }
        let runtime = new_runtime()?;
        let options = MatchOptions::new(settings.class)
            .seed(0)
            .wall_clock(settings.wall_clock);
        runtime
            .block_on(settings.host.check(&self.fighter(), options))
            .map(|_| ())
            .map_err(ArenaError::from)
    }

    fn fighter(&self) -> Fighter {
        match self {
            Entrant::Builtin(fighter) => Fighter::from(BotSpec::Builtin(fighter.spec.clone())),
            Entrant::Bot { spec, name, given } => {
                let mut fighter = Fighter::from(spec.clone());
                fighter.name = name.clone();
                fighter.label = given.clone();
                fighter
            }
        }
    }
}

/// Display names for a table, one per entrant: each its [`Entrant::display_name`],
/// unless two entrants would share one (two `mybot.wasm` in different folders),
/// in which case those show their specs as given.
pub fn display_names(entrants: &[Entrant]) -> Vec<String> {
    let short: Vec<String> = entrants.iter().map(Entrant::display_name).collect();
    short
        .iter()
        .zip(entrants)
        .map(|(name, entrant)| {
            if short.iter().filter(|other| *other == name).count() > 1 {
                entrant.name()
            } else {
                name.clone()
            }
        })
        .collect()
}

/// One match to play: entrant indices for fighters `a` and `b`, and the seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduledMatch {
    pub index: u64,
    pub entrants: [usize; 2],
    pub seed: u64,
}

/// FNV-1a, 64 bits: a fingerprint that is the same in every process (results
/// are resumed by later runs), unlike the standard library's hasher.
#[derive(Debug)]
struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Fnv1a {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv1a {
    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes.iter().chain([&0xff]) {
            self.0 ^= u64::from(*byte);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// Substitution causes counted per fighter: timeout, budget, fault.
pub const CAUSES: [&str; 3] = ["timeout", "budget", "fault"];

/// What the statistics need from one played match (kept in `results.jsonl`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MatchSummary {
    pub index: u64,
    pub entrants: [usize; 2],
    pub seed: u64,
    pub winner: WinnerName,
    pub round_wins: [u8; 2],
    pub damage: [u32; 2],
    pub tokens: [u64; 2],
    pub decisions: [u32; 2],
    /// Per fighter: decisions substituted for a timeout, the budget, a fault.
    pub substitutions: [[u32; 3]; 2],
    /// Per fighter: latency of every decision the bot was asked for.
    /// Latencies of the decisions a bot was asked for, in microseconds.
    pub latencies_us: [Vec<u64>; 2],
    /// A fingerprint of the play (both fighters' actions and sources, exchange
    /// by exchange): equal for two matches that went alike. 0 in results
    /// written before it existed.
    #[serde(default)]
    pub play: u64,
    /// Per fighter: what it spent on each model it called. Empty in results
    /// written before it existed.
    #[serde(default)]
    pub models: [Vec<ModelTally>; 2],
    /// Per fighter: its model calls refused as unavailable (no model
    /// configured, or the upstream failed). Left out when both are 0.
    #[serde(default, skip_serializing_if = "is_zero_pair")]
    pub unavailable_calls: [u32; 2],
    /// Per fighter: the reason of its first fault in the match (cut to
    /// [`FAULT_REASON_CHARS`]), to say why a bot faults. Left out when
    /// neither faulted.
    #[serde(default, skip_serializing_if = "is_none_pair")]
    pub first_fault: [Option<String>; 2],
}

/// The most characters of a fault's reason a summary keeps.
pub const FAULT_REASON_CHARS: usize = 200;

fn is_zero_pair(pair: &[u32; 2]) -> bool {
    *pair == [0, 0]
}

fn is_none_pair(pair: &[Option<String>; 2]) -> bool {
    pair.iter().all(Option::is_none)
}

/// `reason` cut to [`FAULT_REASON_CHARS`] characters, on one line.
fn short_reason(reason: &str) -> String {
    let line: String = reason
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    match line.char_indices().nth(FAULT_REASON_CHARS) {
        Some((end, _)) => format!("{}…", &line[..end]),
        None => line,
    }
}

/// What one fighter spent on one model in one match.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelTally {
    pub model: String,
    pub calls: u64,
    pub tokens: u64,
    /// In billionths of a US dollar (whole numbers keep results exact);
    /// `None` when the catalogue gave no price for a part used.
    pub cost_nano_usd: Option<u64>,
}

impl ModelTally {
    fn of(spend: duel_replays::ModelSpend) -> ModelTally {
        ModelTally {
            model: spend.model,
            calls: spend.calls,
            tokens: spend.tokens,
            cost_nano_usd: spend.cost_usd.map(|usd| (usd * 1e9).round() as u64),
        }
    }
}

impl MatchSummary {
    pub fn of(scheduled: &ScheduledMatch, replay: &Replay) -> MatchSummary {
        let mut decisions = [0u32; 2];
        let mut substitutions = [[0u32; 3]; 2];
        let mut latencies_us: [Vec<u64>; 2] = [Vec::new(), Vec::new()];
        let mut unavailable_calls = [0u32; 2];
        let mut first_fault: [Option<String>; 2] = [None, None];
        let mut play = Fnv1a::default();
        for (position, (_, exchange)) in replay.exchanges().enumerate() {
            // The opening's exchanges were played, not decided.
            let decided = position >= replay.opening.len();
            for (index, record) in exchange.sides().into_iter().enumerate() {
                play.write(duel_rules::Action::from(record.action).name().as_bytes());
                play.write(duel_rules::Source::from(record.source).name().as_bytes());
                let unavailable = record
                    .calls()
                    .iter()
                    .filter(|call| call.outcome == duel_replays::CallOutcome::Unavailable)
                    .count();
                unavailable_calls[index] = unavailable_calls[index]
                    .saturating_add(u32::try_from(unavailable).unwrap_or(u32::MAX));
                if !decided {
                    continue;
                }
                decisions[index] += 1;
                match record.source {
                    SourceName::Bot => latencies_us[index].push(record.latency_micros()),
                    SourceName::Timeout => {
                        substitutions[index][0] += 1;
                        latencies_us[index].push(record.latency_micros());
                    }
                    SourceName::Budget => substitutions[index][1] += 1,
                    SourceName::Fault => {
                        substitutions[index][2] += 1;
                        latencies_us[index].push(record.latency_micros());
                        if first_fault[index].is_none() {
                            first_fault[index] =
                                Some(short_reason(record.reason().unwrap_or("no reason given")));
                        }
                    }
                }
            }
        }
        MatchSummary {
            index: scheduled.index,
            entrants: scheduled.entrants,
            seed: scheduled.seed,
            winner: replay.result.winner,
            round_wins: replay.result.round_wins,
            damage: replay.result.damage,
            tokens: replay.result.tokens_used,
            decisions,
            substitutions,
            latencies_us,
            play: play.0,
            models: duel_rules::Side::BOTH.map(|side| {
                replay
                    .model_spend(side)
                    .into_iter()
                    .map(ModelTally::of)
                    .collect()
            }),
            unavailable_calls,
            first_fault,
        }
    }

    /// Points × 2 (0, 1 or 2) that entrant `entrant` scored in this match, if it
    /// played in it.
    pub fn points_doubled(&self, entrant: usize) -> Option<usize> {
        let side = self.entrants.iter().position(|e| *e == entrant)?;
        Some(match (self.winner, side) {
            (WinnerName::Draw, _) => 1,
            (WinnerName::A, 0) | (WinnerName::B, 1) => 2,
            _ => 0,
        })
    }
}

/// How the pool plays its matches.
#[derive(Clone, Debug)]
pub struct PoolSettings {
    pub jobs: usize,
    pub class: WeightClass,
    pub wall_clock: Duration,
    /// Where each match's replay is written (`match-NNNNNN.json`), if anywhere.
    pub replay_dir: Option<PathBuf>,
    /// Builds and plays the matches that are not built-in against built-in
    /// (its WASM instances pooled for `jobs` matches at once).
    pub host: MatchHost,
    /// The opening each match starts with, from its seed.
    pub openings: OpeningSource,
}

/// What the caller wants after seeing a result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    Continue,
    Stop,
}

/// Plays matches taken from `next` (called from the worker threads; `None` ends
/// the work) until it runs out or `stop` is set, calling `on_played` on the
/// caller's thread for each finished match in completion order. A match already
/// started when `stop` is set still finishes and is reported.
pub fn play_matches(
    entrants: &[Entrant],
    settings: &PoolSettings,
    stop: &AtomicBool,
    next: &(dyn Fn() -> Option<ScheduledMatch> + Sync),
    mut on_played: impl FnMut(MatchSummary) -> Control,
) -> Result<(), ArenaError> {
    let (sender, receiver) = mpsc::channel::<Result<MatchSummary, ArenaError>>();
    std::thread::scope(|scope| {
        for _ in 0..settings.jobs.max(1) {
            let sender = sender.clone();
            scope.spawn(move || worker(entrants, settings, stop, next, &sender));
        }
        drop(sender);
        let mut first_error = None;
        for result in receiver {
            match result {
                Ok(summary) => {
                    if on_played(summary) == Control::Stop {
                        stop.store(true, Ordering::SeqCst);
                    }
                }
                Err(error) => {
                    stop.store(true, Ordering::SeqCst);
                    first_error.get_or_insert(error);
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    })
}

fn worker(
    entrants: &[Entrant],
    settings: &PoolSettings,
    stop: &AtomicBool,
    next: &(dyn Fn() -> Option<ScheduledMatch> + Sync),
    sender: &mpsc::Sender<Result<MatchSummary, ArenaError>>,
) {
    let mut runtime = None;
    while !stop.load(Ordering::SeqCst) {
        let Some(scheduled) = next() else {
            return;
        };
        let result = play_one(entrants, settings, &scheduled, &mut runtime).and_then(|replay| {
            if let Some(dir) = &settings.replay_dir {
                replay.write(&replay_path(dir, scheduled.index))?;
            }
            Ok(MatchSummary::of(&scheduled, &replay))
        });
        if sender.send(result).is_err() {
            return;
        }
    }
}

/// Where the pool writes the replay of match `index`.
pub fn replay_path(dir: &Path, index: u64) -> PathBuf {
    dir.join(format!("match-{index:06}.json"))
}

fn play_one(
    entrants: &[Entrant],
    settings: &PoolSettings,
    scheduled: &ScheduledMatch,
    runtime: &mut Option<tokio::runtime::Runtime>,
) -> Result<Replay, ArenaError> {
    let [a, b] = scheduled.entrants.map(|index| &entrants[index]);
    // Tournaments and SPRT keep replays (with their model calls and costs),
    // not what the models were told.
    let options = MatchOptions::new(settings.class)
        .seed(scheduled.seed)
        .wall_clock(settings.wall_clock)
        .transcript(false)
        .opening(
            settings
                .openings
                .for_seed(duel_rules::Ruleset::CURRENT, scheduled.seed),
        );
    if let (Entrant::Builtin(a), Entrant::Builtin(b)) = (a, b) {
        return Ok(run_bare_match(options.into_config()?, [a, b]));
    }
    let runtime = match runtime {
        Some(runtime) => runtime,
        None => runtime.insert(new_runtime()?),
    };
    runtime.block_on(async {
        let session = settings
            .host
            .prepare([a.fighter(), b.fighter()], options)
            .await?;
        Ok(session.play(&mut |_: &_, _: &_| {}).await.replay)
    })
}

fn new_runtime() -> Result<tokio::runtime::Runtime, ArenaError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(ArenaError::Runtime)
}
