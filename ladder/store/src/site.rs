//! The public site's reads: listings of settled matches, standings, bot pages,
//! head-to-heads and rating histories, each one page at a time by keyset
//! (never OFFSET), so page 1,000 costs what page 1 does.
//!
//! Every type here is also the JSON twin of its page (`/api/...`), so scripts
//! read the same data the HTML shows.
//!
//! A bot's matches are counted under two names (docs/RULES.md, "What the site
//! counts"): **rated** matches are those that moved its rating (a point on its
//! chart, a game in the season fit; the standings' W/D/L), **settled** matches
//! are every match whose stakes settled, repeats and matches not rated
//! included. Every line that counts a bot's matches says which in its field
//! names (`rated_matches`, `settled_matches`, `rated_record`,
//! `settled_record`); the older names (`games`, `matches`, `record`) stay as
//! they were, documented beside them.

use std::sync::Arc;

use duel_rules::WeightClass;
use serde::Serialize;
use sqlx::any::AnyRow;

use super::{Reads, get};
use crate::error::{LadderError, Result};
use crate::limits::{MAX_CHART_POINTS, MAX_OPPONENTS_LISTED};
use crate::params::Params;
use duel_ladder_core::model::{
    MatchState, Play, Season, Winner, class_from_name, winner_from_name,
};
use duel_ladder_core::rating::Rating;

/// What a match's page says beside its line.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct MatchNotes {
    /// Why it was voided (naming the last run's cause when a run failed).
    pub note: Option<String>,
    /// Why its last run failed (duel_ladder_core::failure); null while no
    /// run failed.
    pub last_failure: Option<String>,
    /// When the match's season ended; null while it runs.
    pub season_ended_ms: Option<i64>,
    /// Each side's rating right after this match, as the site showed it then
    /// (its standings row, its chart's point at this match); null for a side
    /// whose rating the match did not move.
    pub rating_after: [Option<f64>; 2],
    /// Each side's move in that shown rating, the step its chart takes at
    /// this match: `rating_after` minus its rating after its previous rated
    /// match of the season, so the season fit's refits between the two are in
    /// it; for its first rated match of the season, the move from its rating
    /// at the start (no fit moves a bot before its first rated game). The
    /// line's `rating_change` is this match's own Glicko-2 move, which the
    /// fit does not keep (docs/RULES.md, "Standings: one fit of the season").
    pub shown_rating_change: [Option<f64>; 2],
}

/// One match in a listing.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MatchLine {
    pub id: String,
    pub season: String,
    pub class: &'static str,
    #[serde(serialize_with = "state_name")]
    pub state: MatchState,
    pub bot_a: String,
    pub version_a: i64,
    pub stake_a: i64,
    pub bot_b: String,
    pub version_b: i64,
    pub stake_b: i64,
    /// `None` until settled; serialized by name (`a`, `b`, `draw`).
    #[serde(serialize_with = "winner_name")]
    pub winner: Option<Winner>,
    pub accepted_ms: i64,
    pub finished_ms: Option<i64>,
    /// Whether a replay was published (`/replays/{id}`).
    pub replay: bool,
    /// The rated match of the season this one repeats move for move: then it
    /// moved no rating (docs/RULES.md, "Repeats are not rated"). Null otherwise.
    pub repeat_of: Option<String>,
    /// Why it moved no rating: `repeat` or `pair_rated` (docs/RULES.md);
    /// null when rated (or unsettled).
    pub not_rated: Option<String>,
    /// Rounds won by `a` and `b`; null for a match settled without a record
    /// of its game (and for unsettled ones), as are the facts below.
    pub round_wins: Option<[i64; 2]>,
    /// Damage dealt by `a` and `b` over the match.
    pub damage: Option<[i64; 2]>,
    /// Each side's rating change by Glicko-2 for this match alone, applied at
    /// settlement; null when the match moved no rating (a repeat, an ended
    /// season). The season fit replaces these moves: what the site shows a
    /// rating did is the match page's `shown_rating_change`.
    pub rating_change: [Option<f64>; 2],
    /// Exchanges played in all rounds.
    pub exchanges: Option<i64>,
    /// Wall time from acceptance to settlement, in milliseconds.
    pub duration_ms: Option<i64>,
    /// Model tokens each side spent, and what they cost in US dollars at the
    /// catalogue's prices the replay recorded (null: unpriced).
    pub tokens: Option<[i64; 2]>,
    pub cost_usd: [Option<f64>; 2],
}

impl MatchLine {
    /// The winner's name, if one side won.
    pub fn winner_name(&self) -> Option<&str> {
        match self.winner {
            Some(Winner::A) => Some(&self.bot_a),
            Some(Winner::B) => Some(&self.bot_b),
            Some(Winner::Draw) | None => None,
        }
    }
}

/// A match state as its stored name (`queued`, `running`, `settled`, `voided`).
fn state_name<S: serde::Serializer>(state: &MatchState, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(state.name())
}

/// A winner as its stored name, or null.
fn winner_name<S: serde::Serializer>(
    winner: &Option<Winner>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match winner {
        Some(winner) => serializer.serialize_str(winner.name()),
        None => serializer.serialize_none(),
    }
}

/// Which settled matches a listing shows; the default shows them all.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MatchFilter<'a> {
    pub class: Option<WeightClass>,
    /// Only this bot's matches (its id)…
    pub bot_id: Option<&'a str>,
    /// …against this one (a head-to-head; needs `bot_id`)…
    pub opponent_id: Option<&'a str>,
    /// …that it won, lost or drew (needs `bot_id`).
    pub result: Option<MatchResult>,
}

/// A match's result for one of its bots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatchResult {
    Win,
    Loss,
    Draw,
}

impl MatchResult {
    pub const NAMES: [&'static str; 3] = ["win", "loss", "draw"];

    pub fn name(self) -> &'static str {
        match self {
            MatchResult::Win => "win",
            MatchResult::Loss => "loss",
            MatchResult::Draw => "draw",
        }
    }

    pub fn from_name(name: &str) -> Option<MatchResult> {
        match name {
            "win" => Some(MatchResult::Win),
            "loss" => Some(MatchResult::Loss),
            "draw" => Some(MatchResult::Draw),
            _ => None,
        }
    }

    /// The stored winner that gives this result to the bot on `side`
    /// (`Winner::A` or `Winner::B`).
    pub fn winner_as(self, side: Winner) -> Winner {
        let other = if side == Winner::A {
            Winner::B
        } else {
            Winner::A
        };
        match self {
            MatchResult::Win => side,
            MatchResult::Loss => other,
            MatchResult::Draw => Winner::Draw,
        }
    }
}

/// A page of a listing; `next_cursor` fetches the next one.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next_cursor: Option<String>,
}

/// Where a listing of matches resumes: after (finished_ms, id), newest first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatchCursor {
    pub finished_ms: i64,
    pub id: String,
}

impl MatchCursor {
    /// Before every match.
    pub fn first() -> MatchCursor {
        MatchCursor {
            finished_ms: i64::MAX,
            id: String::new(),
        }
    }

    pub fn encode(&self) -> String {
        format!("{}_{}", self.finished_ms, self.id)
    }

    pub fn parse(text: &str) -> Result<MatchCursor> {
        let bad = || LadderError::Invalid(format!("malformed cursor {:?}", shorten(text)));
        let (finished, id) = text.split_once('_').ok_or_else(bad)?;
        Ok(MatchCursor {
            finished_ms: finished.parse().map_err(|_| bad())?,
            id: id.to_owned(),
        })
    }
}

/// One row of a class's table.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StandingLine {
    pub rank: i64,
    pub bot: String,
    pub owner: String,
    pub rating: f64,
    pub deviation: f64,
    /// rating − 2·RD: what the table is sorted by.
    pub conservative: f64,
    pub provisional: bool,
    /// Rated matches in the season (the same as `rated_matches`).
    pub games: i64,
    /// Of the rated matches.
    pub wins: i64,
    pub draws: i64,
    pub losses: i64,
    /// Matches in the season that moved its rating: what W/D/L count.
    pub rated_matches: i64,
    /// Every match it settled in the season, rated or not (repeats, and
    /// matches settled after the season ended, included).
    pub settled_matches: i64,
}

/// Where a class's table resumes: after the row ranked `rank`, whose sort
/// key was (conservative, bot).
#[derive(Clone, Debug, PartialEq)]
pub struct StandingCursor {
    pub rank: i64,
    pub conservative: f64,
    pub bot: String,
}

impl StandingCursor {
    pub fn encode(&self) -> String {
        // The exact bits, so the next page starts exactly after this row.
        format!(
            "{}_{:016x}_{}",
            self.rank,
            self.conservative.to_bits(),
            self.bot
        )
    }

    pub fn parse(text: &str) -> Result<StandingCursor> {
        let bad = || LadderError::Invalid(format!("malformed cursor {:?}", shorten(text)));
        let mut parts = text.splitn(3, '_');
        let (Some(rank), Some(bits), Some(bot)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(bad());
        };
        // Ranks count rows from 1; the page after a cursor starts at rank + 1,
        // so the largest rank a cursor may carry leaves room for that.
        let rank: i64 = rank.parse().map_err(|_| bad())?;
        if !(0..i64::MAX).contains(&rank) {
            return Err(bad());
        }
        Ok(StandingCursor {
            rank,
            conservative: f64::from_bits(u64::from_str_radix(bits, 16).map_err(|_| bad())?),
            bot: bot.to_owned(),
        })
    }
}

/// A season as the site lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SeasonLine {
    pub id: i64,
    pub name: String,
    pub started_ms: i64,
    pub ended_ms: Option<i64>,
    /// `running` or `ended`.
    pub state: &'static str,
}

impl From<Season> for SeasonLine {
    fn from(season: Season) -> SeasonLine {
        SeasonLine {
            state: if season.ended_ms.is_some() {
                "ended"
            } else {
                "running"
            },
            id: season.id,
            name: season.name,
            started_ms: season.started_ms,
            ended_ms: season.ended_ms,
        }
    }
}

/// One class's table (a page of it).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClassTable {
    pub class: &'static str,
    pub rows: Vec<StandingLine>,
    pub next_cursor: Option<String>,
}

/// One rated match on a bot's chart.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HistoryPoint {
    pub match_id: String,
    pub season: String,
    pub version: i64,
    pub at_ms: i64,
    pub rating: f64,
    pub deviation: f64,
}

/// A bot's record against one opponent, over their settled matches (rated
/// or not: the head-to-head splits out the rated ones).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OpponentLine {
    pub bot: String,
    /// Settled matches (the same as `settled_matches`).
    pub games: i64,
    pub wins: i64,
    pub draws: i64,
    pub losses: i64,
    pub settled_matches: i64,
}

/// What a bot's page shows that only its own settlements change
/// ([`Reads::bot_reads`]).
#[derive(Clone, Debug, PartialEq)]
pub struct BotReads {
    /// Over its rated matches, all seasons.
    pub record: Record,
    /// Over its settled matches, rated or not, all seasons.
    pub settled_record: Record,
    /// Its settled matches, all seasons.
    pub settled_matches: i64,
    /// Oldest first, at most [`MAX_CHART_POINTS`].
    pub history: Vec<HistoryPoint>,
    pub opponents: Vec<OpponentLine>,
}

/// The sums of a bot's ratings rows that move with each of its settlements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BotFingerprint {
    seasons: i64,
    settled: i64,
    record: Record,
}

/// Wins, draws and losses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Record {
    pub wins: i64,
    pub draws: i64,
    pub losses: i64,
}

impl Record {
    /// The matches counted.
    pub fn matches(&self) -> i64 {
        self.wins + self.draws + self.losses
    }
}

/// A bot's record against another over their rated matches and over all
/// their settled ones ([`Reads::head_to_head_record`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PairRecords {
    pub rated: Record,
    pub settled: Record,
}

/// The head-to-head of two bots, from the first's side.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HeadToHead {
    pub bot: String,
    pub opponent: String,
    /// Over their settled matches (the same as `settled_record`).
    pub record: Record,
    /// Over the matches that moved the bots' ratings, as the standings count.
    pub rated_record: Record,
    /// Over every settled match, repeats and matches not rated included.
    pub settled_record: Record,
    pub rated_matches: i64,
    pub settled_matches: i64,
    /// The settled matches, newest first.
    pub matches: Page<MatchLine>,
}

impl HeadToHead {
    pub fn new(
        bot: String,
        opponent: String,
        records: PairRecords,
        matches: Page<MatchLine>,
    ) -> HeadToHead {
        HeadToHead {
            bot,
            opponent,
            record: records.settled,
            rated_record: records.rated,
            settled_record: records.settled,
            rated_matches: records.rated.matches(),
            settled_matches: records.settled.matches(),
            matches,
        }
    }
}

/// A bot's rating in a season as the site shows it: the running season's
/// ratings row, or an ended season's frozen standing.
#[derive(Clone, Debug, PartialEq)]
pub struct ShownRating {
    pub season: String,
    pub rating: f64,
    pub deviation: f64,
    pub ended: bool,
}

const MATCH_LINE: &str = "SELECT m.id, m.class, m.state, m.winner, m.stake_a, m.stake_b, \
     m.version_a, m.version_b, m.accepted_ms, m.finished_ms, m.replay_path, m.repeat_of, m.not_rated, \
     m.round_wins_a, m.round_wins_b, m.damage_a, m.damage_b, m.exchanges, m.tokens_a, m.tokens_b, \
     m.cost_usd_a, m.cost_usd_b, m.rating_change_a, m.rating_change_b, \
     s.name AS season_name, ba.name AS name_a, bb.name AS name_b \
     FROM matches m JOIN bots ba ON ba.id = m.bot_a JOIN bots bb ON bb.id = m.bot_b \
     JOIN seasons s ON s.id = m.season_id";

/// The conservative rating of a `ratings r` row, as the running table sorts
/// by it. Written out (not bound) so it is the expression of the index
/// `ratings_class` (migrations/*/0006_site.sql), which PostgreSQL and SQLite
/// then walk in order; [`duel_ladder_core::limits::CONSERVATIVE_DEVIATIONS`] is 2.
const CONSERVATIVE_SQL: &str = "r.rating - 2.0 * r.deviation";

fn match_line(row: &AnyRow) -> Result<MatchLine> {
    let accepted_ms: i64 = get(row, "accepted_ms")?;
    let finished_ms: Option<i64> = get(row, "finished_ms")?;
    Ok(MatchLine {
        id: get(row, "id")?,
        season: get(row, "season_name")?,
        class: class_from_name(&get::<String>(row, "class")?)?.name(),
        state: MatchState::from_name(&get::<String>(row, "state")?)?,
        bot_a: get(row, "name_a")?,
        version_a: get(row, "version_a")?,
        stake_a: get(row, "stake_a")?,
        bot_b: get(row, "name_b")?,
        version_b: get(row, "version_b")?,
        stake_b: get(row, "stake_b")?,
        winner: get::<Option<String>>(row, "winner")?
            .map(|winner| winner_from_name(&winner))
            .transpose()?,
        accepted_ms,
        finished_ms,
        replay: get::<Option<String>>(row, "replay_path")?.is_some(),
        repeat_of: get(row, "repeat_of")?,
        not_rated: get(row, "not_rated")?,
        round_wins: pair(row, "round_wins")?,
        damage: pair(row, "damage")?,
        rating_change: [get(row, "rating_change_a")?, get(row, "rating_change_b")?],
        exchanges: get(row, "exchanges")?,
        duration_ms: finished_ms.map(|finished| finished.saturating_sub(accepted_ms)),
        tokens: pair(row, "tokens")?,
        cost_usd: [get(row, "cost_usd_a")?, get(row, "cost_usd_b")?],
    })
}

/// A side's move in its shown rating at a match
/// ([`MatchNotes::shown_rating_change`]): from its chart's previous point of
/// the season (`before`), else, at its first rated match of the season, the
/// match's own move, since nothing moved its rating before.
fn shown_change(after: Option<f64>, before: Option<f64>, glicko: Option<f64>) -> Option<f64> {
    match (after, before) {
        (Some(after), Some(before)) => Some(after - before),
        (Some(_), None) => glicko,
        (None, _) => None,
    }
}

/// Columns `{prefix}_a` and `{prefix}_b`, both set or both null.
fn pair(row: &AnyRow, prefix: &str) -> Result<Option<[i64; 2]>> {
    let a: Option<i64> = get(row, &format!("{prefix}_a"))?;
    let b: Option<i64> = get(row, &format!("{prefix}_b"))?;
    Ok(a.zip(b).map(|(a, b)| [a, b]))
}

/// Keeps `limit` of `lines` (fetched `limit + 1`), with the cursor of the last.
fn match_page(mut lines: Vec<MatchLine>, limit: usize) -> Page<MatchLine> {
    let more = lines.len() > limit;
    lines.truncate(limit);
    let next_cursor = if more {
        lines.last().map(|line| {
            MatchCursor {
                finished_ms: line.finished_ms.unwrap_or(0),
                id: line.id.clone(),
            }
            .encode()
        })
    } else {
        None
    };
    Page {
        items: lines,
        next_cursor,
    }
}

fn shorten(text: &str) -> String {
    text.chars().take(80).collect()
}

fn fetch_limit(limit: usize) -> i64 {
    i64::try_from(limit.saturating_add(1)).unwrap_or(i64::MAX)
}

impl Reads {
    /// Settled ranked matches, newest first, after `cursor`, narrowed by
    /// `filter`.
    pub async fn settled_matches(
        &self,
        filter: &MatchFilter<'_>,
        cursor: &MatchCursor,
        limit: usize,
    ) -> Result<Page<MatchLine>> {
        if filter.bot_id.is_some() {
            return self.bot_matches(filter, cursor, limit).await;
        }
        // The page is cut from the index alone first, then named: with the
        // joins in one query SQLite may pick a plan that scans far down the
        // index for small limits (docs/perf/ladder.md, "The store's query
        // shapes").
        // The class filter only when given (crate::params).
        let mut params = Params::after(3);
        let class = filter.class.map_or(String::new(), |class| {
            format!("AND class = {}", params.placeholder(class.name()))
        });
        let query = params.bind(
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "{MATCH_LINE} WHERE m.id IN (SELECT id FROM matches WHERE state = 'settled' {class} \
                 AND (finished_ms, id) < ($1, $2) ORDER BY finished_ms DESC, id DESC LIMIT $3) \
                 ORDER BY m.finished_ms DESC, m.id DESC LIMIT $3"
            )))
            .bind(cursor.finished_ms)
            .bind(cursor.id.clone())
            .bind(fetch_limit(limit)),
        );
        let rows = query.fetch_all(self.store.read_pool()).await?;
        let lines = rows.iter().map(match_line).collect::<Result<Vec<_>>>()?;
        Ok(match_page(lines, limit))
    }

    /// The matches being played now, the latest accepted first, at most
    /// `limit`: what a spectator can watch live.
    pub async fn running_matches(&self, limit: usize) -> Result<Vec<MatchLine>> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "{MATCH_LINE} WHERE m.id IN (SELECT id FROM matches WHERE state = 'running' \
             ORDER BY accepted_ms DESC, id DESC LIMIT $1) \
             ORDER BY m.accepted_ms DESC, m.id DESC"
        )))
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(self.store.read_pool())
        .await?;
        rows.iter().map(match_line).collect()
    }

    /// One match as listings show it, with its notes (why it was voided, why
    /// its last run failed, whether its season ended, where it left each
    /// side's shown rating).
    pub async fn match_line(&self, match_id: &str) -> Result<(MatchLine, MatchNotes)> {
        // Each side's chart point at this match (by primary key) and the one
        // before it (the first row down the index `rating_history_bot`),
        // kept only when it is of the same season: a previous season's last
        // point is no rating this season showed.
        let side = |x: &str| {
            format!(
                "h{x}.rating AS after_{x}, \
                 (SELECT CASE WHEN p.season_id = m.season_id THEN p.rating END FROM rating_history p \
                  WHERE p.bot_id = m.bot_{x} AND (p.at_ms, p.match_id) < (h{x}.at_ms, h{x}.match_id) \
                  ORDER BY p.at_ms DESC, p.match_id DESC LIMIT 1) AS before_{x}, "
            )
        };
        let columns = format!(
            "SELECT m.note, m.last_failure, s.ended_ms AS season_ended_ms, {}{}",
            side("a"),
            side("b")
        );
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "{} LEFT JOIN rating_history ha ON ha.bot_id = m.bot_a AND ha.match_id = m.id \
             LEFT JOIN rating_history hb ON hb.bot_id = m.bot_b AND hb.match_id = m.id \
             WHERE m.id = $1",
            MATCH_LINE.replacen("SELECT ", &columns, 1)
        )))
        .bind(match_id.to_owned())
        .fetch_optional(self.store.read_pool())
        .await?
        .ok_or_else(|| LadderError::NotFound(format!("match {}", shorten(match_id))))?;
        let line = match_line(&row)?;
        let mut rating_after = [None; 2];
        let mut shown_rating_change = [None; 2];
        for (index, x) in ["a", "b"].into_iter().enumerate() {
            let after: Option<f64> = get(&row, &format!("after_{x}"))?;
            let before: Option<f64> = get(&row, &format!("before_{x}"))?;
            rating_after[index] = after;
            shown_rating_change[index] = shown_change(after, before, line.rating_change[index]);
        }
        let notes = MatchNotes {
            note: get(&row, "note")?,
            last_failure: get(&row, "last_failure")?,
            season_ended_ms: get(&row, "season_ended_ms")?,
            rating_after,
            shown_rating_change,
        };
        Ok((line, notes))
    }

    /// A bot's settled matches (`filter.bot_id`), newest first, after
    /// `cursor`; with an opponent, only those against it (a head-to-head).
    async fn bot_matches(
        &self,
        filter: &MatchFilter<'_>,
        cursor: &MatchCursor,
        limit: usize,
    ) -> Result<Page<MatchLine>> {
        // One index range per side (bot_a…, bot_b…), merged; each side is cut at
        // the page size before the merge. Only the filters given are written
        // into the SQL, one statement per combination (crate::params): the
        // generic plan of `$n = '' OR …` reads every match of the bot and
        // sorts them (docs/perf/ladder.md, "The store's query shapes").
        let mut params = Params::after(4);
        let opponent = filter.opponent_id.map(|id| params.placeholder(id));
        let mut winner_as = |side: Winner| {
            filter
                .result
                .map(|result| params.placeholder(result.winner_as(side).name()))
        };
        let (winner_a, winner_b) = (winner_as(Winner::A), winner_as(Winner::B));
        let class = filter.class.map(|class| params.placeholder(class.name()));
        let side = |this: &str, other: &str, winner: &Option<String>| {
            let mut conditions =
                format!("{this} = $1 AND state = 'settled' AND (finished_ms, id) < ($2, $3)");
            for (column, value) in [(other, &opponent), ("winner", winner), ("class", &class)] {
                if let Some(value) = value {
                    conditions.push_str(&format!(" AND {column} = {value}"));
                }
            }
            format!(
                "SELECT * FROM (SELECT id FROM matches WHERE {conditions} \
                 ORDER BY finished_ms DESC, id DESC LIMIT $4) AS side_{this}"
            )
        };
        let sql = format!(
            "{MATCH_LINE} WHERE m.id IN ({} UNION ALL {}) ORDER BY m.finished_ms DESC, m.id DESC LIMIT $4",
            side("bot_a", "bot_b", &winner_a),
            side("bot_b", "bot_a", &winner_b)
        );
        let rows = params
            .bind(
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(filter.bot_id.unwrap_or("").to_owned())
                    .bind(cursor.finished_ms)
                    .bind(cursor.id.clone())
                    .bind(fetch_limit(limit)),
            )
            .fetch_all(self.store.read_pool())
            .await?;
        let lines = rows.iter().map(match_line).collect::<Result<Vec<_>>>()?;
        Ok(match_page(lines, limit))
    }

    /// The seasons, newest first.
    pub async fn season_lines(&self) -> Result<Vec<SeasonLine>> {
        let mut seasons = crate::seasons::seasons_on(&mut *self.reader().await?).await?;
        seasons.reverse();
        Ok(seasons.into_iter().map(SeasonLine::from).collect())
    }

    /// A page of one class's table in `season`, sorted by rating − 2·RD
    /// (best first), then bot name; frozen once the season ended.
    pub async fn class_table(
        &self,
        season: &Season,
        class: WeightClass,
        after: Option<&StandingCursor>,
        limit: usize,
    ) -> Result<ClassTable> {
        let first_rank = after.map_or(0, |cursor| cursor.rank);
        let mut rows = if season.ended_ms.is_some() {
            // The frozen row, with the settled count its ratings row kept
            // (settlements after the end add to it), by primary key.
            let rows = sqlx::query(
                "SELECT st.rank, st.bot_name, st.owner_name, st.rating, st.deviation, st.conservative, \
                 st.provisional, st.games, st.wins, st.losses, st.draws, \
                 CAST(COALESCE(r.settled, 0) AS BIGINT) AS settled FROM standings st \
                 LEFT JOIN ratings r ON r.season_id = st.season_id AND r.bot_id = st.bot_id \
                 WHERE st.season_id = $1 AND st.class = $2 AND st.rank > $3 ORDER BY st.rank LIMIT $4",
            )
            .bind(season.id)
            .bind(class.name())
            .bind(first_rank)
            .bind(fetch_limit(limit))
            .fetch_all(self.store.read_pool())
            .await?;
            rows.iter()
                .map(|row| {
                    Ok(StandingLine {
                        rank: get(row, "rank")?,
                        bot: get(row, "bot_name")?,
                        owner: get(row, "owner_name")?,
                        rating: get(row, "rating")?,
                        deviation: get(row, "deviation")?,
                        conservative: get(row, "conservative")?,
                        provisional: get::<i64>(row, "provisional")? != 0,
                        games: get(row, "games")?,
                        wins: get(row, "wins")?,
                        draws: get(row, "draws")?,
                        losses: get(row, "losses")?,
                        rated_matches: get(row, "games")?,
                        settled_matches: get(row, "settled")?,
                    })
                })
                .collect::<Result<Vec<_>>>()?
        } else {
            let (conservative, bot) = after.map_or((f64::INFINITY, String::new()), |cursor| {
                (cursor.conservative, cursor.bot.clone())
            });
            // Walks the index on (season, class, conservative DESC) from the
            // cursor on; the name orders ties within one conservative value.
            let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT b.name AS bot_name, u.name AS owner_name, r.rating, r.deviation, \
                 r.games, r.wins, r.losses, r.draws, r.settled, {CONSERVATIVE_SQL} AS conservative \
                 FROM ratings r JOIN bots b ON b.id = r.bot_id JOIN users u ON u.id = b.owner_id \
                 WHERE r.season_id = $1 AND r.class = $2 AND {CONSERVATIVE_SQL} <= $3 \
                 AND ({CONSERVATIVE_SQL} < $3 OR b.name > $4) \
                 ORDER BY {CONSERVATIVE_SQL} DESC, b.name LIMIT $5"
            )))
            .bind(season.id)
            .bind(class.name())
            .bind(conservative)
            .bind(bot)
            .bind(fetch_limit(limit))
            .fetch_all(self.store.read_pool())
            .await?;
            rows.iter()
                .zip(first_rank + 1..)
                .map(|(row, rank)| {
                    let rating = Rating {
                        rating: get(row, "rating")?,
                        deviation: get(row, "deviation")?,
                        volatility: 0.0,
                    };
                    Ok(StandingLine {
                        rank,
                        bot: get(row, "bot_name")?,
                        owner: get(row, "owner_name")?,
                        rating: rating.rating,
                        deviation: rating.deviation,
                        conservative: get(row, "conservative")?,
                        provisional: rating.is_provisional(),
                        games: get(row, "games")?,
                        wins: get(row, "wins")?,
                        draws: get(row, "draws")?,
                        losses: get(row, "losses")?,
                        rated_matches: get(row, "games")?,
                        settled_matches: get(row, "settled")?,
                    })
                })
                .collect::<Result<Vec<_>>>()?
        };
        let more = rows.len() > limit;
        rows.truncate(limit);
        let next_cursor = if more {
            rows.last().map(|row| {
                StandingCursor {
                    rank: row.rank,
                    conservative: row.conservative,
                    bot: row.bot.clone(),
                }
                .encode()
            })
        } else {
            None
        };
        Ok(ClassTable {
            class: class.name(),
            rows,
            next_cursor,
        })
    }

    /// A bot's rating after each of its last [`MAX_CHART_POINTS`] rated
    /// matches, oldest first.
    pub async fn rating_history(&self, bot_id: &str) -> Result<Vec<HistoryPoint>> {
        let rows = sqlx::query(
            "SELECT h.match_id, s.name AS season_name, h.version, h.at_ms, h.rating, h.deviation \
             FROM rating_history h JOIN seasons s ON s.id = h.season_id \
             WHERE h.bot_id = $1 ORDER BY h.at_ms DESC, h.match_id DESC LIMIT $2",
        )
        .bind(bot_id.to_owned())
        .bind(MAX_CHART_POINTS)
        .fetch_all(self.store.read_pool())
        .await?;
        let mut points = rows
            .iter()
            .map(|row| {
                Ok(HistoryPoint {
                    match_id: get(row, "match_id")?,
                    season: get(row, "season_name")?,
                    version: get(row, "version")?,
                    at_ms: get(row, "at_ms")?,
                    rating: get(row, "rating")?,
                    deviation: get(row, "deviation")?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        points.reverse();
        Ok(points)
    }

    /// A bot's rating in one season, if it played in it.
    pub async fn season_rating(&self, season_id: i64, bot_id: &str) -> Result<Option<Rating>> {
        let row = sqlx::query(
            "SELECT rating, deviation, volatility FROM ratings WHERE season_id = $1 AND bot_id = $2",
        )
        .bind(season_id)
        .bind(bot_id.to_owned())
        .fetch_optional(self.store.read_pool())
        .await?;
        row.map(|row| {
            Ok(Rating {
                rating: get(&row, "rating")?,
                deviation: get(&row, "deviation")?,
                volatility: get(&row, "volatility")?,
            })
        })
        .transpose()
    }

    /// What `bot_id`'s page shows that only a settlement of its own changes:
    /// its rated record, its rating history and its opponents, kept in
    /// memory between its settlements ([`crate::kept`]).
    pub async fn bot_reads(&self, bot_id: &str) -> Result<Arc<BotReads>> {
        // Counting the opponents groups every settled match of the bot and
        // the history is 500 rows: most of the page (docs/perf/ladder.md,
        // "The store's query shapes"). Settlement adds one to the bot's `settled` in its
        // season's ratings row in the transaction that writes the match and
        // its rating history, so these sums say when to read again; they are
        // the bot's record besides.
        let row = sqlx::query(
            "SELECT COUNT(*) AS seasons, CAST(COALESCE(SUM(settled), 0) AS BIGINT) AS settled, \
             CAST(COALESCE(SUM(wins), 0) AS BIGINT) AS wins, \
             CAST(COALESCE(SUM(draws), 0) AS BIGINT) AS draws, \
             CAST(COALESCE(SUM(losses), 0) AS BIGINT) AS losses, \
             CAST(COALESCE(SUM(settled_wins), 0) AS BIGINT) AS settled_wins, \
             CAST(COALESCE(SUM(settled_draws), 0) AS BIGINT) AS settled_draws, \
             CAST(COALESCE(SUM(settled_losses), 0) AS BIGINT) AS settled_losses \
             FROM ratings WHERE bot_id = $1",
        )
        .bind(bot_id.to_owned())
        .fetch_one(self.store.read_pool())
        .await?;
        let record = Record {
            wins: get(&row, "wins")?,
            draws: get(&row, "draws")?,
            losses: get(&row, "losses")?,
        };
        // Settled W/D/L move only with `settled`, which the fingerprint has.
        let settled_record = Record {
            wins: get(&row, "settled_wins")?,
            draws: get(&row, "settled_draws")?,
            losses: get(&row, "settled_losses")?,
        };
        let fingerprint = BotFingerprint {
            seasons: get(&row, "seasons")?,
            settled: get(&row, "settled")?,
            record,
        };
        self.store
            .kept()
            .bots
            .get_or_read(bot_id.to_owned(), fingerprint, async {
                Ok(BotReads {
                    record,
                    settled_record,
                    settled_matches: fingerprint.settled,
                    history: self.rating_history(bot_id).await?,
                    opponents: self.opponents(bot_id).await?,
                })
            })
            .await
    }

    /// The bots `bot_id` met most often (at most [`MAX_OPPONENTS_LISTED`]),
    /// with its score against each.
    async fn opponents(&self, bot_id: &str) -> Result<Vec<OpponentLine>> {
        let rows = sqlx::query(
            // Counted per opponent id from the bot indexes alone (they carry
            // the opponent, state and winner), then named.
            "SELECT bo.name AS bot_name, o.games, o.wins, o.draws, o.losses FROM (\
             SELECT opponent, COUNT(*) AS games, CAST(SUM(won) AS BIGINT) AS wins, \
             CAST(SUM(drawn) AS BIGINT) AS draws, CAST(SUM(lost) AS BIGINT) AS losses FROM (\
               SELECT bot_b AS opponent, CASE winner WHEN 'a' THEN 1 ELSE 0 END AS won, \
                      CASE winner WHEN 'draw' THEN 1 ELSE 0 END AS drawn, \
                      CASE winner WHEN 'b' THEN 1 ELSE 0 END AS lost \
               FROM matches WHERE bot_a = $1 AND state = 'settled' \
               UNION ALL \
               SELECT bot_a, CASE winner WHEN 'b' THEN 1 ELSE 0 END, \
                      CASE winner WHEN 'draw' THEN 1 ELSE 0 END, \
                      CASE winner WHEN 'a' THEN 1 ELSE 0 END \
               FROM matches WHERE bot_b = $1 AND state = 'settled'\
             ) AS sides GROUP BY opponent) AS o JOIN bots bo ON bo.id = o.opponent \
             ORDER BY o.games DESC, bo.name LIMIT $2",
        )
        .bind(bot_id.to_owned())
        .bind(MAX_OPPONENTS_LISTED)
        .fetch_all(self.store.read_pool())
        .await?;
        rows.iter()
            .map(|row| {
                Ok(OpponentLine {
                    bot: get(row, "bot_name")?,
                    games: get(row, "games")?,
                    wins: get(row, "wins")?,
                    draws: get(row, "draws")?,
                    losses: get(row, "losses")?,
                    settled_matches: get(row, "games")?,
                })
            })
            .collect()
    }

    /// `bot_id`'s wins, draws and losses against `opponent_id`, over their
    /// rated matches and over all their settled ones.
    pub async fn head_to_head_record(
        &self,
        bot_id: &str,
        opponent_id: &str,
    ) -> Result<PairRecords> {
        // A match is rated when it put a point on the bot's chart, as the
        // season fit counts its games (crate::fit): one primary-key probe per
        // match of the pair, which the page reads anyway.
        let rows = sqlx::query(
            "SELECT bot_a, winner, rated, COUNT(*) AS n FROM (\
             SELECT m.bot_a, m.winner, CAST(CASE WHEN EXISTS (SELECT 1 FROM rating_history h \
             WHERE h.bot_id = $1 AND h.match_id = m.id) THEN 1 ELSE 0 END AS BIGINT) AS rated \
             FROM matches m WHERE m.state = 'settled' AND \
             ((m.bot_a = $1 AND m.bot_b = $2) OR (m.bot_a = $2 AND m.bot_b = $1))\
             ) AS pair GROUP BY bot_a, winner, rated",
        )
        .bind(bot_id.to_owned())
        .bind(opponent_id.to_owned())
        .fetch_all(self.store.read_pool())
        .await?;
        let mut records = PairRecords::default();
        for row in &rows {
            let as_a = get::<String>(row, "bot_a")? == bot_id;
            let count: i64 = get(row, "n")?;
            let tally = |record: &mut Record| {
                match (get::<Option<String>>(row, "winner")?.as_deref(), as_a) {
                    (Some("a"), true) | (Some("b"), false) => record.wins += count,
                    (Some("b"), true) | (Some("a"), false) => record.losses += count,
                    _ => record.draws += count,
                }
                Ok::<_, LadderError>(())
            };
            tally(&mut records.settled)?;
            if get::<i64>(row, "rated")? != 0 {
                tally(&mut records.rated)?;
            }
        }
        Ok(records)
    }

    /// `bot_id`'s rating in the last ended season it played in, as that
    /// season's frozen table shows it; `None` when it played in none.
    pub async fn last_frozen_rating(&self, bot_id: &str) -> Result<Option<ShownRating>> {
        // The bot's seasons from `ratings_bot`, then its standing by primary
        // key: the running season has no standings row, so it drops out.
        let row = sqlx::query(
            "SELECT se.name AS season_name, st.rating, st.deviation FROM ratings r \
             JOIN standings st ON st.season_id = r.season_id AND st.bot_id = r.bot_id \
             JOIN seasons se ON se.id = r.season_id \
             WHERE r.bot_id = $1 ORDER BY r.season_id DESC LIMIT 1",
        )
        .bind(bot_id.to_owned())
        .fetch_optional(self.store.read_pool())
        .await?;
        row.map(|row| {
            Ok(ShownRating {
                season: get(&row, "season_name")?,
                rating: get(&row, "rating")?,
                deviation: get(&row, "deviation")?,
                ended: true,
            })
        })
        .transpose()
    }
}

/// What a bot's page shows of its play state.
pub fn play_text(play: &Play) -> String {
    match play {
        Play::Inactive => "plays when its owner queues it".to_owned(),
        Play::Active { stake, .. } => {
            format!("active: plays ranked matches continuously, stake {stake}")
        }
        Play::Paused { stake, reason, .. } => format!("paused (stake {stake}): {reason}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shown_change_is_the_chart_step_and_glicko_only_at_the_first_point() {
        // A refit between the two points moved the bot up more than the
        // match moved it down: the step is what the chart drew.
        assert_eq!(
            shown_change(Some(1522.5), Some(1500.0), Some(-2.0)),
            Some(22.5)
        );
        // Its first rated match of the season: nothing moved it before.
        assert_eq!(shown_change(Some(1512.0), None, Some(12.0)), Some(12.0));
        // Not rated: no point on its chart.
        assert_eq!(shown_change(None, Some(1500.0), None), None);
        assert_eq!(shown_change(None, None, None), None);
    }

    #[test]
    fn cursors_round_trip_and_refuse_garbage() {
        let cursor = MatchCursor {
            finished_ms: 1_764_000_000_123,
            id: "m_1-x".to_owned(),
        };
        assert_eq!(MatchCursor::parse(&cursor.encode()).ok(), Some(cursor));
        let standing = StandingCursor {
            rank: 50,
            conservative: 1_234.567_890_123,
            bot: "a_b.c".to_owned(),
        };
        assert_eq!(
            StandingCursor::parse(&standing.encode()).ok(),
            Some(standing)
        );
        assert_eq!(
            duel_ladder_core::limits::CONSERVATIVE_DEVIATIONS.to_bits(),
            2.0_f64.to_bits(),
            "CONSERVATIVE_SQL and the index ratings_class write 2.0"
        );
        for bad in ["", "x_y", "12", "-_"] {
            assert!(MatchCursor::parse(bad).is_err(), "{bad}");
        }
        assert!(StandingCursor::parse("1_2").is_err());
        assert!(StandingCursor::parse("a_0_b").is_err());
        // A rank the next page could not count past, or below the first.
        for wrapping in [
            "9223372036854775807_0_b",
            "-1_0_b",
            "-9223372036854775808_0_b",
        ] {
            assert!(StandingCursor::parse(wrapping).is_err(), "{wrapping}");
        }
        assert!(StandingCursor::parse("9223372036854775806_0_b").is_ok());
    }
}
