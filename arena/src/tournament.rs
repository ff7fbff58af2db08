//! Tournaments: the schedule of a round robin or a gauntlet (every pairing played
//! from both sides on one seed), its results file for `--resume`, and the
//! standings table.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use duel_rules::Ruleset;
use serde::{Deserialize, Serialize};

use super::pool::{MatchSummary, ScheduledMatch};
use super::stats::{EloEstimate, Wdl};
use crate::error::ArenaError;
use duel_match::builtin::SplitMix64;
use duel_match::opening::{Opening, OpeningSource};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// Every bot against every other.
    RoundRobin,
    /// The first bot against each of the others.
    Gauntlet,
}

/// Everything that fixes a tournament's schedule (`tournament.json` in `--out`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TournamentPlan {
    pub bots: Vec<String>,
    pub format: Format,
    pub rounds: u32,
    pub seed: u64,
    pub class: String,
    /// `--openings N`: each pairing game starts with N random forced exchanges.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub openings: Option<usize>,
    /// `--book FILE`: the book's openings as lines, kept so a resumed run plays
    /// the same ones even if the file changed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub book: Vec<String>,
}

impl TournamentPlan {
    /// Where this plan's openings come from (the book's lines were checked when
    /// the plan was made; a hand-edited plan is checked again here).
    pub fn opening_source(&self) -> Result<OpeningSource, ArenaError> {
        if !self.book.is_empty() {
            return Ok(OpeningSource::Book(Opening::parse_book(
                Ruleset::CURRENT,
                &self.book.join("\n"),
            )?));
        }
        Ok(match self.openings {
            Some(length) => OpeningSource::Random(length),
            None => OpeningSource::None,
        })
    }
}

/// Seed of pairing game `game` of a tournament seeded `seed`: both sides of a
/// pairing share it, so colour (side) bias cancels out. The top 53 bits of
/// the mix: every game seed is at most [`SEED_MAX`](duel_match::limits::SEED_MAX),
/// which a replay's signature binds.
pub fn game_seed(seed: u64, game: u64) -> u64 {
    SplitMix64::new(seed ^ game.wrapping_mul(0x9e37_79b9_7f4a_7c15)).next_u64() >> 11
}

const _: () = assert!(u64::MAX >> 11 == duel_match::limits::SEED_MAX);

impl TournamentPlan {
    /// Every match in order: for each round, for each pairing, A-side then B-side.
    pub fn schedule(&self) -> Vec<ScheduledMatch> {
        let count = self.bots.len();
        let pairings: Vec<(usize, usize)> = match self.format {
            Format::RoundRobin => (0..count)
                .flat_map(|i| (i + 1..count).map(move |j| (i, j)))
                .collect(),
            Format::Gauntlet => (1..count).map(|j| (0, j)).collect(),
        };
        let mut schedule = Vec::with_capacity(pairings.len() * 2 * self.rounds as usize);
        let mut game = 0u64;
        for _ in 0..self.rounds {
            for &(i, j) in &pairings {
                let seed = game_seed(self.seed, game);
                game += 1;
                for entrants in [[i, j], [j, i]] {
                    schedule.push(ScheduledMatch {
                        index: schedule.len() as u64,
                        entrants,
                        seed,
                    });
                }
            }
        }
        schedule
    }
}

/// The largest `tournament.json` read back: a plan names its bots and a
/// book, a few KiB; a book of `MAX_BOOK_OPENINGS` lines fits.
const MAX_PLAN_BYTES: u64 = 16 * 1024 * 1024;

/// The largest `results.jsonl` read back: ~1 KiB a match, a million matches.
const MAX_RESULTS_BYTES: u64 = 1024 * 1024 * 1024;

/// The files of a tournament folder.
#[derive(Clone, Debug)]
pub struct TournamentDir {
    pub root: PathBuf,
}

impl TournamentDir {
    pub fn plan_path(&self) -> PathBuf {
        self.root.join("tournament.json")
    }

    pub fn results_path(&self) -> PathBuf {
        self.root.join("results.jsonl")
    }

    pub fn replays(&self) -> PathBuf {
        self.root.join("replays")
    }

    /// Creates the folder for a new tournament; refuses to overwrite one.
    pub fn create(&self, plan: &TournamentPlan) -> Result<(), ArenaError> {
        if self.plan_path().exists() {
            return Err(ArenaError::Setup(format!(
                "{} already holds a tournament: pass --resume to continue it, or choose another --out",
                self.root.display()
            )));
        }
        std::fs::create_dir_all(self.replays())
            .map_err(|error| io_error(&self.replays(), error))?;
        let text = serde_json::to_string_pretty(plan)
            .expect("a plan is strings and numbers: it always serialises");
        duel_files::write_atomic(
            &self.plan_path(),
            text.as_bytes(),
            duel_files::WriteOptions::PUBLIC,
        )
        .map_err(|error| ArenaError::Setup(error.to_string()))
    }

    /// Reads back the plan and every complete result line. A torn last line (the
    /// process died while writing it) is ignored: that match is played again.
    pub fn resume(&self, plan: &TournamentPlan) -> Result<Vec<MatchSummary>, ArenaError> {
        let saved = self.read_plan()?;
        if &saved != plan {
            return Err(ArenaError::Setup(format!(
                "{} was started with other settings (bots {:?}, {:?}, {} rounds, seed {}, class {}); resume with the same ones",
                self.root.display(),
                saved.bots,
                saved.format,
                saved.rounds,
                saved.seed,
                saved.class
            )));
        }
        std::fs::create_dir_all(self.replays())
            .map_err(|error| io_error(&self.replays(), error))?;
        let bytes = match duel_files::read_regular_within(
            &self.results_path(),
            MAX_RESULTS_BYTES,
            duel_files::READ_DEADLINE,
        ) {
            Ok(bytes) => bytes,
            Err(error) if error.io_kind() == Some(std::io::ErrorKind::NotFound) => {
                return Ok(Vec::new());
            }
            Err(error) => return Err(ArenaError::Setup(error.to_string())),
        };
        let mut seen = BTreeMap::new();
        for line in String::from_utf8_lossy(&bytes).lines() {
            if let Ok(summary) = serde_json::from_str::<MatchSummary>(line) {
                seen.insert(summary.index, summary);
            }
        }
        Ok(seen.into_values().collect())
    }

    /// The plan saved in the folder (`--resume --out DIR` without the bots and
    /// settings retyped plays it).
    pub fn read_plan(&self) -> Result<TournamentPlan, ArenaError> {
        let bytes = duel_files::read_regular_within(
            &self.plan_path(),
            MAX_PLAN_BYTES,
            duel_files::READ_DEADLINE,
        )
        .map_err(|error| ArenaError::Setup(format!("cannot resume from {error}")))?;
        serde_json::from_slice(&bytes).map_err(|error| {
            ArenaError::Setup(format!(
                "{} is not a tournament plan: {error}",
                self.plan_path().display()
            ))
        })
    }

    /// Appends one result as a single line (one write, flushed).
    pub fn append(
        &self,
        file: &mut std::fs::File,
        summary: &MatchSummary,
    ) -> Result<(), ArenaError> {
        let mut line = serde_json::to_string(summary)
            .expect("a summary is strings and numbers: it always serialises");
        line.push('\n');
        file.write_all(line.as_bytes())
            .and_then(|()| file.flush())
            .map_err(|error| io_error(&self.results_path(), error))
    }

    /// The results file, to append to (a regular file, never through a link).
    pub fn open_results(&self) -> Result<std::fs::File, ArenaError> {
        duel_files::open_append(&self.results_path())
            .map_err(|error| ArenaError::Setup(error.to_string()))
    }
}

fn io_error(path: &Path, error: std::io::Error) -> ArenaError {
    ArenaError::Setup(format!("{}: {error}", path.display()))
}

/// One bot's line of the standings.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BotStanding {
    pub bot: String,
    pub games: u64,
    pub wins: u64,
    pub draws: u64,
    pub losses: u64,
    /// Points per game, 0–1.
    pub score: f64,
    /// Elo against the field with its 95% interval.
    pub elo: Option<EloInterval>,
    /// Share of its decisions substituted, by cause: timeout, budget, fault.
    pub substituted: [f64; 3],
    pub tokens_per_match: f64,
    /// US dollars per match at the catalogue's prices the replays recorded;
    /// `None` when a model it called had no price.
    pub cost_per_match_usd: Option<f64>,
    /// What it spent on each model it called, over every match.
    pub models: Vec<ModelStanding>,
    /// Decision latency percentiles, whole milliseconds (kept for scripts
    /// that read them) and microseconds.
    pub latency_p50_ms: u64,
    pub latency_p99_ms: u64,
    pub latency_p50_us: u64,
    pub latency_p99_us: u64,
}

/// One bot's spending on one model over a tournament.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModelStanding {
    pub model: String,
    pub calls: u64,
    pub tokens: u64,
    pub cost_usd: Option<f64>,
}

/// One pairing's line, from `a`'s point of view.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PairStanding {
    pub a: String,
    pub b: String,
    pub games: u64,
    pub wins: u64,
    pub draws: u64,
    pub losses: u64,
    pub score: f64,
    pub elo: Option<EloInterval>,
}

/// An Elo estimate as printed and serialised (infinite ends become `null`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct EloInterval {
    pub elo: Option<f64>,
    pub low: Option<f64>,
    pub high: Option<f64>,
}

impl From<EloEstimate> for EloInterval {
    fn from(estimate: EloEstimate) -> EloInterval {
        let finite = |value: f64| value.is_finite().then_some(value);
        EloInterval {
            elo: finite(estimate.elo),
            low: finite(estimate.low),
            high: finite(estimate.high),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Standings {
    pub matches_played: u64,
    pub matches_scheduled: u64,
    pub bots: Vec<BotStanding>,
    pub pairs: Vec<PairStanding>,
}

/// Nearest-rank percentile of sorted values (0 when empty).
/// A latency for people: `37 µs`, `4.2 ms`, `312 ms`.
pub fn latency_text(micros: u64) -> String {
    match micros {
        0..1_000 => format!("{micros} µs"),
        1_000..10_000 => format!("{:.1} ms", micros as f64 / 1_000.0),
        _ => format!("{} ms", micros / 1_000),
    }
}

pub fn percentile(sorted: &[u64], percent: usize) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (percent * sorted.len()).div_ceil(100).max(1);
    sorted[rank - 1]
}

fn wdl_of(summary: &MatchSummary, entrant: usize) -> Wdl {
    match summary.points_doubled(entrant) {
        Some(2) => Wdl {
            wins: 1,
            draws: 0,
            losses: 0,
        },
        Some(1) => Wdl {
            wins: 0,
            draws: 1,
            losses: 0,
        },
        Some(_) => Wdl {
            wins: 0,
            draws: 0,
            losses: 1,
        },
        None => Wdl::default(),
    }
}

/// The entrants best first: by score; bots level on score by their
/// head-to-head among themselves (wins minus losses in the games they
/// played each other: for two bots, who won their pairing), then by name.
/// Every comparison is of keys, so the order is total even when three
/// level bots beat each other in a circle (then their names decide).
fn ranking(bots: &[String], records: &[Wdl], pairs: &BTreeMap<(usize, usize), Wdl>) -> Vec<usize> {
    let score = |entrant: usize| records[entrant].score().unwrap_or(0.0);
    let mut order: Vec<usize> = (0..bots.len()).collect();
    order.sort_by(|&x, &y| score(y).total_cmp(&score(x)));
    let mut balance = vec![0i64; bots.len()];
    for level in order.chunk_by(|&x, &y| score(x).total_cmp(&score(y)).is_eq()) {
        for &bot in level {
            for &other in level {
                let record = match (
                    bot.cmp(&other),
                    pairs.get(&(bot.min(other), bot.max(other))),
                ) {
                    (std::cmp::Ordering::Less, Some(record)) => *record,
                    (std::cmp::Ordering::Greater, Some(record)) => Wdl {
                        wins: record.losses,
                        draws: record.draws,
                        losses: record.wins,
                    },
                    _ => continue,
                };
                let wins = i64::try_from(record.wins).unwrap_or(i64::MAX);
                let losses = i64::try_from(record.losses).unwrap_or(i64::MAX);
                balance[bot] = balance[bot].saturating_add(wins.saturating_sub(losses));
            }
        }
    }
    order.sort_by(|&x, &y| {
        score(y)
            .total_cmp(&score(x))
            .then_with(|| balance[y].cmp(&balance[x]))
            .then_with(|| bots[x].cmp(&bots[y]))
    });
    order
}

/// The standings over `summaries` (any order: the table depends only on the set).
pub fn standings(bots: &[String], summaries: &[MatchSummary], matches_scheduled: u64) -> Standings {
    let count = bots.len();
    let mut records = vec![Wdl::default(); count];
    let mut decisions = vec![0u64; count];
    let mut substitutions = vec![[0u64; 3]; count];
    let mut tokens = vec![0u64; count];
    let mut matches = vec![0u64; count];
    let mut latencies: Vec<Vec<u64>> = vec![Vec::new(); count];
    let mut models: Vec<Vec<ModelStanding>> = vec![Vec::new(); count];
    let mut pairs: BTreeMap<(usize, usize), Wdl> = BTreeMap::new();
    for summary in summaries {
        for (side, &entrant) in summary.entrants.iter().enumerate() {
            if entrant >= count {
                continue;
            }
            records[entrant].add(wdl_of(summary, entrant));
            decisions[entrant] += u64::from(summary.decisions[side]);
            for (total, &count) in substitutions[entrant]
                .iter_mut()
                .zip(&summary.substitutions[side])
            {
                *total += u64::from(count);
            }
            // Saturating: token counts come from replays, which are outside data.
            tokens[entrant] = tokens[entrant].saturating_add(summary.tokens[side]);
            matches[entrant] += 1;
            latencies[entrant].extend_from_slice(&summary.latencies_us[side]);
            for tally in &summary.models[side] {
                let cost = tally.cost_nano_usd.map(|nano| nano as f64 / 1e9);
                match models[entrant]
                    .iter_mut()
                    .find(|known| known.model == tally.model)
                {
                    Some(known) => {
                        known.calls = known.calls.saturating_add(tally.calls);
                        known.tokens = known.tokens.saturating_add(tally.tokens);
                        known.cost_usd = known.cost_usd.zip(cost).map(|(sum, one)| sum + one);
                    }
                    None => models[entrant].push(ModelStanding {
                        model: tally.model.clone(),
                        calls: tally.calls,
                        tokens: tally.tokens,
                        cost_usd: cost,
                    }),
                }
            }
        }
        let [x, y] = summary.entrants;
        let (low, high) = (x.min(y), x.max(y));
        pairs
            .entry((low, high))
            .or_default()
            .add(wdl_of(summary, low));
    }
    let order = ranking(bots, &records, &pairs);
    let rows: Vec<BotStanding> = order
        .into_iter()
        .map(|entrant| {
            let record = records[entrant];
            latencies[entrant].sort_unstable();
            let share = |cause: usize| {
                if decisions[entrant] == 0 {
                    0.0
                } else {
                    substitutions[entrant][cause] as f64 / decisions[entrant] as f64
                }
            };
            BotStanding {
                bot: bots[entrant].clone(),
                games: record.games(),
                wins: record.wins,
                draws: record.draws,
                losses: record.losses,
                score: record.score().unwrap_or(0.0),
                elo: record.elo().map(EloInterval::from),
                substituted: [share(0), share(1), share(2)],
                tokens_per_match: if matches[entrant] == 0 {
                    0.0
                } else {
                    tokens[entrant] as f64 / matches[entrant] as f64
                },
                // Folded from +0.0: an empty float sum is -0.0.
                cost_per_match_usd: models[entrant]
                    .iter()
                    .try_fold(0.0, |total, model| Some(total + model.cost_usd?))
                    .map(|total| total / matches[entrant].max(1) as f64),
                models: std::mem::take(&mut models[entrant]),
                latency_p50_ms: percentile(&latencies[entrant], 50) / 1_000,
                latency_p99_ms: percentile(&latencies[entrant], 99) / 1_000,
                latency_p50_us: percentile(&latencies[entrant], 50),
                latency_p99_us: percentile(&latencies[entrant], 99),
            }
        })
        .collect();
    let pairs = pairs
        .into_iter()
        .map(|((a, b), record)| PairStanding {
            a: bots[a].clone(),
            b: bots[b].clone(),
            games: record.games(),
            wins: record.wins,
            draws: record.draws,
            losses: record.losses,
            score: record.score().unwrap_or(0.0),
            elo: record.elo().map(EloInterval::from),
        })
        .collect();
    Standings {
        matches_played: summaries.len() as u64,
        matches_scheduled,
        bots: rows,
        pairs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use duel_replays::WinnerName;

    fn plan(format: Format, bots: usize, rounds: u32) -> TournamentPlan {
        TournamentPlan {
            bots: (0..bots).map(|i| format!("bot{i}")).collect(),
            format,
            rounds,
            seed: 1,
            class: "middle".into(),
            openings: None,
            book: Vec::new(),
        }
    }

    #[test]
    fn round_robin_plays_every_pairing_from_both_sides() {
        let schedule = plan(Format::RoundRobin, 4, 2).schedule();
        assert_eq!(schedule.len(), 6 * 2 * 2);
        for (position, scheduled) in schedule.iter().enumerate() {
            assert_eq!(scheduled.index, position as u64);
        }
        for pair in schedule.chunks(2) {
            assert_eq!(pair[0].entrants, [pair[1].entrants[1], pair[1].entrants[0]]);
            assert_eq!(pair[0].seed, pair[1].seed, "both sides share the seed");
        }
        let seeds: std::collections::BTreeSet<u64> = schedule.iter().map(|s| s.seed).collect();
        assert_eq!(seeds.len(), 12, "every game pair has its own seed");
    }

    #[test]
    fn latencies_read_at_their_scale() {
        assert_eq!(latency_text(0), "0 µs");
        assert_eq!(latency_text(37), "37 µs");
        assert_eq!(latency_text(999), "999 µs");
        assert_eq!(latency_text(1_000), "1.0 ms");
        assert_eq!(latency_text(4_249), "4.2 ms");
        assert_eq!(latency_text(312_700), "312 ms");
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        assert_eq!(percentile(&[], 50), 0);
        assert_eq!(percentile(&[1, 2, 3, 4], 50), 2);
        assert_eq!(percentile(&[1, 2, 3, 4], 99), 4);
        assert_eq!(percentile(&[7], 1), 7);
    }

    /// One match of `entrants` won by `winner`.
    fn played(index: u64, entrants: [usize; 2], winner: WinnerName) -> MatchSummary {
        MatchSummary {
            index,
            entrants,
            seed: index,
            winner,
            round_wins: [0, 0],
            damage: [0, 0],
            tokens: [0, 0],
            decisions: [36, 36],
            substitutions: [[0; 3]; 2],
            latencies_us: [Vec::new(), Vec::new()],
            play: 0,
            models: [Vec::new(), Vec::new()],
            unavailable_calls: [0, 0],
            first_fault: [None, None],
        }
    }

    fn names(table: &Standings) -> Vec<&str> {
        table.bots.iter().map(|row| row.bot.as_str()).collect()
    }

    #[test]
    fn bots_level_on_score_rank_by_their_head_to_head_then_name() {
        let bots: Vec<String> = ["alpha", "zeta", "x", "y"].map(String::from).to_vec();
        let (alpha, zeta, x, y) = (0, 1, 2, 3);
        let summaries = [
            // zeta beat alpha, from either side.
            played(0, [alpha, zeta], WinnerName::B),
            played(1, [alpha, x], WinnerName::A),
            played(2, [y, alpha], WinnerName::B),
            played(3, [zeta, x], WinnerName::A),
            played(4, [zeta, y], WinnerName::B),
            played(5, [x, y], WinnerName::Draw),
        ];
        let table = standings(&bots, &summaries, 6);
        assert_eq!(table.bots[0].score, table.bots[1].score);
        assert_eq!(names(&table), ["zeta", "alpha", "y", "x"]);
        // alpha beating zeta instead, still level: alpha first.
        let mut reversed = summaries.clone();
        reversed[0].winner = WinnerName::A;
        reversed[1].winner = WinnerName::B;
        reversed[4].winner = WinnerName::A;
        let table = standings(&bots, &reversed, 6);
        assert_eq!(table.bots[0].score, table.bots[1].score);
        assert_eq!(names(&table), ["alpha", "zeta", "x", "y"]);

        // Three level bots beating each other in a circle: by name.
        let bots: Vec<String> = ["c", "a", "b"].map(String::from).to_vec();
        let circle = [
            played(0, [1, 2], WinnerName::A),
            played(1, [2, 0], WinnerName::A),
            played(2, [0, 1], WinnerName::A),
        ];
        assert_eq!(names(&standings(&bots, &circle, 3)), ["a", "b", "c"]);
    }

    #[test]
    fn gauntlet_plays_the_first_bot_against_the_rest() {
        let schedule = plan(Format::Gauntlet, 4, 1).schedule();
        assert_eq!(schedule.len(), 6);
        assert!(schedule.iter().all(|s| s.entrants.contains(&0)));
    }
}
