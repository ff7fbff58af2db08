//! Settlement in batches (group commit): settlements that arrive while one is
//! being written wait, then go together in one transaction whose statements
//! each cover the whole batch (one read of the match rows, one of the ratings,
//! one write per table, one update of every account the batch touches, the
//! house's row once), so the number of statements does not grow with the
//! batch: on SQLite every statement is a hop to sqlx's connection thread, on
//! PostgreSQL every commit waits for its WAL flush (docs/perf/ladder.md).
//!
//! There is one writer of a settled match: a match settled alone is a batch of
//! one, written by the same statements. A match asked twice in one batch is
//! settled on its own afterwards (a repeat by then); any failure of the batched
//! transaction rolls it back and settles each request in a transaction of
//! its own, so one request's failure is its own and the others settle.
//! Plans are [`duel_ladder_core::ledger::settle`]'s, computed in the batch's order, each
//! from the ratings the previous one left: the same results as settling the
//! requests one by one.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use sqlx::AnyConnection;
use tokio::sync::oneshot;

use super::ledger_sql::accounts_update;
use super::script::{Arg, Script, placeholder_rows, shift_placeholders};
use super::{Store, get};
use crate::error::{LadderError, Result};
use crate::limits::MAX_SETTLEMENT_BATCH;
use duel_ladder_core::ledger::Settlement;
use duel_ladder_core::ledger::{self, Delta, HOUSE_ACCOUNT, Plan, SettleGate, TransferOp};
use duel_ladder_core::model::{Fallbacks, Match, PlayRecord, Winner};
use duel_ladder_core::rating::{Rating, Score};
use duel_ladder_core::repeat::{self, KeySide, Verdict};

/// One lease holder's request to settle its match.
#[derive(Clone, Debug)]
pub(crate) struct SettleRequest {
    pub match_id: String,
    pub lease_id: String,
    pub winner: Winner,
    pub replay_path: String,
    /// What the replay says ([`PlayRecord`]: the repeat rule's key and the
    /// match's facts); `None` when the caller has no record of the game (then
    /// the match is rated and shows no facts).
    pub played: Option<PlayRecord>,
    pub now: i64,
}

type Reply = oneshot::Sender<Result<Settlement>>;

/// Settlements waiting for the next batch, and who writes it. Whoever holds
/// `leader` writes batches; everyone else waits for the lock and finds its
/// answer already sent, so no task runs in the background.
#[derive(Debug, Default)]
pub(crate) struct SettlementQueue {
    waiting: Mutex<Vec<(SettleRequest, Reply)>>,
    leader: tokio::sync::Mutex<()>,
    batches: AtomicU64,
    batched: AtomicU64,
    alone: AtomicU64,
}

/// How this process's settlements were written (`ladder bench` reports it;
/// tests check that concurrent settlements share transactions).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SettlementStats {
    /// Batched transactions committed.
    pub batches: u64,
    /// Settlements written by them.
    pub batched: u64,
    /// Settlements written alone: repeats, and every request of a batch that
    /// rolled back.
    pub alone: u64,
}

impl SettlementQueue {
    fn push(&self, request: SettleRequest, reply: Reply) {
        self.waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push((request, reply));
    }

    /// Up to a batch of waiting requests, oldest first; those whose caller
    /// gave up (a cancelled worker) are dropped unsettled, as if never sent.
    fn take_batch(&self) -> Vec<(SettleRequest, Reply)> {
        let mut waiting = self
            .waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        waiting.retain(|(_, reply)| !reply.is_closed());
        let count = waiting.len().min(MAX_SETTLEMENT_BATCH);
        waiting.drain(..count).collect()
    }
}

impl Store {
    /// Settles through the queue: joins the next batch, or writes it.
    pub(crate) async fn settle_queued(&self, request: SettleRequest) -> Result<Settlement> {
        let (reply, mut answer) = oneshot::channel();
        let queue = &*self.settlements;
        queue.push(request.clone(), reply);
        let _leader = queue.leader.lock().await;
        loop {
            match answer.try_recv() {
                Ok(result) => return result,
                // A leader took this request and was cancelled before it
                // answered: its transaction rolled back, so settle alone.
                Err(oneshot::error::TryRecvError::Closed) => {
                    return self.settle_alone(&request).await;
                }
                Err(oneshot::error::TryRecvError::Empty) => {}
            }
            let batch = queue.take_batch();
            if batch.is_empty() {
                // Unreachable while this request waits, but never spin on it.
                return self.settle_alone(&request).await;
            }
            self.settle_batch(batch).await;
        }
    }

    /// How this process's settlements were written so far.
    pub fn settlement_stats(&self) -> SettlementStats {
        let queue = &*self.settlements;
        SettlementStats {
            batches: queue.batches.load(Ordering::Relaxed),
            batched: queue.batched.load(Ordering::Relaxed),
            alone: queue.alone.load(Ordering::Relaxed),
        }
    }

    /// Settles one match in a transaction of its own: a batch of one, so a
    /// match settled alone is written by the same statements as one settled
    /// with others. Retried where the database says a retry may pass.
    async fn settle_alone(&self, request: &SettleRequest) -> Result<Settlement> {
        self.settlements.alone.fetch_add(1, Ordering::Relaxed);
        let mut attempt: u32 = 0;
        loop {
            match self.settle_in_one_tx(std::slice::from_ref(request)).await {
                Err(LadderError::Database(ref error))
                    if attempt < crate::MAX_TRANSACTION_RETRIES_PUB && self.is_retryable(error) =>
                {
                    attempt += 1;
                    tokio::time::sleep(std::time::Duration::from_millis(u64::from(attempt) * 3))
                        .await;
                }
                Err(error) => return Err(error),
                Ok(mut answers) => {
                    return answers.pop().flatten().unwrap_or_else(|| {
                        Err(LadderError::corrupt(format!(
                            "the settlement of match {} gave no answer",
                            request.match_id
                        )))
                    });
                }
            }
        }
    }

    /// Writes one batch and answers every request in it.
    async fn settle_batch(&self, batch: Vec<(SettleRequest, Reply)>) {
        let requests: Vec<SettleRequest> =
            batch.iter().map(|(request, _)| request.clone()).collect();
        let batched = self.try_batch(&requests).await;
        if let Err(error) = &batched {
            tracing::debug!(%error, size = requests.len(), "batched settlement rolled back; settling one by one");
        }
        let mut answers = batched.unwrap_or_else(|_| requests.iter().map(|_| None).collect());
        for ((request, reply), answer) in batch.into_iter().zip(answers.iter_mut()) {
            let result = match answer.take() {
                Some(result) => result,
                None => self.settle_alone(&request).await,
            };
            // The caller may have gone; the settlement stands either way.
            let _ = reply.send(result);
        }
    }

    /// One transaction for the whole batch. `Ok` holds each request's answer,
    /// or `None` where it must be settled alone after the commit; `Err` means
    /// nothing was written.
    async fn try_batch(
        &self,
        requests: &[SettleRequest],
    ) -> Result<Vec<Option<Result<Settlement>>>> {
        let answers = self.settle_in_one_tx(requests).await?;
        let written = answers
            .iter()
            .filter(|answer| matches!(answer, Some(Ok(_))))
            .count();
        if written > 0 {
            let queue = &*self.settlements;
            queue.batches.fetch_add(1, Ordering::Relaxed);
            queue.batched.fetch_add(written as u64, Ordering::Relaxed);
        }
        Ok(answers)
    }

    /// Settles `requests` in one transaction ([`settle_many_tx`]), committed
    /// unless it fails: then nothing was written.
    async fn settle_in_one_tx(
        &self,
        requests: &[SettleRequest],
    ) -> Result<Vec<Option<Result<Settlement>>>> {
        let mut conn = self.writer().await?;
        let mut tx = self.begin_settlement(&mut conn).await?;
        let backend = Backend {
            row_locks: self.dialect().row_locks(),
            together: self.dialect().one_command_scripts(),
        };
        match settle_many_tx(&mut tx, backend, requests).await {
            Ok(answers) => {
                tx.commit().await?;
                Ok(answers)
            }
            Err(error) => {
                let _ = tx.rollback().await;
                Err(error)
            }
        }
    }
}

/// A settlement the batch writes: the match as locked, and its plan.
struct Planned {
    index: usize,
    game: Match,
    plan: Plan,
    /// Whether it is rated (when not, `plan` moves no rating).
    verdict: Verdict,
}

/// The rated matches of the games a batch plays, by season and play key
/// (`season_plays`): a later match with the same key repeats the one named.
/// Read by primary key and added to as the batch settles, so a settlement's
/// cost does not grow with the season (docs/perf/ladder.md).
type RatedPlays = HashMap<(i64, String), RatedPlay>;

/// The rated match of one game of a season.
#[derive(Clone, Debug)]
struct RatedPlay {
    match_id: String,
    accepted_ms: i64,
}

/// The key of `game`'s two versions ([`repeat::pair_key`]).
fn pair_key_of(game: &Match) -> String {
    let [a, b] = &game.sides;
    repeat::pair_key([
        KeySide {
            bot_id: &a.bot_id,
            version: a.version,
        },
        KeySide {
            bot_id: &b.bot_id,
            version: b.version,
        },
    ])
}

/// Whether `game` is rated, from the rated match of its game this season
/// ([`repeat::verdict`]; equal play keys mean the same two versions, so the
/// same pair). A match settled without a record of its game is rated.
fn verdict(rated: &RatedPlays, request: &SettleRequest, game: &Match) -> Verdict {
    let Some(played) = request.played.as_ref() else {
        return Verdict::Rated;
    };
    repeat::verdict(
        rated
            .get(&(game.season_id, played.play_key.clone()))
            .filter(|earlier| earlier.match_id != game.id)
            .map(|earlier| (earlier.match_id.as_str(), earlier.accepted_ms, true)),
    )
}

/// The SQL that finds the rated matches of `count` games, each given as its
/// match's id and play key, in their matches' seasons (placeholders from `$1`):
/// a row per game, `match_id` NULL where the season has no rated match of it.
///
/// Each lookup is a scalar subquery by primary key rather than a join: on
/// PostgreSQL a settlement's statements run with generic plans
/// (`force_generic_plan`), planned once per connection, and a join planned
/// while `season_plays` was empty scanned the whole table at every later
/// settlement (74 ms a batch at the 50,000th match, docs/perf/ladder.md). A
/// subquery by key has no join to choose.
fn rated_plays_select(count: usize) -> String {
    format!(
        "WITH k(k_match, k_key) AS (VALUES {}), \
         s(s_season, s_key) AS (SELECT (SELECT m.season_id FROM matches m WHERE m.id = k.k_match), k.k_key FROM k) \
         SELECT s.s_season AS season_id, s.s_key AS play_key, \
         (SELECT p.match_id FROM season_plays p WHERE p.season_id = s.s_season AND p.play_key = s.s_key) AS match_id, \
         (SELECT p.accepted_ms FROM season_plays p WHERE p.season_id = s.s_season AND p.play_key = s.s_key) AS accepted_ms \
         FROM s",
        placeholder_rows(count, 2)
    )
}

/// How a batch's statements reach the database.
#[derive(Clone, Copy, Debug)]
struct Backend {
    /// Rows are locked (`FOR UPDATE`) in the ledger's global orders.
    row_locks: bool,
    /// A step's statements go as one command (SQLite, see [`Script`]);
    /// otherwise the writes go as one statement
    /// ([`Script::run_as_one_statement`], PostgreSQL), after the row locks.
    together: bool,
}

async fn settle_many_tx(
    conn: &mut AnyConnection,
    backend: Backend,
    requests: &[SettleRequest],
) -> Result<Vec<Option<Result<Settlement>>>> {
    let mut answers: Vec<Option<Result<Settlement>>> = requests.iter().map(|_| None).collect();
    // A match asked twice in one batch: the later ask goes alone, after.
    let mut first_ask: HashMap<&str, usize> = HashMap::new();
    let mut asked: Vec<usize> = Vec::new();
    for (index, request) in requests.iter().enumerate() {
        if first_ask.insert(&request.match_id, index).is_none() {
            asked.push(index);
        }
    }
    let (rows, mut ratings, mut rated_plays) = read_batch(conn, backend, requests, &asked).await?;
    let mut runnable: Vec<(usize, Match, bool)> = Vec::new();
    for &index in &asked {
        let request = &requests[index];
        let Some(row) = rows.get(request.match_id.as_str()) else {
            answers[index] = Some(Err(LadderError::NotFound(format!(
                "match {}",
                request.match_id
            ))));
            continue;
        };
        let game = super::rows::match_from_row(row)?;
        let holder: Option<String> = get(row, "lease_id")?;
        let expires: Option<i64> = get(row, "lease_expires_ms")?;
        let holds_lease = holder.as_deref() == Some(request.lease_id.as_str());
        match ledger::may_settle(game.state, holds_lease, expires, request.now) {
            // A repeat by the lease that settled: what was paid, unchanged.
            SettleGate::Repeat => {
                answers[index] = Some(Ok(settled_already(conn, &game).await?));
            }
            SettleGate::Settle => {
                let season_open = get::<Option<i64>>(row, "season_open")? == Some(1);
                runnable.push((index, game, season_open));
            }
            SettleGate::LeaseLost => {
                answers[index] = Some(Err(LadderError::LeaseLost(format!(
                    "match {} is {} and lease {} no longer holds it",
                    request.match_id,
                    game.state.name(),
                    request.lease_id
                ))));
            }
        }
    }
    if runnable.is_empty() {
        return Ok(answers);
    }
    let mut planned = Vec::with_capacity(runnable.len());
    for (index, game, season_open) in runnable {
        let request = &requests[index];
        let verdict = verdict(&rated_plays, request, &game);
        // Games rated by the batch's own earlier matches count as well.
        if let (Some(played), Verdict::Rated) = (&request.played, &verdict) {
            rated_plays.insert(
                (game.season_id, played.play_key.clone()),
                RatedPlay {
                    match_id: game.id.clone(),
                    accepted_ms: game.accepted_ms,
                },
            );
        }
        let before = if season_open && verdict == Verdict::Rated {
            let [a, b] = &game.sides;
            let rating_of = |bot_id: &str| {
                ratings
                    .get(&(game.season_id, bot_id.to_owned()))
                    .map(|tally| tally.rating)
                    .ok_or_else(|| {
                        LadderError::corrupt(format!(
                            "bot {bot_id} has no rating in season {}",
                            game.season_id
                        ))
                    })
            };
            Some([rating_of(&a.bot_id)?, rating_of(&b.bot_id)?])
        } else {
            None
        };
        // The rake pinned at acceptance, not the setting now.
        let plan = ledger::settle(&game, request.winner, game.rake_bp, before);
        // Every settled match, rated or not, adds to both bots' season spend.
        for (side, game_side) in game.sides.iter().enumerate() {
            if let Some(tally) = ratings.get_mut(&(game.season_id, game_side.bot_id.clone())) {
                tally.spend.add(side, plan.winner, request.played.as_ref());
                tally.touched = true;
            }
        }
        for change in &plan.ratings {
            if let Some(tally) = ratings.get_mut(&(game.season_id, change.bot_id.clone())) {
                tally.rating = change.after;
                tally.touched = true;
                match change.score {
                    Score::Win => tally.wins += 1,
                    Score::Loss => tally.losses += 1,
                    Score::Draw => tally.draws += 1,
                }
            }
        }
        planned.push(Planned {
            index,
            game,
            plan,
            verdict,
        });
    }
    let mut locks = Script::default();
    let mut writes = Script::default();
    store_ratings(&mut writes, &ratings);
    record_history(&mut writes, requests, &planned);
    mark_settled(&mut writes, requests, &planned);
    record_plays(&mut writes, requests, &planned);
    let usage: Vec<Usage<'_>> = planned
        .iter()
        .filter_map(|planned| {
            Some(Usage {
                game: &planned.game,
                winner: planned.plan.winner,
                played: requests[planned.index].played.as_ref()?,
            })
        })
        .collect();
    record_usage(&mut writes, &usage);
    ready_bots(&mut writes, requests, &planned);
    apply_transfers(
        &mut writes,
        backend.row_locks.then_some(&mut locks),
        requests,
        &planned,
    )?;
    // Row locks first, in the ledger's order (none on SQLite).
    locks.run(conn, false).await?;
    if backend.together {
        writes.run(conn, true).await?;
    } else {
        writes.run_as_one_statement(conn).await?;
    }
    for Planned { index, plan, .. } in planned {
        answers[index] = Some(Ok(Settlement {
            match_id: plan.match_id.clone(),
            winner: plan.winner,
            pot: plan.pot,
            rake: plan.rake,
            payout: plan.payout,
            already_settled: false,
            plan: Some(plan),
        }));
    }
    Ok(answers)
}

/// What a match settled before was paid, as its settlement answered: a
/// repeat writes nothing.
async fn settled_already(conn: &mut AnyConnection, game: &Match) -> Result<Settlement> {
    let pot = game.sides[0].stake + game.sides[1].stake;
    let rake = match game.winner {
        Some(Winner::A | Winner::B) => {
            let row = sqlx::query("SELECT amount FROM transfers WHERE id = $1")
                .bind(ledger::rake_transfer_id(&game.id))
                .fetch_optional(&mut *conn)
                .await?;
            row.map(|row| get::<i64>(&row, "amount"))
                .transpose()?
                .unwrap_or(0)
        }
        _ => 0,
    };
    Ok(Settlement {
        match_id: game.id.clone(),
        winner: game.winner.unwrap_or(Winner::Draw),
        pot,
        rake,
        payout: if game.winner == Some(Winner::Draw) {
            0
        } else {
            pot - rake
        },
        already_settled: true,
        plan: None,
    })
}

/// Every asked match's row with whether its season runs, and the ratings of
/// both bots of each whose season runs: one step. Where the backend has row
/// locks, the matches are locked in id order, then the ratings in (season,
/// bot id) order.
async fn read_batch(
    conn: &mut AnyConnection,
    backend: Backend,
    requests: &[SettleRequest],
    asked: &[usize],
) -> Result<(
    HashMap<String, sqlx::any::AnyRow>,
    BTreeMap<(i64, String), Tally>,
    RatedPlays,
)> {
    let ids = placeholder_rows(asked.len(), 1);
    let match_ids: Vec<Arg> = asked
        .iter()
        .map(|&index| Arg::from(requests[index].match_id.as_str()))
        .collect();
    let (lock_matches, lock_ratings) = if backend.row_locks {
        (
            " ORDER BY m.id FOR UPDATE OF m",
            " ORDER BY r.season_id, r.bot_id FOR UPDATE OF r",
        )
    } else {
        ("", "")
    };
    let mut reads = Script::default();
    reads.push(
        format!(
            "SELECT m.*, \
             (SELECT CAST(CASE WHEN ended_ms IS NULL THEN 1 ELSE 0 END AS BIGINT) FROM seasons s \
              WHERE s.id = m.season_id) AS season_open \
             FROM matches m WHERE m.id IN ({ids}){lock_matches}"
        ),
        match_ids.clone(),
    );
    // Ratings of every asked match, not only those that turn out runnable: a
    // few rows more, read in the same step. A bot in two matches of the
    // batch comes back twice. Ended seasons too: a match accepted before its
    // season ended and settled after is not rated, but it adds to both
    // bots' spend in that season, as a match settled alone does.
    reads.push(
        format!(
            "SELECT r.season_id, r.bot_id, r.rating, r.deviation, r.volatility \
             FROM matches m \
             JOIN ratings r ON r.season_id = m.season_id AND (r.bot_id = m.bot_a OR r.bot_id = m.bot_b) \
             WHERE m.id IN ({ids}){lock_ratings}"
        ),
        match_ids,
    );
    // Seasons are known from the locked rows only; the read goes by the
    // requests' matches and their games' keys.
    let keys: Vec<Arg> = asked
        .iter()
        .filter_map(|&index| {
            let request = &requests[index];
            let played = request.played.as_ref()?;
            Some([
                Arg::from(request.match_id.as_str()),
                Arg::from(played.play_key.as_str()),
            ])
        })
        .flatten()
        .collect();
    let has_keys = !keys.is_empty();
    if has_keys {
        reads.push(rated_plays_select(keys.len() / 2), keys);
    }
    let mut answers = reads.run(conn, backend.together).await?.into_iter();
    let (Some(match_rows), Some(rating_rows)) = (answers.next(), answers.next()) else {
        return Err(LadderError::corrupt("the settlement read gave no answer"));
    };
    let mut rated_plays = RatedPlays::new();
    if has_keys {
        let Some(key_rows) = answers.next() else {
            return Err(LadderError::corrupt("the settlement read gave no answer"));
        };
        // A game played by several matches of the batch comes back once per
        // match; a game not rated yet, with no match.
        for row in key_rows.rows {
            let (Some(season_id), Some(match_id), Some(accepted_ms)) = (
                get::<Option<i64>>(&row, "season_id")?,
                get::<Option<String>>(&row, "match_id")?,
                get::<Option<i64>>(&row, "accepted_ms")?,
            ) else {
                continue;
            };
            rated_plays.insert(
                (season_id, get(&row, "play_key")?),
                RatedPlay {
                    match_id,
                    accepted_ms,
                },
            );
        }
    }
    let mut rows = HashMap::new();
    for row in match_rows.rows {
        rows.insert(get::<String>(&row, "id")?, row);
    }
    let mut tallies = BTreeMap::new();
    for row in rating_rows.rows {
        let key = (
            get::<i64>(&row, "season_id")?,
            get::<String>(&row, "bot_id")?,
        );
        if tallies.contains_key(&key) {
            continue;
        }
        tallies.insert(
            key,
            Tally {
                rating: Rating {
                    rating: get(&row, "rating")?,
                    deviation: get(&row, "deviation")?,
                    volatility: get(&row, "volatility")?,
                },
                wins: 0,
                losses: 0,
                draws: 0,
                spend: Spend::default(),
                touched: false,
            },
        );
    }
    Ok((rows, tallies, rated_plays))
}

/// A bot's rating in a season as the batch moves it.
#[derive(Clone, Copy, Debug)]
struct Tally {
    rating: Rating,
    /// Rated games only.
    wins: i64,
    losses: i64,
    draws: i64,
    /// Every settled match.
    spend: Spend,
    touched: bool,
}

/// Each moved rating once, as the batch leaves it, with its tallies added.
fn store_ratings(writes: &mut Script, ratings: &BTreeMap<(i64, String), Tally>) {
    let moved: Vec<(&(i64, String), &Tally)> =
        ratings.iter().filter(|(_, tally)| tally.touched).collect();
    if moved.is_empty() {
        return;
    }
    // One statement per row, spend included: on PostgreSQL the batch's
    // writes are one statement, where two parts may not change one row.
    let sql = format!(
        "WITH d(d_season, d_bot, d_rating, d_deviation, d_volatility, d_wins, d_losses, d_draws, {SPEND_COLUMNS}) \
         AS (VALUES {}) \
         UPDATE ratings SET rating = d.d_rating, deviation = d.d_deviation, volatility = d.d_volatility, \
         games = games + d.d_wins + d.d_losses + d.d_draws, wins = wins + d.d_wins, \
         losses = losses + d.d_losses, draws = draws + d.d_draws, {SPEND_SETS} \
         FROM d WHERE ratings.season_id = d.d_season AND ratings.bot_id = d.d_bot",
        placeholder_rows(moved.len(), 8 + SPEND_ARGS)
    );
    let mut args = Vec::with_capacity(moved.len() * (8 + SPEND_ARGS));
    for ((season_id, bot_id), tally) in &moved {
        args.extend([
            Arg::from(*season_id),
            Arg::from(bot_id.as_str()),
            Arg::from(tally.rating.rating),
            Arg::from(tally.rating.deviation),
            Arg::from(tally.rating.volatility),
            Arg::from(tally.wins),
            Arg::from(tally.losses),
            Arg::from(tally.draws),
        ]);
        args.extend(tally.spend.args());
    }
    writes.push_expecting(sql, args, moved.len(), "ratings");
}

/// Every rating change of the batch, in the order the matches settled.
fn record_history(writes: &mut Script, requests: &[SettleRequest], planned: &[Planned]) {
    let changes: Vec<(&Match, &ledger::RatingChange, i64)> = planned
        .iter()
        .flat_map(|planned| {
            let now = requests[planned.index].now;
            planned
                .plan
                .ratings
                .iter()
                .map(move |change| (&planned.game, change, now))
        })
        .collect();
    if let Some((sql, args)) = rating_history_insert(&changes) {
        writes.push(sql, args);
    }
}

/// Ratings after matches, for the bots' pages' charts, in one statement:
/// each change with its match and when it was settled. `None` without changes.
fn rating_history_insert(
    changes: &[(&Match, &ledger::RatingChange, i64)],
) -> Option<(String, Vec<Arg>)> {
    if changes.is_empty() {
        return None;
    }
    let sql = format!(
        "INSERT INTO rating_history (bot_id, match_id, season_id, version, at_ms, rating, deviation) VALUES {}",
        placeholder_rows(changes.len(), 7)
    );
    let mut args = Vec::with_capacity(changes.len() * 7);
    for (game, change, now) in changes {
        let version = game
            .sides
            .iter()
            .find(|side| side.bot_id == change.bot_id)
            .map_or(0, |side| side.version);
        args.extend([
            Arg::from(change.bot_id.as_str()),
            Arg::from(game.id.as_str()),
            Arg::from(game.season_id),
            Arg::from(version),
            Arg::from(*now),
            Arg::from(change.after.rating),
            Arg::from(change.after.deviation),
        ]);
    }
    Some((sql, args))
}

fn mark_settled(writes: &mut Script, requests: &[SettleRequest], planned: &[Planned]) {
    // Absent facts travel as sentinels the statement turns into NULL: the
    // batch binds typed values only.
    let sql = format!(
        "WITH d(d_id, d_winner, d_finished, d_replay, d_pair, d_not_rated, d_key, d_repeat, d_wins_a, d_wins_b, \
         d_damage_a, d_damage_b, d_exchanges, d_tokens_a, d_tokens_b, d_cost_a, d_cost_b, \
         d_rated, d_change_a, d_change_b) AS (VALUES {}) \
         UPDATE matches SET state = 'settled', winner = d.d_winner, finished_ms = d.d_finished, \
         replay_path = d.d_replay, lease_expires_ms = NULL, pair_key = d.d_pair, \
         not_rated = NULLIF(d.d_not_rated, ''), play_key = NULLIF(d.d_key, ''), \
         repeat_of = NULLIF(d.d_repeat, ''), round_wins_a = NULLIF(d.d_wins_a, -1), \
         round_wins_b = NULLIF(d.d_wins_b, -1), damage_a = NULLIF(d.d_damage_a, -1), \
         damage_b = NULLIF(d.d_damage_b, -1), exchanges = NULLIF(d.d_exchanges, -1), \
         tokens_a = NULLIF(d.d_tokens_a, -1), tokens_b = NULLIF(d.d_tokens_b, -1), \
         cost_usd_a = NULLIF(d.d_cost_a, -1.0), cost_usd_b = NULLIF(d.d_cost_b, -1.0), \
         rating_change_a = CASE WHEN d.d_rated = 1 THEN d.d_change_a END, \
         rating_change_b = CASE WHEN d.d_rated = 1 THEN d.d_change_b END \
         FROM d WHERE matches.id = d.d_id",
        placeholder_rows(planned.len(), 20)
    );
    let mut args = Vec::with_capacity(planned.len() * 20);
    for planned in planned {
        let request = &requests[planned.index];
        args.extend([
            Arg::from(planned.game.id.as_str()),
            Arg::from(planned.plan.winner.name()),
            Arg::from(request.now),
            Arg::from(request.replay_path.as_str()),
            Arg::from(pair_key_of(&planned.game)),
            Arg::from(planned.verdict.not_rated().unwrap_or("")),
        ]);
        args.extend(played_args(
            request.played.as_ref(),
            planned.verdict.repeat_of(),
        ));
        args.extend(rating_change_args(&planned.game, &planned.plan));
    }
    writes.push_expecting(sql, args, planned.len(), "matches");
}

/// The batch's rated games (`season_plays`), which later matches of the
/// same game repeat, and its repeats counted per pair of versions
/// (`version_pairs`), which acceptance reads: one row per key, written by
/// key, so their cost does not grow with the season.
fn record_plays(writes: &mut Script, requests: &[SettleRequest], planned: &[Planned]) {
    let mut rated = Vec::new();
    let mut rated_rows = 0;
    // Summed here: on PostgreSQL the batch's writes are one statement, and an
    // upsert may not change one row twice.
    let mut repeats: BTreeMap<(i64, String), i64> = BTreeMap::new();
    for planned in planned {
        let Some(played) = requests[planned.index].played.as_ref() else {
            continue;
        };
        let game = &planned.game;
        match planned.verdict {
            Verdict::Rated => {
                rated_rows += 1;
                rated.extend([
                    Arg::from(game.season_id),
                    Arg::from(played.play_key.as_str()),
                    Arg::from(game.id.as_str()),
                    Arg::from(game.accepted_ms),
                ]);
            }
            Verdict::Repeat(_) => {
                *repeats
                    .entry((game.season_id, pair_key_of(game)))
                    .or_default() += 1;
            }
        }
    }
    if rated_rows > 0 {
        // A key already kept (a match settled by another process at the
        // same moment) keeps its first match.
        writes.push(
            format!(
                "INSERT INTO season_plays (season_id, play_key, match_id, accepted_ms) VALUES {} \
                 ON CONFLICT DO NOTHING",
                placeholder_rows(rated_rows, 4)
            ),
            rated,
        );
    }
    if !repeats.is_empty() {
        let rows = repeats.len();
        let args = repeats
            .into_iter()
            .flat_map(|((season_id, pair_key), count)| {
                [Arg::from(season_id), Arg::from(pair_key), Arg::from(count)]
            })
            .collect();
        writes.push(
            format!(
                "INSERT INTO version_pairs (season_id, pair_key, repeats) VALUES {} \
                 ON CONFLICT (season_id, pair_key) DO UPDATE SET \
                 repeats = version_pairs.repeats + excluded.repeats",
                placeholder_rows(rows, 3)
            ),
            args,
        );
    }
}

/// Whether the bot on `side` (0 = a) won.
fn won_by(side: usize, winner: Winner) -> bool {
    matches!((side, winner), (0, Winner::A) | (1, Winner::B))
}

/// One settled match with a record of its play: what [`record_usage`] reads.
struct Usage<'a> {
    pub game: &'a Match,
    pub winner: Winner,
    pub played: &'a PlayRecord,
}

/// One bot's calls to one model over some settled matches of one season and
/// class: what settlement adds to its `model_spend` row (the cost page's
/// standings by model read these).
#[derive(Clone, Copy, Debug, Default)]
struct ModelSpend {
    matches: i64,
    wins: i64,
    draws: i64,
    calls: i64,
    tokens: i64,
    cost_usd: f64,
    unpriced: i64,
    priced_wins: i64,
}

const MODEL_SPEND_ARGS: usize = 12;

/// What each settled match's sides lost to the fallback and called of which
/// model (`match_fallbacks`, `match_models`), and the calls added to each
/// bot's sums by model (`model_spend`): the cost of a win and the standings
/// by model are read from these. A side that lost no decision has no
/// fallback row.
fn record_usage(writes: &mut Script, records: &[Usage<'_>]) {
    let side_name = |side: usize| if side == 0 { "a" } else { "b" };
    let mut fallbacks = Vec::new();
    let mut fallback_rows = 0;
    let mut models = Vec::new();
    let mut model_rows = 0;
    // One row per key, summed here: on PostgreSQL the batch's writes are one
    // statement, and an upsert may not change one row twice. A side that
    // names a model twice counts once, as `match_models` keeps it once.
    let mut seen = std::collections::BTreeSet::new();
    let mut spend: BTreeMap<(i64, &str, &str, &str), ModelSpend> = BTreeMap::new();
    for usage in records {
        let (game, played) = (usage.game, usage.played);
        let match_id = game.id.as_str();
        for (side, lost) in played.fallbacks.iter().enumerate() {
            if lost.total() == 0 {
                continue;
            }
            fallback_rows += 1;
            fallbacks.extend([
                Arg::from(match_id),
                Arg::from(side_name(side)),
                Arg::from(lost.timeout),
                Arg::from(lost.budget),
                Arg::from(lost.fault),
            ]);
        }
        for used in &played.models {
            let Some(game_side) = game.sides.get(used.side) else {
                continue;
            };
            if !seen.insert((match_id, used.side, used.model.as_str())) {
                continue;
            }
            let price = used.cost_usd.filter(|usd| *usd >= 0.0);
            model_rows += 1;
            models.extend([
                Arg::from(match_id),
                Arg::from(side_name(used.side)),
                Arg::from(used.model.as_str()),
                Arg::from(used.calls),
                Arg::from(used.tokens),
                Arg::from(price.unwrap_or(-1.0)),
            ]);
            let won = won_by(used.side, usage.winner);
            let sums = spend
                .entry((
                    game.season_id,
                    game.class.name(),
                    used.model.as_str(),
                    game_side.bot_id.as_str(),
                ))
                .or_default();
            sums.matches += 1;
            sums.wins += i64::from(won);
            sums.draws += i64::from(usage.winner == Winner::Draw);
            sums.calls += used.calls;
            sums.tokens += used.tokens;
            match price {
                Some(usd) => {
                    sums.cost_usd += usd;
                    sums.priced_wins += i64::from(won);
                }
                None => sums.unpriced += 1,
            }
        }
    }
    if fallback_rows > 0 {
        writes.push(
            format!(
                "INSERT INTO match_fallbacks (match_id, side, timeout, budget, fault) VALUES {} \
                 ON CONFLICT DO NOTHING",
                placeholder_rows(fallback_rows, 5)
            ),
            fallbacks,
        );
    }
    if model_rows > 0 {
        // An absent price travels as -1.0, which the statement turns into
        // NULL. `WHERE 1 = 1`: SQLite reads `ON CONFLICT` after a bare
        // `SELECT … FROM u` as a join constraint.
        writes.push(
            format!(
                "WITH u(u_match, u_side, u_model, u_calls, u_tokens, u_cost) AS (VALUES {}) \
                 INSERT INTO match_models (match_id, side, model, calls, tokens, cost_usd) \
                 SELECT u_match, u_side, u_model, u_calls, u_tokens, NULLIF(u_cost, -1.0) FROM u \
                 WHERE 1 = 1 \
                 ON CONFLICT DO NOTHING",
                placeholder_rows(model_rows, 6)
            ),
            models,
        );
    }
    if !spend.is_empty() {
        let mut args = Vec::with_capacity(spend.len() * MODEL_SPEND_ARGS);
        for ((season_id, class, model, bot_id), sums) in &spend {
            args.extend([
                Arg::from(*season_id),
                Arg::from(*class),
                Arg::from(*model),
                Arg::from(*bot_id),
                Arg::from(sums.matches),
                Arg::from(sums.wins),
                Arg::from(sums.draws),
                Arg::from(sums.calls),
                Arg::from(sums.tokens),
                Arg::from(sums.cost_usd),
                Arg::from(sums.unpriced),
                Arg::from(sums.priced_wins),
            ]);
        }
        writes.push(
            format!(
                "INSERT INTO model_spend (season_id, class, model, bot_id, matches, wins, draws, \
                 calls, tokens, cost_usd, unpriced, priced_wins) VALUES {} \
                 ON CONFLICT (season_id, class, model, bot_id) DO UPDATE SET \
                 matches = model_spend.matches + excluded.matches, \
                 wins = model_spend.wins + excluded.wins, draws = model_spend.draws + excluded.draws, \
                 calls = model_spend.calls + excluded.calls, tokens = model_spend.tokens + excluded.tokens, \
                 cost_usd = model_spend.cost_usd + excluded.cost_usd, \
                 unpriced = model_spend.unpriced + excluded.unpriced, \
                 priced_wins = model_spend.priced_wins + excluded.priced_wins",
                placeholder_rows(spend.len(), MODEL_SPEND_ARGS)
            ),
            args,
        );
    }
}

/// What one bot spent over some settled matches of one season: what
/// settlement adds to its ratings row (the cost page reads it there).
#[derive(Clone, Copy, Debug, Default)]
struct Spend {
    settled: i64,
    wins: i64,
    draws: i64,
    losses: i64,
    tokens: i64,
    cost_usd: f64,
    unpriced: i64,
    priced_wins: i64,
    decisions: i64,
    fallbacks: Fallbacks,
}

/// The spend's columns in a `WITH d(…)` list, its `SET`s, and how many
/// arguments [`Spend::args`] gives.
const SPEND_COLUMNS: &str = "d_settled, d_settled_wins, d_settled_draws, d_settled_losses, d_tokens, \
     d_cost, d_unpriced, d_priced_wins, d_decisions, d_timeout, d_budget, d_fault";
const SPEND_SETS: &str = "settled = settled + d.d_settled, \
     settled_wins = settled_wins + d.d_settled_wins, settled_draws = settled_draws + d.d_settled_draws, \
     settled_losses = settled_losses + d.d_settled_losses, tokens = tokens + d.d_tokens, \
     cost_usd = cost_usd + d.d_cost, unpriced = unpriced + d.d_unpriced, \
     priced_wins = priced_wins + d.d_priced_wins, decisions = decisions + d.d_decisions, \
     fallback_timeout = fallback_timeout + d.d_timeout, fallback_budget = fallback_budget + d.d_budget, \
     fallback_fault = fallback_fault + d.d_fault";
const SPEND_ARGS: usize = 12;

impl Spend {
    /// Adds one settled match, as the bot on `side` (0 = a) played it.
    fn add(&mut self, side: usize, winner: Winner, played: Option<&PlayRecord>) {
        let won = won_by(side, winner);
        self.settled += 1;
        self.wins += i64::from(won);
        self.draws += i64::from(winner == Winner::Draw);
        self.losses += i64::from(!won && winner != Winner::Draw);
        let Some(played) = played else {
            self.unpriced += 1;
            return;
        };
        self.tokens += played.tokens[side];
        match played.cost_usd[side].filter(|usd| *usd >= 0.0) {
            Some(usd) => {
                self.cost_usd += usd;
                self.priced_wins += i64::from(won);
            }
            None => self.unpriced += 1,
        }
        self.decisions += played.exchanges;
        let lost = played.fallbacks[side];
        self.fallbacks.timeout += lost.timeout;
        self.fallbacks.budget += lost.budget;
        self.fallbacks.fault += lost.fault;
    }

    /// In [`SPEND_COLUMNS`]' order.
    fn args(&self) -> [Arg; SPEND_ARGS] {
        [
            Arg::from(self.settled),
            Arg::from(self.wins),
            Arg::from(self.draws),
            Arg::from(self.losses),
            Arg::from(self.tokens),
            Arg::from(self.cost_usd),
            Arg::from(self.unpriced),
            Arg::from(self.priced_wins),
            Arg::from(self.decisions),
            Arg::from(self.fallbacks.timeout),
            Arg::from(self.fallbacks.budget),
            Arg::from(self.fallbacks.fault),
        ]
    }
}

/// Whether the plan moved ratings (1 or 0), then side `a`'s and `b`'s change
/// in rating points (0.0 when it did not).
fn rating_change_args(game: &Match, plan: &Plan) -> [Arg; 3] {
    let change = |side: usize| {
        plan.ratings
            .iter()
            .find(|change| change.bot_id == game.sides[side].bot_id)
            .map_or(0.0, |change| change.after.rating - change.before.rating)
    };
    [
        Arg::from(i64::from(!plan.ratings.is_empty())),
        Arg::from(change(0)),
        Arg::from(change(1)),
    ]
}

/// A settlement's record as eleven typed arguments: the key, the match it
/// repeats, then the facts; `""`, `-1` and `-1.0` where there are none.
fn played_args(played: Option<&PlayRecord>, repeat_of: Option<&str>) -> [Arg; 11] {
    let int = |value: Option<i64>| Arg::from(value.unwrap_or(-1));
    let cost = |value: Option<f64>| Arg::from(value.filter(|usd| *usd >= 0.0).unwrap_or(-1.0));
    [
        Arg::from(played.map_or("", |played| played.play_key.as_str())),
        Arg::from(repeat_of.unwrap_or("")),
        int(played.map(|played| played.round_wins[0])),
        int(played.map(|played| played.round_wins[1])),
        int(played.map(|played| played.damage[0])),
        int(played.map(|played| played.damage[1])),
        int(played.map(|played| played.exchanges)),
        int(played.map(|played| played.tokens[0])),
        int(played.map(|played| played.tokens[1])),
        cost(played.and_then(|played| played.cost_usd[0])),
        cost(played.and_then(|played| played.cost_usd[1])),
    ]
}

/// Active bots with no other match waiting or running become ready again (the
/// batch's own matches are settled by the statement before, so they no
/// longer count).
fn ready_bots(writes: &mut Script, requests: &[SettleRequest], planned: &[Planned]) {
    let mut bots: Vec<(&str, i64)> = Vec::new();
    for planned in planned {
        for side in &planned.game.sides {
            bots.push((&side.bot_id, requests[planned.index].now));
        }
    }
    // One time per bot: the latest of its matches in the batch.
    bots.sort();
    let mut latest: Vec<(&str, i64)> = Vec::new();
    for (bot_id, now) in bots {
        match latest.last_mut() {
            Some((last, at)) if *last == bot_id => *at = (*at).max(now),
            _ => latest.push((bot_id, now)),
        }
    }
    // The batch's own matches are left out by id rather than by their new
    // state: on PostgreSQL every write of the batch is one statement, whose
    // parts all see the rows as they were before it.
    let settled = planned.len();
    let sql = ready_bots_sql(latest.len(), settled);
    let mut args = Vec::with_capacity(latest.len() * 2 + settled);
    for (bot_id, now) in latest {
        args.extend([Arg::from(bot_id), Arg::from(now)]);
    }
    args.extend(
        planned
            .iter()
            .map(|planned| Arg::from(requests[planned.index].match_id.as_str())),
    );
    writes.push(sql, args);
}

/// The statement of [`ready_bots`] for `bots` bots and `settled` matches
/// (placeholders from `$1`). A bot's other open matches are found through
/// the open matches' own indexes (`matches_open_bot_a`, `_b`), not by
/// walking every match the bot played.
fn ready_bots_sql(bots: usize, settled: usize) -> String {
    format!(
        "WITH d(d_bot, d_ready) AS (VALUES {}) \
         UPDATE bots SET active_ready_ms = d.d_ready, active_waves = 0 FROM d \
         WHERE bots.id = d.d_bot AND active_stake IS NOT NULL AND paused_reason IS NULL \
         AND NOT EXISTS (SELECT 1 FROM matches m WHERE m.bot_a = bots.id \
         AND m.state IN ('queued', 'running') AND m.id NOT IN ({settled_ids})) \
         AND NOT EXISTS (SELECT 1 FROM matches m WHERE m.bot_b = bots.id \
         AND m.state IN ('queued', 'running') AND m.id NOT IN ({settled_ids}))",
        placeholder_rows(bots, 2),
        settled_ids = shift_placeholders(&placeholder_rows(settled, 1), bots * 2)
    )
}

/// Every transfer of the batch: the new ones in one insert, the resolutions of
/// pending stakes in another, then each touched account's row once. A
/// resolution copies its pending transfer, as one does alone, and is written
/// only where that transfer is the stake acceptance made (its accounts and
/// amount, from which the account rows' changes were computed here). Every
/// transfer is new here (the matches were running under their lease), so a
/// conflict or a refused row fails the batch, which rolls back.
fn apply_transfers(
    writes: &mut Script,
    locks: Option<&mut Script>,
    requests: &[SettleRequest],
    planned: &[Planned],
) -> Result<()> {
    let mut deltas: BTreeMap<String, Delta> = BTreeMap::new();
    let mut singles = Vec::new();
    let mut resolutions = Vec::new();
    for planned in planned {
        let now = requests[planned.index].now;
        for (account, delta) in ledger::deltas(&planned.game, &planned.plan)? {
            deltas.entry(account).or_default().add(delta);
        }
        for request in &planned.plan.transfers {
            match &request.op {
                TransferOp::Single {
                    debit,
                    credit,
                    amount,
                } => singles.push((request, debit.clone(), credit.clone(), *amount, now)),
                TransferOp::Post { pending_id } | TransferOp::Void { pending_id } => {
                    let (debit, credit, amount) = ledger::pending_stake(&planned.game, pending_id)?;
                    resolutions.push((request, pending_id, debit, credit, amount, now));
                }
                // `ledger::deltas` refused it above.
                TransferOp::Pending { .. } => {}
            }
        }
    }
    if !resolutions.is_empty() {
        let sql = format!(
            "WITH d(d_id, d_kind, d_memo, d_created, d_pending, d_debit, d_credit, d_amount) AS (VALUES {}) \
             INSERT INTO transfers (id, kind, debit_account, credit_account, amount, pending_id, memo, created_ms) \
             SELECT d.d_id, d.d_kind, t.debit_account, t.credit_account, t.amount, t.id, d.d_memo, d.d_created \
             FROM d, transfers t WHERE t.id = d.d_pending AND t.kind = 'pending' \
             AND t.debit_account = d.d_debit AND t.credit_account = d.d_credit AND t.amount = d.d_amount \
             ON CONFLICT DO NOTHING",
            placeholder_rows(resolutions.len(), 8)
        );
        let mut args = Vec::with_capacity(resolutions.len() * 8);
        for (request, pending_id, debit, credit, amount, now) in &resolutions {
            args.extend([
                Arg::from(request.id.as_str()),
                Arg::from(request.kind().name()),
                Arg::from(request.memo.as_str()),
                Arg::from(*now),
                Arg::from(pending_id.as_str()),
                Arg::from(debit.as_str()),
                Arg::from(credit.as_str()),
                Arg::from(*amount),
            ]);
        }
        writes.push_expecting(sql, args, resolutions.len(), "stake resolutions");
    }
    if !singles.is_empty() {
        let sql = format!(
            "INSERT INTO transfers (id, kind, debit_account, credit_account, amount, pending_id, memo, created_ms) \
             VALUES {} ON CONFLICT DO NOTHING",
            (0..singles.len())
                .map(|row| {
                    let first = row * 6;
                    format!(
                        "(${}, 'single', ${}, ${}, ${}, NULL, ${}, ${})",
                        first + 1,
                        first + 2,
                        first + 3,
                        first + 4,
                        first + 5,
                        first + 6
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        );
        let mut args = Vec::with_capacity(singles.len() * 6);
        for (request, debit, credit, amount, now) in &singles {
            args.extend([
                Arg::from(request.id.as_str()),
                Arg::from(debit.as_str()),
                Arg::from(credit.as_str()),
                Arg::from(*amount),
                Arg::from(request.memo.as_str()),
                Arg::from(*now),
            ]);
        }
        writes.push_expecting(sql, args, singles.len(), "transfers");
    }
    update_accounts(writes, locks, &deltas);
    Ok(())
}

/// Each account's row once. Where the backend has row locks, the rows are
/// locked first in the ledger's one global order (by id, the house last), as
/// transfers made one at a time reach them. The balance rule is checked on the
/// rows as the whole batch leaves them: within a settlement an escrow is
/// credited before it pays out and owners are only credited, so that is the
/// rule each transfer met in turn.
fn update_accounts(
    writes: &mut Script,
    locks: Option<&mut Script>,
    deltas: &BTreeMap<String, Delta>,
) {
    if deltas.is_empty() {
        return;
    }
    let mut ordered: Vec<(&str, Delta)> = deltas
        .iter()
        .map(|(id, delta)| (id.as_str(), *delta))
        .collect();
    ordered.sort_by_key(|(id, _)| (*id == HOUSE_ACCOUNT, *id));
    if let Some(locks) = locks {
        let sql = format!(
            "SELECT id FROM ledger_accounts WHERE id IN ({}) \
             ORDER BY CASE WHEN id = '{HOUSE_ACCOUNT}' THEN 1 ELSE 0 END, id FOR UPDATE",
            placeholder_rows(ordered.len(), 1)
        );
        let args = ordered.iter().map(|(id, _)| Arg::from(*id)).collect();
        locks.push(sql, args);
    }
    let (sql, args) = accounts_update(&ordered);
    writes.push_expecting(sql, args, ordered.len(), "ledger accounts");
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::PairSide;
    use duel_ladder_core::auth::Role;
    use duel_ladder_core::clock::ManualClock;
    use duel_ladder_core::model::{BotSource, MatchState};

    async fn running_pair(store: &Store, tag: &str) -> (String, String) {
        let mut bots = Vec::new();
        for side in ["a", "b"] {
            let (owner, _) = store
                .create_user(&format!("{tag}{side}"), Role::Owner)
                .await
                .expect("owner");
            store
                .grant_credits(&owner, 1_000, &format!("grant:{tag}{side}"))
                .await
                .expect("grant");
            let spec = "builtin:random".to_owned();
            let source = BotSource::builtin(spec);
            let bot = store
                .register_bot(&owner, &format!("{tag}{side}bot"), "light", &source)
                .await
                .expect("bot");
            bots.push(PairSide {
                bot_id: bot.id,
                stake: 10,
            });
        }
        let [a, b]: [PairSide; 2] = bots.try_into().expect("two sides");
        let id = uuid::Uuid::new_v4().to_string();
        store.accept_pair([a, b], &id, 7).await.expect("accept");
        let claim = store
            .claim(60_000, 1_000)
            .await
            .expect("claim")
            .expect("queued");
        (claim.game.id, claim.lease_id)
    }

    /// What SQLite plans for `sql` with every placeholder bound to text:
    /// one line per step of the plan.
    async fn sqlite_plan(conn: &mut sqlx::AnyConnection, sql: &str) -> Vec<String> {
        use sqlx::Row;
        let placeholders = (1..)
            .take_while(|number| sql.contains(&format!("${number}")))
            .count();
        let explain = format!("EXPLAIN QUERY PLAN {sql}");
        let mut query = sqlx::query(sqlx::AssertSqlSafe(explain));
        for _ in 0..placeholders {
            query = query.bind("x");
        }
        query
            .fetch_all(&mut *conn)
            .await
            .unwrap_or_else(|error| panic!("explain {sql}: {error}"))
            .iter()
            .map(|row| row.try_get::<String, _>("detail").expect("detail"))
            .collect()
    }

    /// Every statement a settlement and an acceptance run against a season's
    /// history finds its rows by key (primary keys, the open matches'
    /// partial indexes): none walks the matches of a pair or of a bot, so a
    /// settlement costs the same at the 50,000th match of a season as at the
    /// 2,000th (docs/perf/ladder.md measures both, on both backends).
    #[tokio::test]
    async fn settlement_reads_go_by_key_not_by_history() {
        let dir = tempfile::tempdir().expect("dir");
        let store = Store::connect(&format!("sqlite://{}/l.db", dir.path().display()))
            .await
            .expect("store");
        let mut conn = store.writer().await.expect("writer");
        let statements = [
            ("the rated games of a batch", rated_plays_select(3)),
            ("bots ready again", ready_bots_sql(2, 3)),
            (
                "a pair's meeting",
                crate::matches::REMEMBER_MEETING_SQL.to_owned(),
            ),
        ];
        for (what, sql) in statements {
            let plan = sqlite_plan(&mut conn, &sql).await;
            // A scan of a statement's own VALUES (`k`, `d`) is the batch's
            // rows; a scan of a table or its alias is a walk.
            let walks: Vec<&String> = plan
                .iter()
                .filter(|step| {
                    let scanned = step
                        .strip_prefix("SCAN ")
                        .and_then(|rest| rest.split_whitespace().next());
                    scanned.is_some_and(|name| {
                        [
                            "matches",
                            "m",
                            "season_plays",
                            "p",
                            "version_pairs",
                            "bots",
                            "pair_meetings",
                        ]
                        .contains(&name)
                    })
                })
                .collect();
            assert!(walks.is_empty(), "{what} walks a table: {plan:#?}");
            if what == "bots ready again" {
                let open = plan
                    .iter()
                    .filter(|step| step.contains("matches_open_bot_"))
                    .count();
                assert_eq!(
                    open, 2,
                    "{what} does not use the open matches' indexes: {plan:#?}"
                );
            }
        }
        drop(conn);
        store.close().await;
    }

    /// A batch one of whose writes is refused is rolled back whole: the
    /// other match of the batch is not half settled, and settles afterwards.
    #[tokio::test]
    async fn a_refused_batch_writes_nothing() {
        let dir = tempfile::tempdir().expect("dir");
        let store = Store::connect(&format!("sqlite://{}/l.db", dir.path().display()))
            .await
            .expect("store");
        refused_batch_writes_nothing(&store).await;
        store.close().await;
    }

    /// On PostgreSQL the batch's writes are one statement: a part that
    /// changes the wrong number of rows still refuses the whole batch.
    #[tokio::test]
    async fn a_refused_batch_writes_nothing_on_postgres() {
        let Some(postgres) = TestPostgres::create().await else {
            return;
        };
        refused_batch_writes_nothing(&postgres.store).await;
        postgres.drop().await;
    }

    /// A fresh PostgreSQL database for one test, dropped after it.
    struct TestPostgres {
        store: Store,
        admin: sqlx::AnyConnection,
        name: String,
    }

    impl TestPostgres {
        const ADMIN_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

        /// `None` (said) where PostgreSQL is down and not required.
        async fn create() -> Option<TestPostgres> {
            Self::create_with(|store| store).await
        }

        async fn create_with(set_up: impl FnOnce(Store) -> Store) -> Option<TestPostgres> {
            sqlx::any::install_default_drivers();
            let admin_url = Self::ADMIN_URL;
            let Ok(mut admin) = <sqlx::AnyConnection as sqlx::Connection>::connect(admin_url).await
            else {
                assert!(
                    std::env::var("DUEL_TEST_SERVICES").as_deref() != Ok("required"),
                    "PostgreSQL is not reachable at {admin_url}"
                );
                eprintln!("skipped: PostgreSQL is not reachable at {admin_url}");
                return None;
            };
            let name = format!("ladder_unit_{}", uuid::Uuid::new_v4().simple());
            let create = format!("CREATE DATABASE \"{name}\"");
            sqlx::raw_sql(sqlx::AssertSqlSafe(create))
                .execute(&mut admin)
                .await
                .expect("create database");
            let store = Store::connect(&format!("postgres://postgres@127.0.0.1:5432/{name}"))
                .await
                .expect("store");
            Some(TestPostgres {
                store: set_up(store),
                admin,
                name,
            })
        }

        async fn drop(mut self) {
            self.store.close().await;
            let drop = format!("DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)", self.name);
            sqlx::raw_sql(sqlx::AssertSqlSafe(drop))
                .execute(&mut self.admin)
                .await
                .expect("drop database");
        }
    }

    async fn refused_batch_writes_nothing(store: &Store) {
        store.start_season("s1").await.expect("season");
        let (first, first_lease) = running_pair(store, "p").await;
        let (second, second_lease) = running_pair(store, "q").await;
        // The second match's stake resolution already exists: its insert
        // changes no row, and the batch must refuse.
        sqlx::query(
            "INSERT INTO transfers (id, kind, debit_account, credit_account, amount, pending_id, memo, created_ms) \
             VALUES ($1, 'single', $2, $3, 1, NULL, 'in the way', 0)",
        )
        .bind(ledger::resolve_transfer_id(&second, 'a'))
        .bind(ledger::escrow_account(&second))
        .bind(HOUSE_ACCOUNT)
        .execute(&mut *store.writer().await.expect("writer"))
        .await
        .expect("tamper");
        let request = |match_id: &str, lease_id: &str| SettleRequest {
            match_id: match_id.to_owned(),
            lease_id: lease_id.to_owned(),
            winner: Winner::A,
            replay_path: "r.json".to_owned(),
            played: None,
            now: 2_000,
        };
        let batch = [
            request(&first, &first_lease),
            request(&second, &second_lease),
        ];
        let error = store.try_batch(&batch).await.expect_err("refused");
        assert!(
            error.to_string().contains("batched settlement wrote"),
            "{error}"
        );
        let game = store.reads().game(&first).await.expect("first");
        assert_eq!(game.state, MatchState::Running, "half settled: {game:?}");
        let (_, standings) = store.standings(None, None).await.expect("standings");
        assert!(
            standings.iter().all(|standing| standing.games == 0),
            "ratings moved: {standings:?}"
        );
        // Through the queue, the batch falls back to one at a time.
        let settled = store
            .complete(&first, &first_lease, Winner::A, "r.json", None, 2_000)
            .await;
        assert!(settled.is_ok(), "{settled:?}");
        assert_eq!(
            store.reads().game(&first).await.expect("first").state,
            MatchState::Settled
        );
        // Settled alone, the match still adds to both bots' season spend.
        let season = store
            .reads()
            .active_season()
            .await
            .expect("read")
            .expect("season");
        let lines = store
            .reads()
            .cost_lines(&season, duel_rules::WeightClass::Light)
            .await
            .expect("cost");
        let spent: Vec<(i64, i64, i64, i64)> = lines
            .iter()
            .map(|line| (line.matches, line.wins, line.losses, line.unpriced_matches))
            .collect();
        assert_eq!(spent, [(1, 1, 0, 1), (1, 0, 1, 1)], "{lines:?}");
    }

    /// The clock every row of [`alone_and_batched_rows_agree`] is written at.
    const AGREED_MS: i64 = 1_700_000_000_000;

    /// A match settled alone and one settled in a batch with another are
    /// written by one writer: every column of their settled rows (and of
    /// their bots' ratings rows) agrees, ids aside, for a rated game and for
    /// a repeat.
    #[tokio::test]
    async fn alone_and_batched_rows_agree_on_sqlite() {
        let dir = tempfile::tempdir().expect("dir");
        let store = Store::connect(&format!("sqlite://{}/l.db", dir.path().display()))
            .await
            .expect("store")
            .with_clock(Arc::new(ManualClock::new(AGREED_MS)));
        alone_and_batched_rows_agree(&store).await;
        store.close().await;
    }

    #[tokio::test]
    async fn alone_and_batched_rows_agree_on_postgres() {
        let Some(postgres) = TestPostgres::create_with(|store| {
            store.with_clock(Arc::new(ManualClock::new(AGREED_MS)))
        })
        .await
        else {
            return;
        };
        alone_and_batched_rows_agree(&postgres.store).await;
        postgres.drop().await;
    }

    /// Two owners with a bot each, named after `tag`: the bots' ids, and
    /// the ids a row of theirs holds, as names that read the same in every
    /// pair.
    async fn pair_of_bots(store: &Store, tag: &str) -> ([String; 2], Vec<(String, String)>) {
        let mut bots = Vec::new();
        let mut names = Vec::new();
        for side in ["a", "b"] {
            let (owner, _) = store
                .create_user(&format!("{tag}{side}"), Role::Owner)
                .await
                .expect("owner");
            store
                .grant_credits(&owner, 1_000, &format!("grant:{tag}{side}"))
                .await
                .expect("grant");
            let source = BotSource::builtin("builtin:random".to_owned());
            let bot = store
                .register_bot(&owner, &format!("{tag}{side}bot"), "light", &source)
                .await
                .expect("bot");
            names.push((owner.id, format!("<owner {side}>")));
            names.push((bot.id.clone(), format!("<bot {side}>")));
            bots.push(bot.id);
        }
        (bots.try_into().expect("two bots"), names)
    }

    /// Accepts `bots`' match and claims it: its id and lease.
    async fn running_match(store: &Store, bots: &[String; 2]) -> (String, String) {
        let sides = bots.clone().map(|bot_id| PairSide { bot_id, stake: 10 });
        let id = uuid::Uuid::new_v4().to_string();
        store.accept_pair(sides, &id, 7).await.expect("accept");
        let claim = store
            .claim(60_000, AGREED_MS)
            .await
            .expect("claim")
            .expect("queued");
        assert_eq!(claim.game.id, id);
        (id, claim.lease_id)
    }

    /// A game with every fact a settlement records: rounds, damage, tokens,
    /// a priced and an unpriced model, decisions lost to the fallback.
    fn full_record() -> PlayRecord {
        PlayRecord {
            play_key: "sha256:one-game".to_owned(),
            round_wins: [2, 1],
            damage: [41, 30],
            exchanges: 27,
            tokens: [300, 120],
            cost_usd: [Some(0.25), None],
            fallbacks: [
                Fallbacks {
                    timeout: 1,
                    budget: 0,
                    fault: 2,
                },
                Fallbacks::default(),
            ],
            models: vec![
                duel_ladder_core::model::ModelUse {
                    side: 0,
                    model: "small".to_owned(),
                    calls: 3,
                    tokens: 300,
                    cost_usd: Some(0.25),
                },
                duel_ladder_core::model::ModelUse {
                    side: 1,
                    model: "house".to_owned(),
                    calls: 2,
                    tokens: 120,
                    cost_usd: None,
                },
            ],
        }
    }

    /// Every column of one row as text, ids replaced by their names.
    fn row_text(row: &sqlx::any::AnyRow, names: &[(String, String)]) -> Vec<(String, String)> {
        use sqlx::{Column, Row};
        row.columns()
            .iter()
            .map(|column| {
                let name = column.name();
                let value = if let Ok(value) = row.try_get::<Option<i64>, _>(name) {
                    format!("{value:?}")
                } else if let Ok(value) = row.try_get::<Option<f64>, _>(name) {
                    format!("{value:?}")
                } else if let Ok(value) = row.try_get::<Option<String>, _>(name) {
                    names.iter().fold(format!("{value:?}"), |text, (id, name)| {
                        text.replace(id, name)
                    })
                } else {
                    panic!("column {name} reads as no integer, real or text")
                };
                (name.to_owned(), value)
            })
            .collect()
    }

    /// A settled match's row and its bots' ratings rows, as text.
    async fn settled_rows(
        store: &Store,
        match_id: &str,
        names: &[(String, String)],
    ) -> Vec<Vec<(String, String)>> {
        let mut conn = store.writer().await.expect("writer");
        let game = sqlx::query("SELECT * FROM matches WHERE id = $1")
            .bind(match_id.to_owned())
            .fetch_one(&mut *conn)
            .await
            .expect("match row");
        let mut rows = vec![row_text(&game, names)];
        for side in ["bot_a", "bot_b"] {
            let bot: String = get(&game, side).expect("bot");
            let rating = sqlx::query("SELECT * FROM ratings WHERE bot_id = $1")
                .bind(bot)
                .fetch_one(&mut *conn)
                .await
                .expect("ratings row");
            rows.push(row_text(&rating, names));
        }
        rows
    }

    async fn alone_and_batched_rows_agree(store: &Store) {
        store.start_season("s1").await.expect("season");
        let mut pairs = Vec::new();
        for tag in ["p", "q", "r"] {
            pairs.push(pair_of_bots(store, tag).await);
        }
        // Each pair's one game, keyed as a worker keys it: by its versions
        // and its actions.
        let play_key = |index: usize| {
            let bots = &pairs[index].0;
            repeat::play_key(
                [&bots[0], &bots[1]].map(|bot_id| KeySide { bot_id, version: 1 }),
                &[[duel_rules::Action::Jab, duel_rules::Action::Block]],
            )
        };
        let request = |index: usize, (match_id, lease_id): &(String, String)| SettleRequest {
            match_id: match_id.clone(),
            lease_id: lease_id.clone(),
            winner: Winner::A,
            replay_path: "replays/the-match.json".to_owned(),
            played: Some(PlayRecord {
                play_key: play_key(index),
                ..full_record()
            }),
            now: AGREED_MS + 5_000,
        };
        // The first game of each pair is rated; the second, the same game
        // again, is a repeat of it.
        let mut firsts: Vec<String> = Vec::new();
        for round in ["rated", "repeat"] {
            let mut running = Vec::new();
            for (bots, _) in &pairs {
                running.push(running_match(store, bots).await);
            }
            let alone = store
                .settle_alone(&request(0, &running[0]))
                .await
                .expect("settled alone");
            let batched = store
                .try_batch(&[request(1, &running[1]), request(2, &running[2])])
                .await
                .expect("batch");
            assert!(
                batched.iter().all(|answer| matches!(answer, Some(Ok(_)))),
                "{batched:?}"
            );
            assert!(!alone.already_settled);
            let rows = |index: usize| {
                let (match_id, lease_id) = &running[index];
                let (bots, names) = &pairs[index];
                let mut names = names.clone();
                let key = repeat::pair_key(
                    [&bots[0], &bots[1]].map(|bot_id| KeySide { bot_id, version: 1 }),
                );
                names.push((key, "<pair key>".to_owned()));
                names.push((play_key(index), "<play key>".to_owned()));
                names.push((match_id.clone(), "<match>".to_owned()));
                names.push((lease_id.clone(), "<lease>".to_owned()));
                if let Some(first) = firsts.get(index) {
                    names.push((first.clone(), "<first match>".to_owned()));
                }
                async move { settled_rows(store, match_id, &names).await }
            };
            let (alone_rows, batched_rows) = (rows(0).await, rows(1).await);
            assert_eq!(alone_rows, batched_rows, "{round}: alone, then batched");
            assert_eq!(batched_rows, rows(2).await, "{round}: both batched");
            let not_rated = alone_rows[0]
                .iter()
                .find(|(column, _)| column == "not_rated")
                .map(|(_, value)| value.clone());
            let expected = if round == "rated" {
                "None"
            } else {
                "Some(\"repeat\")"
            };
            assert_eq!(not_rated.as_deref(), Some(expected), "{round}");
            if firsts.is_empty() {
                firsts = running.into_iter().map(|(match_id, _)| match_id).collect();
            }
        }
        let stats = store.settlement_stats();
        assert_eq!((stats.alone, stats.batches, stats.batched), (2, 2, 4));
    }
}
