//! Settlement in batches (group commit): settlements that arrive while one is
//! being written wait, then go together in one transaction whose statements
//! each cover the whole batch (one read of the match rows, one of the ratings,
//! one write per table, one update of every account the batch touches, the
//! house's row once). The number of statements no longer grows with the batch:
//! on SQLite, where every statement is a hop to sqlx's connection thread, and on
//! PostgreSQL, where every commit waits for its WAL flush, that is where a
//! settlement's time went.
//!
//! The batch is the fast path for the common case (a running match settled by
//! its lease holder). Anything else in a batch (a repeat of a settlement, a match
//! twice) is settled on its own afterwards; any failure of the batched
//! transaction rolls it back and settles each request on its own
//! ([`super::matches`]' one-match transaction), which reports the real error.
//! Plans are [`crate::ledger::settle`]'s, computed in the batch's order, each
//! from the ratings the previous one left: the same results as settling the
//! requests one by one.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use sqlx::AnyConnection;
use tokio::sync::oneshot;

use super::{Store, get};
use crate::error::{LadderError, Result};
use crate::ledger::{self, HOUSE_ACCOUNT, Plan, TransferOp};
use crate::limits::MAX_SETTLEMENT_BATCH;
use crate::model::{Match, MatchState, Outcome, Settlement};
use crate::rating::{Rating, Score};

/// One lease holder's request to settle its match.
#[derive(Clone, Debug)]
pub(crate) struct SettleRequest {
    pub match_id: String,
    pub lease_id: String,
    pub winner: Outcome,
    pub replay_path: String,
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

    async fn settle_alone(&self, request: &SettleRequest) -> Result<Settlement> {
        self.settlements.alone.fetch_add(1, Ordering::Relaxed);
        self.complete_one(request).await
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
        let mut conn = self.writer().await?;
        let mut tx = self.begin_write(&mut conn).await?;
        match settle_many_tx(&mut tx, self.dialect().row_locks(), requests).await {
            Ok(answers) => {
                tx.commit().await?;
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
            Err(error) => {
                let _ = tx.rollback().await;
                Err(error)
            }
        }
    }
}

/// `(first, …), (…)`: `rows` tuples of `columns` placeholders numbered from `$1`.
pub(crate) fn placeholder_rows(rows: usize, columns: usize) -> String {
    (0..rows)
        .map(|row| {
            let cells: Vec<String> = (1..=columns)
                .map(|column| format!("${}", row * columns + column))
                .collect();
            format!("({})", cells.join(", "))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A settlement the batch writes: the match as locked, and its plan.
struct Planned {
    index: usize,
    game: Match,
    plan: Plan,
}

/// What one account's row moves by in a batch.
#[derive(Clone, Copy, Debug, Default)]
struct AccountDelta {
    debits_pending: i64,
    debits_posted: i64,
    credits_pending: i64,
    credits_posted: i64,
}

async fn settle_many_tx(
    conn: &mut AnyConnection,
    row_locks: bool,
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
    let rows = lock_matches(conn, row_locks, requests, &asked).await?;
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
        let game = super::matches::match_from_row(row)?;
        let holder: Option<String> = get(row, "lease_id")?;
        let expires: Option<i64> = get(row, "lease_expires_ms")?;
        let holds_lease = holder.as_deref() == Some(request.lease_id.as_str());
        match game.state {
            // A repeat by the same lease reads what was paid: alone, after.
            MatchState::Settled if holds_lease => {}
            MatchState::Running
                if holds_lease && expires.is_some_and(|expires| expires >= request.now) =>
            {
                let season_open = get::<Option<i64>>(row, "season_open")? == Some(1);
                runnable.push((index, game, season_open));
            }
            state => {
                answers[index] = Some(Err(LadderError::LeaseLost(format!(
                    "match {} is {} and lease {} no longer holds it",
                    request.match_id,
                    state.name(),
                    request.lease_id
                ))));
            }
        }
    }
    if runnable.is_empty() {
        return Ok(answers);
    }
    let mut ratings = lock_ratings(conn, row_locks, &runnable).await?;
    let mut planned = Vec::with_capacity(runnable.len());
    for (index, game, season_open) in runnable {
        let request = &requests[index];
        let before = if season_open {
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
        planned.push(Planned { index, game, plan });
    }
    store_ratings(conn, &ratings).await?;
    record_history(conn, requests, &planned).await?;
    mark_settled(conn, requests, &planned).await?;
    ready_bots(conn, requests, &planned).await?;
    apply_transfers(conn, row_locks, requests, &planned).await?;
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

/// Every asked match's row with whether its season runs, locked in id order
/// where the backend has row locks.
async fn lock_matches(
    conn: &mut AnyConnection,
    row_locks: bool,
    requests: &[SettleRequest],
    asked: &[usize],
) -> Result<HashMap<String, sqlx::any::AnyRow>> {
    let ids = placeholder_rows(asked.len(), 1);
    let lock = if row_locks {
        " ORDER BY m.id FOR UPDATE OF m"
    } else {
        ""
    };
    let sql = format!(
        "SELECT m.*, \
         (SELECT CAST(CASE WHEN ended_ms IS NULL THEN 1 ELSE 0 END AS BIGINT) FROM seasons s \
          WHERE s.id = m.season_id) AS season_open \
         FROM matches m WHERE m.id IN ({ids}){lock}"
    );
    let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
    for &index in asked {
        query = query.bind(requests[index].match_id.clone());
    }
    let mut rows = HashMap::new();
    for row in query.fetch_all(&mut *conn).await? {
        rows.insert(get::<String>(&row, "id")?, row);
    }
    Ok(rows)
}

/// A bot's rating in a season as the batch moves it.
#[derive(Clone, Copy, Debug)]
struct Tally {
    rating: Rating,
    wins: i64,
    losses: i64,
    draws: i64,
    touched: bool,
}

/// The ratings of every bot of a runnable match whose season runs, locked in
/// (season, bot id) order where the backend has row locks.
async fn lock_ratings(
    conn: &mut AnyConnection,
    row_locks: bool,
    runnable: &[(usize, Match, bool)],
) -> Result<BTreeMap<(i64, String), Tally>> {
    let mut wanted: Vec<(i64, String)> = runnable
        .iter()
        .filter(|(_, _, season_open)| *season_open)
        .flat_map(|(_, game, _)| {
            game.sides
                .iter()
                .map(|side| (game.season_id, side.bot_id.clone()))
        })
        .collect();
    wanted.sort();
    wanted.dedup();
    let mut tallies = BTreeMap::new();
    if wanted.is_empty() {
        return Ok(tallies);
    }
    let lock = if row_locks {
        " ORDER BY season_id, bot_id FOR UPDATE"
    } else {
        ""
    };
    let sql = format!(
        "SELECT season_id, bot_id, rating, deviation, volatility FROM ratings \
         WHERE (season_id, bot_id) IN (VALUES {}){lock}",
        placeholder_rows(wanted.len(), 2)
    );
    let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
    for (season_id, bot_id) in &wanted {
        query = query.bind(*season_id).bind(bot_id.clone());
    }
    for row in query.fetch_all(&mut *conn).await? {
        let key = (
            get::<i64>(&row, "season_id")?,
            get::<String>(&row, "bot_id")?,
        );
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
                touched: false,
            },
        );
    }
    Ok(tallies)
}

/// Each moved rating once, as the batch leaves it, with its tallies added.
async fn store_ratings(
    conn: &mut AnyConnection,
    ratings: &BTreeMap<(i64, String), Tally>,
) -> Result<()> {
    let moved: Vec<(&(i64, String), &Tally)> =
        ratings.iter().filter(|(_, tally)| tally.touched).collect();
    if moved.is_empty() {
        return Ok(());
    }
    let sql = format!(
        "WITH d(d_season, d_bot, d_rating, d_deviation, d_volatility, d_wins, d_losses, d_draws) AS (VALUES {}) \
         UPDATE ratings SET rating = d.d_rating, deviation = d.d_deviation, volatility = d.d_volatility, \
         games = games + d.d_wins + d.d_losses + d.d_draws, wins = wins + d.d_wins, \
         losses = losses + d.d_losses, draws = draws + d.d_draws \
         FROM d WHERE ratings.season_id = d.d_season AND ratings.bot_id = d.d_bot",
        placeholder_rows(moved.len(), 8)
    );
    let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
    for ((season_id, bot_id), tally) in &moved {
        query = query
            .bind(*season_id)
            .bind(bot_id.clone())
            .bind(tally.rating.rating)
            .bind(tally.rating.deviation)
            .bind(tally.rating.volatility)
            .bind(tally.wins)
            .bind(tally.losses)
            .bind(tally.draws);
    }
    expect_rows(
        query.execute(&mut *conn).await?.rows_affected(),
        moved.len(),
        "ratings",
    )
}

/// Every rating change of the batch, in the order the matches settled.
async fn record_history(
    conn: &mut AnyConnection,
    requests: &[SettleRequest],
    planned: &[Planned],
) -> Result<()> {
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
    insert_rating_history(conn, &changes).await
}

/// Ratings after matches, for the bots' pages' charts, in one statement:
/// each change with its match and when it was settled.
pub(super) async fn insert_rating_history(
    conn: &mut AnyConnection,
    changes: &[(&Match, &ledger::RatingChange, i64)],
) -> Result<()> {
    if changes.is_empty() {
        return Ok(());
    }
    let sql = format!(
        "INSERT INTO rating_history (bot_id, match_id, season_id, version, at_ms, rating, deviation) VALUES {}",
        placeholder_rows(changes.len(), 7)
    );
    let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
    for (game, change, now) in changes {
        let version = game
            .sides
            .iter()
            .find(|side| side.bot_id == change.bot_id)
            .map_or(0, |side| side.version);
        query = query
            .bind(change.bot_id.clone())
            .bind(game.id.clone())
            .bind(game.season_id)
            .bind(version)
            .bind(*now)
            .bind(change.after.rating)
            .bind(change.after.deviation);
    }
    query.execute(&mut *conn).await?;
    Ok(())
}

async fn mark_settled(
    conn: &mut AnyConnection,
    requests: &[SettleRequest],
    planned: &[Planned],
) -> Result<()> {
    let sql = format!(
        "WITH d(d_id, d_winner, d_finished, d_replay) AS (VALUES {}) \
         UPDATE matches SET state = 'settled', winner = d.d_winner, finished_ms = d.d_finished, \
         replay_path = d.d_replay, lease_expires_ms = NULL FROM d WHERE matches.id = d.d_id",
        placeholder_rows(planned.len(), 4)
    );
    let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
    for planned in planned {
        let request = &requests[planned.index];
        query = query
            .bind(planned.game.id.clone())
            .bind(planned.plan.winner.name())
            .bind(request.now)
            .bind(request.replay_path.clone());
    }
    expect_rows(
        query.execute(&mut *conn).await?.rows_affected(),
        planned.len(),
        "matches",
    )
}

/// Active bots with no other match waiting or running become ready again (the
/// batch's own matches are settled by now, so they no longer count).
async fn ready_bots(
    conn: &mut AnyConnection,
    requests: &[SettleRequest],
    planned: &[Planned],
) -> Result<()> {
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
    let sql = format!(
        "WITH d(d_bot, d_ready) AS (VALUES {}) \
         UPDATE bots SET active_ready_ms = d.d_ready, active_waves = 0 FROM d \
         WHERE bots.id = d.d_bot AND active_stake IS NOT NULL AND paused_reason IS NULL \
         AND NOT EXISTS (SELECT 1 FROM matches m WHERE m.state IN ('queued', 'running') \
         AND (m.bot_a = bots.id OR m.bot_b = bots.id))",
        placeholder_rows(latest.len(), 2)
    );
    let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
    for (bot_id, now) in latest {
        query = query.bind(bot_id.to_owned()).bind(now);
    }
    query.execute(&mut *conn).await?;
    Ok(())
}

/// Every transfer of the batch: the new ones in one insert, the resolutions of
/// pending stakes in another (each copies its pending transfer, as one does
/// alone), then each touched account's row once. Every transfer is new here (the
/// matches were running under their lease), so a conflict or a refused row is
/// an error that rolls the batch back.
async fn apply_transfers(
    conn: &mut AnyConnection,
    row_locks: bool,
    requests: &[SettleRequest],
    planned: &[Planned],
) -> Result<()> {
    let mut deltas: BTreeMap<String, AccountDelta> = BTreeMap::new();
    let mut singles = Vec::new();
    let mut resolutions = Vec::new();
    for planned in planned {
        let now = requests[planned.index].now;
        for request in &planned.plan.transfers {
            request.validate()?;
            match &request.op {
                TransferOp::Single {
                    debit,
                    credit,
                    amount,
                } => {
                    deltas.entry(debit.clone()).or_default().debits_posted += amount;
                    deltas.entry(credit.clone()).or_default().credits_posted += amount;
                    singles.push((request, debit, credit, *amount, now));
                }
                TransferOp::Post { pending_id } | TransferOp::Void { pending_id } => {
                    resolutions.push((request, pending_id, now));
                }
                TransferOp::Pending { .. } => {
                    return Err(LadderError::corrupt(format!(
                        "settlement plan {} makes a pending transfer",
                        planned.plan.match_id
                    )));
                }
            }
        }
    }
    if !resolutions.is_empty() {
        let sql = format!(
            "WITH d(d_id, d_kind, d_memo, d_created, d_pending) AS (VALUES {}) \
             INSERT INTO transfers (id, kind, debit_account, credit_account, amount, pending_id, memo, created_ms) \
             SELECT d.d_id, d.d_kind, t.debit_account, t.credit_account, t.amount, t.id, d.d_memo, d.d_created \
             FROM d, transfers t WHERE t.id = d.d_pending AND t.kind = 'pending' \
             ON CONFLICT DO NOTHING RETURNING kind, debit_account, credit_account, amount",
            placeholder_rows(resolutions.len(), 5)
        );
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
        for (request, pending_id, now) in &resolutions {
            query = query
                .bind(request.id.clone())
                .bind(request.kind().name())
                .bind(request.memo.clone())
                .bind(*now)
                .bind((*pending_id).clone());
        }
        let rows = query.fetch_all(&mut *conn).await?;
        expect_rows(rows.len() as u64, resolutions.len(), "stake resolutions")?;
        for row in rows {
            let amount: i64 = get(&row, "amount")?;
            let posted = get::<String>(&row, "kind")? == "post";
            let debit = deltas.entry(get(&row, "debit_account")?).or_default();
            debit.debits_pending -= amount;
            if posted {
                debit.debits_posted += amount;
            }
            let credit = deltas.entry(get(&row, "credit_account")?).or_default();
            credit.credits_pending -= amount;
            if posted {
                credit.credits_posted += amount;
            }
        }
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
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
        for (request, debit, credit, amount, now) in &singles {
            query = query
                .bind(request.id.clone())
                .bind((*debit).clone())
                .bind((*credit).clone())
                .bind(*amount)
                .bind(request.memo.clone())
                .bind(*now);
        }
        expect_rows(
            query.execute(&mut *conn).await?.rows_affected(),
            singles.len(),
            "transfers",
        )?;
    }
    update_accounts(conn, row_locks, &deltas).await
}

/// Each account's row once. Where the backend has row locks, the rows are
/// locked first in the ledger's one global order (by id, the house last), as
/// transfers made one at a time reach them. The balance rule is checked on the
/// rows as the whole batch leaves them: within a settlement an escrow is
/// credited before it pays out and owners are only credited, so that is the
/// rule each transfer met in turn.
async fn update_accounts(
    conn: &mut AnyConnection,
    row_locks: bool,
    deltas: &BTreeMap<String, AccountDelta>,
) -> Result<()> {
    if deltas.is_empty() {
        return Ok(());
    }
    let mut ordered: Vec<(&String, &AccountDelta)> = deltas.iter().collect();
    ordered.sort_by_key(|(id, _)| (id.as_str() == HOUSE_ACCOUNT, id.as_str()));
    if row_locks {
        let sql = format!(
            "SELECT id FROM ledger_accounts WHERE id IN ({}) \
             ORDER BY CASE WHEN id = '{HOUSE_ACCOUNT}' THEN 1 ELSE 0 END, id FOR UPDATE",
            placeholder_rows(ordered.len(), 1)
        );
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
        for (id, _) in &ordered {
            query = query.bind((*id).clone());
        }
        query.fetch_all(&mut *conn).await?;
    }
    let sql = format!(
        "WITH d(d_id, d_debits_pending, d_debits_posted, d_credits_pending, d_credits_posted) AS (VALUES {}) \
         UPDATE ledger_accounts SET debits_pending = debits_pending + d.d_debits_pending, \
         debits_posted = debits_posted + d.d_debits_posted, \
         credits_pending = credits_pending + d.d_credits_pending, \
         credits_posted = credits_posted + d.d_credits_posted \
         FROM d WHERE ledger_accounts.id = d.d_id \
         AND debits_pending + d.d_debits_pending >= 0 AND credits_pending + d.d_credits_pending >= 0 \
         AND (may_go_negative = 1 OR credits_posted + d.d_credits_posted - debits_posted - d.d_debits_posted \
              - debits_pending - d.d_debits_pending >= 0)",
        placeholder_rows(ordered.len(), 5)
    );
    let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
    for (id, delta) in &ordered {
        query = query
            .bind((*id).clone())
            .bind(delta.debits_pending)
            .bind(delta.debits_posted)
            .bind(delta.credits_pending)
            .bind(delta.credits_posted);
    }
    expect_rows(
        query.execute(&mut *conn).await?.rows_affected(),
        ordered.len(),
        "ledger accounts",
    )
}

/// A batched write that touched other than every row it meant to: the batch is
/// rolled back and each settlement made alone, which names the cause.
fn expect_rows(affected: u64, expected: usize, table: &str) -> Result<()> {
    if affected == expected as u64 {
        Ok(())
    } else {
        Err(LadderError::Invalid(format!(
            "batched settlement wrote {affected} of {expected} {table} rows"
        )))
    }
}
