//! Matches: pairing waves (acceptance puts both stakes in escrow), claims with
//! leases, heartbeats, settlement exactly once, and voiding. What a settlement
//! or a void moves is decided by [`duel_ladder_core::ledger`]; this module reads its
//! inputs under the right locks and applies the plan in one transaction.

use duel_rules::{Ruleset, WeightClass};
use sqlx::AnyConnection;
use sqlx::any::AnyRow;

use super::ledger_sql::{apply_transfer, create_account, load_account};
use super::play::{pause_tx, ready_after_match_tx, take_active_tx};
use super::rows::active_season_on;
use super::rows::match_from_row;
use super::script::{Arg, Script};
use super::seasons::ensure_rating;
use super::{ClaimSql, Store, get, write_tx};
use crate::error::{LadderError, Result};
use crate::limits::{MAX_ACTIVE_PER_CLASS, MAX_LIST_ROWS, OPENING_EXCHANGES_SETTING};
use crate::params::Params;
use duel_ladder_core::failure;
use duel_ladder_core::ledger::{self, Settlement, escrow_account, owner_account};
use duel_ladder_core::limits::{
    DEFAULT_RAKE_BP, MAX_MATCH_RUNS, MAX_PAIR_MEETINGS_PER_SEASON, RANKED_OPENING_EXCHANGES,
};
use duel_ladder_core::matchmaker::{self, Contender, Waiting};
use duel_ladder_core::model::{
    BotKind, BotVersion, Claim, Match, MatchSide, MatchState, PlayRecord, Winner, class_from_name,
};
use duel_ladder_core::rating;

const MATCH_SELECT: &str = "SELECT m.*, ba.name AS name_a, bb.name AS name_b FROM matches m \
     JOIN bots ba ON ba.id = m.bot_a JOIN bots bb ON bb.id = m.bot_b";

pub(crate) async fn load_match(conn: &mut AnyConnection, id: &str) -> Result<Match> {
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "{MATCH_SELECT} WHERE m.id = $1"
    )))
    .bind(id.to_owned())
    .fetch_optional(&mut *conn)
    .await?
    .ok_or_else(|| LadderError::NotFound(format!("match {id}")))?;
    match_from_row(&row)
}

/// One side of a pairing, as the queue held it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PairSide {
    pub bot_id: String,
    pub stake: i64,
}

/// Where a bot of a wave's pool waits: its acceptance takes it out of there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PairOrigin {
    /// The one-shot queue: its row is removed.
    Queue,
    /// Continuous play: it must still be active and ready since `cutoff_ms`;
    /// it is busy until this match settles or is voided.
    Active { cutoff_ms: i64 },
}

/// A bot in a wave's pool: what the matchmaker weighs, the stake it puts in
/// escrow when paired, and where it waits.
#[derive(Clone, Debug, PartialEq)]
pub struct PoolEntry {
    pub waiting: Waiting,
    pub stake: i64,
    pub origin: PairOrigin,
}

/// Where a paired bot came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Origin {
    /// Paired by the caller ([`Store::accept_pair`]): it waited nowhere.
    Direct,
    Pool(PairOrigin),
}

/// Accepts a pairing: removes both bots from where they waited, pins the ruleset in force,
/// the class, the budget and the rake, and moves both stakes into escrow, all in one
/// transaction. The bots' queue rows must still be there.
async fn accept_tx(
    conn: &mut AnyConnection,
    sides: &[PairSide; 2],
    origins: [Origin; 2],
    match_id: &str,
    seed: i64,
    now: i64,
) -> Result<Match> {
    let season = active_season_on(conn)
        .await?
        .ok_or_else(|| LadderError::Precondition("no season is running".to_owned()))?;
    // A wave's pair takes the sides its meetings so far give it; a caller's
    // pair keeps the sides the caller chose.
    let (sides, origins) = if origins.contains(&Origin::Direct) {
        (sides.clone(), origins)
    } else {
        let meetings_before = pair_meetings_tx(conn, season.id, sides).await?;
        if matchmaker::first_plays_side_a(&sides[0].bot_id, &sides[1].bot_id, meetings_before) {
            (sides.clone(), origins)
        } else {
            (
                [sides[1].clone(), sides[0].clone()],
                [origins[1], origins[0]],
            )
        }
    };
    let sides = &sides;
    // Bot rows are taken in bot-id order, as settlement takes ratings.
    let mut order = [0, 1];
    order.sort_by(|&x, &y| sides[x].bot_id.cmp(&sides[y].bot_id));
    for (side, origin) in order.map(|index| (&sides[index], origins[index])) {
        match origin {
            Origin::Direct => {}
            Origin::Pool(PairOrigin::Queue) => {
                let removed = sqlx::query("DELETE FROM queue WHERE bot_id = $1")
                    .bind(side.bot_id.clone())
                    .execute(&mut *conn)
                    .await?;
                if removed.rows_affected() != 1 {
                    return Err(LadderError::Conflict(
                        "a paired bot left the queue".to_owned(),
                    ));
                }
            }
            Origin::Pool(PairOrigin::Active { cutoff_ms }) => {
                take_active_tx(conn, &side.bot_id, side.stake, cutoff_ms).await?;
            }
        }
    }
    let found = sqlx::query(
        "SELECT id, name, owner_id, class, current_version, recent_opponents FROM bots \
         WHERE id = $1 OR id = $2",
    )
    .bind(sides[0].bot_id.clone())
    .bind(sides[1].bot_id.clone())
    .fetch_all(&mut *conn)
    .await?;
    let mut rows = Vec::with_capacity(2);
    for side in sides {
        let row = found
            .iter()
            .find(|row| get::<String>(row, "id").is_ok_and(|id| id == side.bot_id))
            .ok_or_else(|| LadderError::NotFound(format!("bot {}", side.bot_id)))?;
        rows.push((
            get::<String>(row, "owner_id")?,
            get::<String>(row, "class")?,
            get::<i64>(row, "current_version")?,
            get::<String>(row, "name")?,
            super::rows::recent_opponents(row)?,
        ));
    }
    let contender = |index: usize| -> Result<Contender<'_>> {
        Ok(Contender {
            owner_id: &rows[index].0,
            class: class_from_name(&rows[index].1)?,
        })
    };
    let (a, b) = (contender(0)?, contender(1)?);
    matchmaker::may_meet(a, b)?;
    let class = a.class;
    let ruleset = Ruleset::CURRENT;
    let budget = i64::try_from(ruleset.budget_tokens(class)).unwrap_or(i64::MAX);
    // The rake and the opening's length in force now, pinned on the match.
    let mut rake_bp = DEFAULT_RAKE_BP;
    let mut opening_exchanges = RANKED_OPENING_EXCHANGES;
    let settings = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT key, value FROM settings WHERE key IN ('rake_bp', '{OPENING_EXCHANGES_SETTING}')"
    )))
    .fetch_all(&mut *conn)
    .await?;
    for row in settings {
        let value = get::<i64>(&row, "value")?;
        if get::<String>(&row, "key")? == "rake_bp" {
            rake_bp = value;
        } else {
            opening_exchanges = value;
        }
    }
    let pair_key =
        duel_ladder_core::repeat::pair_key([0, 1].map(|index| duel_ladder_core::repeat::KeySide {
            bot_id: &sides[index].bot_id,
            version: rows[index].2,
        }));
    sqlx::query(
        "INSERT INTO matches (id, season_id, class, ruleset, budget, seed, bot_a, version_a, owner_a, stake_a, \
         bot_b, version_b, owner_b, stake_b, state, attempts, accepted_ms, rake_bp, pair_key, opening_exchanges) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, 'queued', 0, $15, $16, $17, $18)",
    )
    .bind(match_id.to_owned())
    .bind(season.id)
    .bind(class.name())
    .bind(ruleset.version())
    .bind(budget)
    .bind(seed)
    .bind(sides[0].bot_id.clone())
    .bind(rows[0].2)
    .bind(rows[0].0.clone())
    .bind(sides[0].stake)
    .bind(sides[1].bot_id.clone())
    .bind(rows[1].2)
    .bind(rows[1].0.clone())
    .bind(sides[1].stake)
    .bind(now)
    .bind(rake_bp)
    .bind(pair_key.clone())
    .bind(opening_exchanges)
    .execute(&mut *conn)
    .await?;
    let escrow = escrow_account(match_id);
    create_account(conn, &escrow, "escrow").await?;
    for side in sides {
        ensure_rating(conn, season.id, &side.bot_id, class.name()).await?;
    }
    remember_meeting(
        conn,
        season.id,
        class,
        [&rows[0].4, &rows[1].4],
        sides,
        &pair_key,
    )
    .await?;
    let side = |index: usize| MatchSide {
        bot_id: sides[index].bot_id.clone(),
        bot_name: rows[index].3.clone(),
        version: rows[index].2,
        owner_id: rows[index].0.clone(),
        stake: sides[index].stake,
    };
    let game = Match {
        id: match_id.to_owned(),
        season_id: season.id,
        class,
        ruleset: ruleset.version().to_owned(),
        budget,
        rake_bp,
        seed,
        opening_exchanges,
        sides: [side(0), side(1)],
        state: MatchState::Queued,
        attempts: 0,
        accepted_ms: now,
        finished_ms: None,
        winner: None,
        replay_path: None,
        note: None,
        last_failure: None,
        repeat_of: None,
        not_rated: None,
    };
    // The owners' ledger rows are what concurrent matches share, so they are
    // locked last (held only until the commit that follows), and in one global
    // order (owner id), so two transactions on PostgreSQL never wait on each
    // other in a cycle (a deadlock costs a second).
    for request in ledger::stakes(&game) {
        apply_transfer(conn, &request, now).await?;
    }
    Ok(game)
}

/// How many times the pair met this season before now.
async fn pair_meetings_tx(
    conn: &mut AnyConnection,
    season_id: i64,
    sides: &[PairSide; 2],
) -> Result<i64> {
    let (low, high) = matchmaker::pair_key(&sides[0].bot_id, &sides[1].bot_id);
    let row = sqlx::query(
        "SELECT meetings FROM pair_meetings WHERE season_id = $1 AND bot_low = $2 AND bot_high = $3",
    )
    .bind(season_id)
    .bind(low)
    .bind(high)
    .fetch_optional(&mut *conn)
    .await?;
    row.map_or(Ok(0), |row| get::<i64>(&row, "meetings"))
}

/// Counts a pair's meeting and reads whether its versions repeated a game
/// this season, by key: `$1` season, `$2` and `$3` the pair's bots (the
/// smaller id first), `$4` class, `$5` the versions' pair key.
pub(crate) const REMEMBER_MEETING_SQL: &str = "INSERT INTO pair_meetings (season_id, bot_low, bot_high, class, meetings, repeated) \
     VALUES ($1, $2, $3, $4, 1, 0) ON CONFLICT (season_id, bot_low, bot_high) \
     DO UPDATE SET meetings = pair_meetings.meetings + 1, \
     repeated = CASE WHEN EXISTS (SELECT 1 FROM version_pairs WHERE season_id = $1 \
     AND pair_key = $5 AND repeats > 0) THEN 1 ELSE 0 END \
     RETURNING repeated";

/// What the next waves know of this meeting: the pair's count this season,
/// whether these versions of the pair (`pair_key`) already repeated a game
/// this season, and each bot's recent opponents (latest first), this one
/// marked if they did (`matchmaker::REPEATED_MARK`).
async fn remember_meeting(
    conn: &mut AnyConnection,
    season_id: i64,
    class: WeightClass,
    recent: [&Vec<String>; 2],
    sides: &[PairSide; 2],
    pair_key: &str,
) -> Result<()> {
    let (low, high) = matchmaker::pair_key(&sides[0].bot_id, &sides[1].bot_id);
    // A pair's first meeting cannot have repeated anything; at a later one,
    // a repeat among the settled games of these versions (counted per pair
    // of versions at settlement) says the next game will most likely be the
    // same again.
    let row = sqlx::query(REMEMBER_MEETING_SQL)
        .bind(season_id)
        .bind(low)
        .bind(high)
        .bind(class.name())
        .bind(pair_key.to_owned())
        .fetch_one(&mut *conn)
        .await?;
    let repeated = get::<i64>(&row, "repeated")? != 0;
    for (index, side) in sides.iter().enumerate() {
        let opponent = &sides[1 - index].bot_id;
        let remembered = matchmaker::remember_opponent(recent[index], opponent, repeated);
        sqlx::query("UPDATE bots SET last_opponent = $1, recent_opponents = $2 WHERE id = $3")
            .bind(opponent.clone())
            .bind(remembered.join(" "))
            .bind(side.bot_id.clone())
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}

/// Returns both stakes of a match and marks it voided.
async fn void_tx(conn: &mut AnyConnection, game: &Match, note: &str, now: i64) -> Result<()> {
    for request in ledger::returns(game, "stake returned") {
        apply_transfer(conn, &request, now).await?;
    }
    sqlx::query(
        "UPDATE matches SET state = 'voided', finished_ms = $1, note = $2, lease_id = NULL, lease_expires_ms = NULL \
         WHERE id = $3",
    )
    .bind(now)
    .bind(note.to_owned())
    .bind(game.id.clone())
    .execute(&mut *conn)
    .await?;
    let [a, b] = &game.sides;
    ready_after_match_tx(conn, &game.id, [&a.bot_id, &b.bot_id], now).await
}

enum ClaimStep {
    Nothing,
    Voided,
    Claimed(String),
}

async fn claim_tx(
    conn: &mut AnyConnection,
    select: &'static str,
    lease_id: &str,
    lease_ms: i64,
    now: i64,
) -> Result<ClaimStep> {
    let Some(row) = sqlx::query(select)
        .bind(now)
        .fetch_optional(&mut *conn)
        .await?
    else {
        return Ok(ClaimStep::Nothing);
    };
    let id: String = get(&row, "id")?;
    let attempts: i64 = get(&row, "attempts")?;
    // `attempts` counts the runs so far: the claim after the last run voids.
    if attempts >= MAX_MATCH_RUNS {
        let game = load_match(conn, &id).await?;
        let note = failure::void_note(attempts + 1, attempts, game.last_failure.as_deref());
        void_tx(conn, &game, &note, now).await?;
        return Ok(ClaimStep::Voided);
    }
    sqlx::query(
        "UPDATE matches SET state = 'running', lease_id = $1, lease_expires_ms = $2, attempts = attempts + 1 WHERE id = $3",
    )
    .bind(lease_id.to_owned())
    .bind(now.saturating_add(lease_ms))
    .bind(id.clone())
    .execute(&mut *conn)
    .await?;
    Ok(ClaimStep::Claimed(id))
}

async fn claimed_match(conn: &mut AnyConnection, match_id: &str) -> Result<AnyRow> {
    sqlx::query(claimed_match_sql!("matches", "JOIN", "m.id = $1"))
        .bind(match_id.to_owned())
        .fetch_optional(&mut *conn)
        .await?
        .ok_or_else(|| {
            LadderError::corrupt(format!(
                "claimed match {match_id} without its season or bot versions"
            ))
        })
}

async fn heartbeat_tx(
    conn: &mut AnyConnection,
    match_id: &str,
    lease_id: &str,
    lease_ms: i64,
    now: i64,
) -> Result<i64> {
    let expires = now.saturating_add(lease_ms);
    let done = sqlx::query(
        "UPDATE matches SET lease_expires_ms = $1 WHERE id = $2 AND state = 'running' AND lease_id = $3 \
         AND lease_expires_ms >= $4",
    )
    .bind(expires)
    .bind(match_id.to_owned())
    .bind(lease_id.to_owned())
    .bind(now)
    .execute(&mut *conn)
    .await?;
    if done.rows_affected() == 0 {
        return Err(LadderError::LeaseLost(format!(
            "match {match_id}: lease {lease_id} expired or was taken"
        )));
    }
    Ok(expires)
}

/// What one pairing wave did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WaveReport {
    /// The running season's name.
    pub season: String,
    /// When the wave started (the store's clock).
    pub at_ms: i64,
    /// The pool: queued bots and ready active bots (paused ones not counted).
    pub waiting: usize,
    pub matches: Vec<String>,
    /// Bots dropped from the queue because their owner could no longer cover the stake.
    pub dropped: Vec<String>,
    /// Active bots paused because their owner could no longer cover the stake.
    pub paused: Vec<String>,
    /// How long the wave took.
    pub duration_ms: u64,
}

impl Store {
    /// Accepts one pairing outside the queue (tests, benchmarks, house
    /// matches) under the id and seed the caller drew: the same transaction
    /// as a wave's pair.
    pub async fn accept_pair(
        &self,
        sides: [PairSide; 2],
        match_id: &str,
        seed: i64,
    ) -> Result<Match> {
        let now = self.now();
        write_tx!(self, |conn| accept_tx(
            conn,
            &sides,
            [Origin::Direct; 2],
            match_id,
            seed,
            now
        ))
    }

    /// Accepts a pair a wave made from its pool, under the id and seed the
    /// caller drew: both bots leave where they waited, and both stakes go to
    /// escrow, in one transaction. A bot that left its place meanwhile is a
    /// conflict; an owner who cannot cover a stake, insufficient credits.
    pub async fn accept_wave_pair(
        &self,
        pair: [&PoolEntry; 2],
        match_id: &str,
        seed: i64,
    ) -> Result<Match> {
        let sides = pair.map(|entry| PairSide {
            bot_id: entry.waiting.bot_id.clone(),
            stake: entry.stake,
        });
        let origins = pair.map(|entry| Origin::Pool(entry.origin));
        let now = self.now();
        write_tx!(self, |conn| accept_tx(
            conn, &sides, origins, match_id, seed, now
        ))
    }

    /// The one-shot queue of `class` as a wave's pool, oldest first; a bot
    /// queued before `season_id` began has the initial rating.
    pub async fn wave_queue(&self, season_id: i64, class: WeightClass) -> Result<Vec<PoolEntry>> {
        let rows = sqlx::query(
            "SELECT q.bot_id, q.owner_id, q.stake, q.waves_waited, b.recent_opponents, r.rating \
             FROM queue q JOIN bots b ON b.id = q.bot_id \
             LEFT JOIN ratings r ON r.bot_id = q.bot_id AND r.season_id = $1 \
             WHERE q.class = $2 ORDER BY q.enqueued_ms, q.bot_id",
        )
        .bind(season_id)
        .bind(class.name())
        .fetch_all(&mut *self.writer().await?)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(PoolEntry {
                    waiting: Waiting {
                        bot_id: get(row, "bot_id")?,
                        owner_id: get(row, "owner_id")?,
                        rating: get::<Option<f64>>(row, "rating")?
                            .unwrap_or(rating::INITIAL.rating),
                        waves_waited: get(row, "waves_waited")?,
                        recent_opponents: super::rows::recent_opponents(row)?,
                    },
                    stake: get(row, "stake")?,
                    origin: PairOrigin::Queue,
                })
            })
            .collect()
    }

    /// Active bots of `class` a wave may pair: unpaused, with no open match,
    /// ready since `cutoff_ms` at the latest; oldest ready first.
    pub async fn wave_ready(
        &self,
        season_id: i64,
        class: WeightClass,
        cutoff_ms: i64,
    ) -> Result<Vec<PoolEntry>> {
        let rows = sqlx::query(
            "SELECT b.id, b.owner_id, b.active_stake, b.active_waves, b.recent_opponents, \
             r.rating FROM bots b \
             LEFT JOIN ratings r ON r.bot_id = b.id AND r.season_id = $1 \
             WHERE b.class = $2 AND b.active_stake IS NOT NULL AND b.paused_reason IS NULL \
             AND b.active_ready_ms IS NOT NULL AND b.active_ready_ms <= $3 \
             ORDER BY b.active_ready_ms, b.id LIMIT $4",
        )
        .bind(season_id)
        .bind(class.name())
        .bind(cutoff_ms)
        .bind(MAX_ACTIVE_PER_CLASS)
        .fetch_all(&mut *self.writer().await?)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(PoolEntry {
                    waiting: Waiting {
                        bot_id: get(row, "id")?,
                        owner_id: get(row, "owner_id")?,
                        rating: get::<Option<f64>>(row, "rating")?
                            .unwrap_or(rating::INITIAL.rating),
                        waves_waited: get(row, "active_waves")?,
                        recent_opponents: super::rows::recent_opponents(row)?,
                    },
                    stake: get(row, "active_stake")?,
                    origin: PairOrigin::Active { cutoff_ms },
                })
            })
            .collect()
    }

    /// Pauses an active bot of a wave's pool whose owner cannot cover its
    /// stake now ([`ledger::short_of_stake`], read and written in one
    /// transaction), with the reason; `None` when its owner can (or it is
    /// no longer active).
    pub async fn pause_if_short(&self, bot: &PoolEntry) -> Result<Option<String>> {
        let (bot_id, owner_id) = (&bot.waiting.bot_id, &bot.waiting.owner_id);
        write_tx!(self, |conn| async {
            let available = load_account(conn, &owner_account(owner_id))
                .await?
                .map(|account| account.available())
                .unwrap_or(0);
            let Some(reason) = ledger::short_of_stake(available, bot.stake) else {
                return Ok(None);
            };
            Ok(pause_tx(conn, bot_id, &reason).await?.then_some(reason))
        })
    }

    /// Pauses an active bot with `reason`; whether it was paused (a bot
    /// deactivated or paused meanwhile is left as it is).
    pub async fn pause(&self, bot_id: &str, reason: &str) -> Result<bool> {
        write_tx!(self, |conn| pause_tx(conn, bot_id, reason))
    }

    /// Takes a bot out of the one-shot queue (its owner cannot cover its stake).
    pub async fn drop_from_queue(&self, bot_id: &str) -> Result<()> {
        sqlx::query("DELETE FROM queue WHERE bot_id = $1")
            .bind(bot_id.to_owned())
            .execute(&mut *self.writer().await?)
            .await?;
        Ok(())
    }

    /// After a wave of `class`: every bot it left waiting has waited one
    /// wave more (its rating window widens), queued or active and ready
    /// since `cutoff_ms`.
    pub async fn wave_waited(&self, class: WeightClass, cutoff_ms: i64) -> Result<()> {
        sqlx::query("UPDATE queue SET waves_waited = waves_waited + 1 WHERE class = $1")
            .bind(class.name())
            .execute(&mut *self.writer().await?)
            .await?;
        self.active_waited(class, cutoff_ms).await
    }

    /// The pairs of `class` that met [`MAX_PAIR_MEETINGS_PER_SEASON`] times
    /// this season: few, and found by index.
    pub async fn exhausted_pairs(
        &self,
        season_id: i64,
        class: WeightClass,
    ) -> Result<matchmaker::ExhaustedPairs> {
        let rows = sqlx::query(
            "SELECT bot_low, bot_high FROM pair_meetings \
             WHERE season_id = $1 AND class = $2 AND meetings >= $3",
        )
        .bind(season_id)
        .bind(class.name())
        .bind(MAX_PAIR_MEETINGS_PER_SEASON)
        .fetch_all(&mut *self.writer().await?)
        .await?;
        rows.iter()
            .map(|row| Ok((get(row, "bot_low")?, get(row, "bot_high")?)))
            .collect()
    }

    /// Claims the oldest claimable match for `lease_ms`, voiding on the way any
    /// that ran out of attempts. `None` when nothing is waiting.
    pub async fn claim(&self, lease_ms: i64, now: i64) -> Result<Option<Claim>> {
        let lease_id = uuid::Uuid::new_v4().to_string();
        // The common case: the oldest claimable match, if it has runs left,
        // claimed in one statement and read on the same connection.
        // On SQLite both statements are one command: one hop to the
        // connection's thread. The read finds the match by its new lease
        // (running matches are few, and indexed by state). On PostgreSQL
        // they are one statement.
        let args = || {
            vec![
                Arg::from(lease_id.as_str()),
                Arg::from(now.saturating_add(lease_ms)),
                Arg::from(now),
                Arg::from(MAX_MATCH_RUNS),
            ]
        };
        let claimed = match self.dialect().claim_next() {
            ClaimSql::WithRead(claim_and_read) => {
                let mut claim = Script::default();
                claim.push(claim_and_read.to_owned(), args());
                let mut conn = self.writer().await?;
                let answers = claim.run(&mut conn, false).await?;
                answers
                    .into_iter()
                    .next()
                    .and_then(|answer| answer.rows.into_iter().next())
            }
            ClaimSql::ThenRead(claim_next) => {
                let mut conn = self.writer().await?;
                let mut claim = Script::default();
                claim.push(claim_next.to_owned(), args());
                claim.push(
                    claimed_match_sql!(
                        "matches",
                        "JOIN",
                        "m.state = 'running' AND m.lease_id = $1"
                    )
                    .to_owned(),
                    vec![Arg::from(lease_id.as_str())],
                );
                let together = self.dialect().one_command_scripts();
                let mut answers = claim.run(&mut conn, together).await?.into_iter();
                match (answers.next(), answers.next()) {
                    (Some(updated), Some(read)) => {
                        match (updated.rows.first(), read.rows.into_iter().next()) {
                            (None, _) => None,
                            (Some(_), Some(row)) => Some(row),
                            (Some(claimed), None) => {
                                return Err(LadderError::corrupt(format!(
                                    "claimed match {} without its season or bot versions",
                                    get::<String>(claimed, "id")?
                                )));
                            }
                        }
                    }
                    _ => return Err(LadderError::corrupt("the claim gave no answer")),
                }
            }
        };
        let row = match claimed {
            Some(row) => row,
            // Nothing waiting, or a match to void first: the claim
            // transaction decides.
            None => {
                let select = self.dialect().select_claimable();
                let match_id = loop {
                    let step = write_tx!(self, |conn| claim_tx(
                        conn, select, &lease_id, lease_ms, now
                    ))?;
                    match step {
                        ClaimStep::Nothing => return Ok(None),
                        ClaimStep::Voided => continue,
                        ClaimStep::Claimed(match_id) => break match_id,
                    }
                };
                claimed_match(&mut *self.read_pool().acquire().await?, &match_id).await?
            }
        };
        let game = match_from_row(&row)?;
        let version = |suffix: &str, number: i64| -> Result<BotVersion> {
            Ok(BotVersion {
                version: number,
                kind: BotKind::from_name(&get::<String>(&row, &format!("kind_{suffix}"))?)?,
                spec: get(&row, &format!("spec_{suffix}"))?,
                digest: get(&row, &format!("digest_{suffix}"))?,
                created_ms: get(&row, &format!("created_{suffix}"))?,
            })
        };
        let (a, b) = (
            version("a", game.sides[0].version)?,
            version("b", game.sides[1].version)?,
        );
        Ok(Some(Claim {
            lease_id,
            lease_expires_ms: now.saturating_add(lease_ms),
            season_name: get(&row, "season_name")?,
            game,
            versions: [a, b],
        }))
    }

    /// Extends a lease; fails once the lease expired or another worker took the match.
    pub async fn heartbeat(
        &self,
        match_id: &str,
        lease_id: &str,
        lease_ms: i64,
        now: i64,
    ) -> Result<i64> {
        // One statement: its own transaction, with no BEGIN and COMMIT to send.
        let mut conn = self.writer().await?;
        heartbeat_tx(&mut conn, match_id, lease_id, lease_ms, now).await
    }

    /// When the lease `lease_id` on running match `match_id` expires, read
    /// beside the writer; `None` when the match is not running under it.
    pub async fn lease_expires(&self, match_id: &str, lease_id: &str) -> Result<Option<i64>> {
        let row = sqlx::query(
            "SELECT lease_expires_ms FROM matches WHERE id = $1 AND state = 'running' AND lease_id = $2",
        )
        .bind(match_id.to_owned())
        .bind(lease_id.to_owned())
        .fetch_optional(&mut *self.read_pool().acquire().await?)
        .await?;
        row.map(|row| get::<i64>(&row, "lease_expires_ms"))
            .transpose()
    }

    /// Settles a match, only for the lease holder, in one transaction with the
    /// other settlements of this process that arrive meanwhile (group commit).
    /// A repeat by the same lease returns the settlement already made and
    /// changes nothing. `played` (what the replay says) is recorded with the
    /// result, and its play key decides whether the match is rated: a game that
    /// repeats a rated one of its season settles its stakes but moves no rating.
    pub async fn complete(
        &self,
        match_id: &str,
        lease_id: &str,
        winner: Winner,
        replay_path: &str,
        played: Option<&PlayRecord>,
        now: i64,
    ) -> Result<Settlement> {
        self.settle_queued(super::settle::SettleRequest {
            match_id: match_id.to_owned(),
            lease_id: lease_id.to_owned(),
            winner,
            replay_path: replay_path.to_owned(),
            played: played.cloned(),
            now,
        })
        .await
    }

    /// Voids a match the lease holder cannot run (a bot that cannot be built);
    /// stakes are returned.
    pub async fn void_claimed(
        &self,
        match_id: &str,
        lease_id: &str,
        note: &str,
        now: i64,
    ) -> Result<()> {
        let select = self.dialect().select_match_for_update();
        write_tx!(self, |conn| void_claimed_tx(
            conn, select, match_id, lease_id, note, now
        ))
    }

    /// Records why the run of `match_id` under `lease_id` failed (`cause`, as
    /// [`failure::public_cause`] made it; made public again here), for its
    /// owners and for the void's note should no run succeed. Only the lease
    /// holder of a running match records; `false` when this lease no longer
    /// holds it. The lease is left to expire: the match is run again after it,
    /// as after a worker that died.
    pub async fn record_run_failure(
        &self,
        match_id: &str,
        lease_id: &str,
        cause: &str,
    ) -> Result<bool> {
        let recorded = sqlx::query(
            "UPDATE matches SET last_failure = $1 \
             WHERE id = $2 AND state = 'running' AND lease_id = $3",
        )
        .bind(failure::public_line(cause))
        .bind(match_id.to_owned())
        .bind(lease_id.to_owned())
        .execute(&mut *self.writer().await?)
        .await?;
        Ok(recorded.rows_affected() == 1)
    }

    /// Matches, newest first, optionally in one state and/or with one bot.
    pub async fn matches(
        &self,
        state: Option<MatchState>,
        bot_id: Option<&str>,
    ) -> Result<Vec<Match>> {
        // Only the filters given (crate::params).
        let mut params = Params::after(1);
        let mut filters = Vec::new();
        if let Some(state) = state {
            filters.push(format!("m.state = {}", params.placeholder(state.name())));
        }
        if let Some(bot_id) = bot_id {
            let bot = params.placeholder(bot_id);
            filters.push(format!("(m.bot_a = {bot} OR m.bot_b = {bot})"));
        }
        let filters = if filters.is_empty() {
            String::new()
        } else {
            format!("WHERE {}", filters.join(" AND "))
        };
        let rows = params
            .bind(
                sqlx::query(sqlx::AssertSqlSafe(format!(
                    "{MATCH_SELECT} {filters} ORDER BY m.accepted_ms DESC, m.id LIMIT $1"
                )))
                .bind(MAX_LIST_ROWS),
            )
            .fetch_all(&mut *self.writer().await?)
            .await?;
        rows.iter().map(match_from_row).collect()
    }

    /// How many matches are in each state.
    pub async fn match_counts(&self) -> Result<Vec<(MatchState, i64)>> {
        let rows =
            sqlx::query("SELECT state, COUNT(*) AS n FROM matches GROUP BY state ORDER BY state")
                .fetch_all(&mut *self.writer().await?)
                .await?;
        rows.iter()
            .map(|row| {
                Ok((
                    MatchState::from_name(&get::<String>(row, "state")?)?,
                    get(row, "n")?,
                ))
            })
            .collect()
    }

    /// An owner's available balance.
    pub async fn available(&self, user_id: &str) -> Result<i64> {
        let mut conn = self.writer().await?;
        Ok(load_account(&mut conn, &owner_account(user_id))
            .await?
            .map(|account| account.available())
            .unwrap_or(0))
    }
}

async fn void_claimed_tx(
    conn: &mut AnyConnection,
    select_for_update: &'static str,
    match_id: &str,
    lease_id: &str,
    note: &str,
    now: i64,
) -> Result<()> {
    let row = sqlx::query(select_for_update)
        .bind(match_id.to_owned())
        .fetch_optional(&mut *conn)
        .await?
        .ok_or_else(|| LadderError::NotFound(format!("match {match_id}")))?;
    let state = MatchState::from_name(&get::<String>(&row, "state")?)?;
    let holder: Option<String> = get(&row, "lease_id")?;
    let expires: Option<i64> = get(&row, "lease_expires_ms")?;
    if !ledger::may_void(state, holder.as_deref() == Some(lease_id), expires, now) {
        return Err(LadderError::LeaseLost(format!(
            "match {match_id} is no longer held by lease {lease_id}"
        )));
    }
    let game = load_match(conn, match_id).await?;
    // The note is public: one bounded line without server paths.
    void_tx(conn, &game, &failure::public_line(note), now).await
}
