//! Continuous ranked play: an active bot stays in its class's pairing waves
//! match after match (`ladder bot activate`). The wave takes an active bot
//! into its pool once its last match settled (or was voided) and the
//! operator's match interval passed; accepting its match marks it busy in the
//! same transaction that escrows the stakes, so a stake is escrowed exactly
//! once per match. A bot whose owner can no longer cover its stake is paused
//! with the reason; ending the season deactivates every bot.

use duel_rules::WeightClass;
use sqlx::AnyConnection;

use super::rows::{load_bot, load_own_bot, stake_precondition_tx};
use super::seasons::ensure_rating;
use super::{Store, count_of, get, write_tx};
use crate::error::{LadderError, Result};
use crate::limits::MAX_ACTIVE_PER_CLASS;
use duel_ladder_core::auth::User;
use duel_ladder_core::ledger;
use duel_ladder_core::model::{Bot, Play};

/// Pauses an active bot with `reason` (one conditional statement: a bot
/// deactivated meanwhile stays inactive). Returns whether it was paused.
pub(crate) async fn pause_tx(conn: &mut AnyConnection, bot_id: &str, reason: &str) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE bots SET paused_reason = $1, active_ready_ms = NULL, active_waves = 0 \
         WHERE id = $2 AND active_stake IS NOT NULL AND paused_reason IS NULL",
    )
    .bind(reason.to_owned())
    .bind(bot_id.to_owned())
    .execute(&mut *conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Takes an active bot out of the wave's pool for the match being accepted:
/// it must still be active, unpaused, ready since `cutoff_ms` at the latest
/// and staking `stake`. A conditional update of the bot's own row, so of two
/// concurrent waves only one can take it (the other gets a conflict).
pub(crate) async fn take_active_tx(
    conn: &mut AnyConnection,
    bot_id: &str,
    stake: i64,
    cutoff_ms: i64,
) -> Result<()> {
    let taken = sqlx::query(
        "UPDATE bots SET active_ready_ms = NULL, active_waves = 0 \
         WHERE id = $1 AND active_stake = $2 AND paused_reason IS NULL \
         AND active_ready_ms IS NOT NULL AND active_ready_ms <= $3",
    )
    .bind(bot_id.to_owned())
    .bind(stake)
    .bind(cutoff_ms)
    .execute(&mut *conn)
    .await?;
    if taken.rows_affected() != 1 {
        return Err(LadderError::Conflict(
            "a paired active bot left play".to_owned(),
        ));
    }
    Ok(())
}

/// After a match of theirs settled or was voided: its active bots are ready
/// again from `now` (those with no other open match).
pub(crate) async fn ready_after_match_tx(
    conn: &mut AnyConnection,
    match_id: &str,
    bot_ids: [&str; 2],
    now: i64,
) -> Result<()> {
    sqlx::query(
        "UPDATE bots SET active_ready_ms = $1, active_waves = 0 \
         WHERE (id = $2 OR id = $3) AND active_stake IS NOT NULL AND paused_reason IS NULL \
         AND NOT EXISTS (SELECT 1 FROM matches m WHERE m.bot_a = bots.id \
         AND m.state IN ('queued', 'running') AND m.id <> $4) \
         AND NOT EXISTS (SELECT 1 FROM matches m WHERE m.bot_b = bots.id \
         AND m.state IN ('queued', 'running') AND m.id <> $4)",
    )
    .bind(now)
    .bind(bot_ids[0].to_owned())
    .bind(bot_ids[1].to_owned())
    .bind(match_id.to_owned())
    .execute(&mut *conn)
    .await?;
    Ok(())
}

async fn activate_tx(
    conn: &mut AnyConnection,
    row_locks: bool,
    owner: &User,
    bot_name: &str,
    stake: i64,
    now: i64,
) -> Result<Bot> {
    let (bot, season) = stake_precondition_tx(conn, row_locks, owner, bot_name, stake).await?;
    let class = bot.class.name();
    let queued = sqlx::query("SELECT 1 AS one FROM queue WHERE bot_id = $1")
        .bind(bot.id.clone())
        .fetch_optional(&mut *conn)
        .await?;
    if queued.is_some() {
        return Err(LadderError::Conflict(format!(
            "bot {bot_name} is queued; `ladder leave {bot_name}` first"
        )));
    }
    if bot.play == Play::Inactive {
        let active = count_of(
            conn,
            "SELECT COUNT(*) AS n FROM bots WHERE class = $1 AND active_stake IS NOT NULL",
            class,
        )
        .await?;
        if active >= MAX_ACTIVE_PER_CLASS {
            return Err(LadderError::Invalid(format!(
                "the {class} class has {MAX_ACTIVE_PER_CLASS} active bots, the most it plays"
            )));
        }
    }
    // Ready now, unless one of its matches is still open: its settlement
    // makes it ready.
    let open_matches: i64 = get(
        &sqlx::query(
            "SELECT (SELECT COUNT(*) FROM matches WHERE bot_a = $1 AND state IN ('queued', 'running')) \
             + (SELECT COUNT(*) FROM matches WHERE bot_b = $1 AND state IN ('queued', 'running')) AS n",
        )
        .bind(bot.id.clone())
        .fetch_one(&mut *conn)
        .await?,
        "n",
    )?;
    let ready = (open_matches == 0).then_some(now);
    let since = match bot.play {
        Play::Active { since_ms, .. } => since_ms,
        Play::Inactive | Play::Paused { .. } => now,
    };
    sqlx::query(
        "UPDATE bots SET active_stake = $1, active_since = $2, active_ready_ms = $3, active_waves = 0, \
         paused_reason = NULL WHERE id = $4",
    )
    .bind(stake)
    .bind(since)
    .bind(ready)
    .bind(bot.id.clone())
    .execute(&mut *conn)
    .await?;
    ensure_rating(conn, season.id, &bot.id, class).await?;
    load_bot(conn, bot_name).await
}

async fn deactivate_tx(conn: &mut AnyConnection, owner: &User, bot_name: &str) -> Result<Bot> {
    let bot = load_own_bot(conn, owner, bot_name).await?;
    if bot.play == Play::Inactive {
        return Err(LadderError::NotFound(format!(
            "bot {bot_name} is not active"
        )));
    }
    sqlx::query(
        "UPDATE bots SET active_stake = NULL, active_since = NULL, active_ready_ms = NULL, \
         active_waves = 0, paused_reason = NULL WHERE id = $1",
    )
    .bind(bot.id.clone())
    .execute(&mut *conn)
    .await?;
    load_bot(conn, bot_name).await
}

impl Store {
    /// Makes one of `owner`'s bots play continuously at `stake` a match (or
    /// changes the stake of an active bot, or resumes a paused one). Needs a
    /// running season, an open class, a bot not in the one-shot queue and a
    /// balance covering the stake.
    pub async fn activate(&self, owner: &User, bot_name: &str, stake: i64) -> Result<Bot> {
        ledger::check_stake(stake)?;
        write_tx!(self, |conn| activate_tx(
            conn,
            self.dialect().row_locks(),
            owner,
            bot_name,
            stake,
            self.now()
        ))
    }

    /// Stops one of `owner`'s bots playing continuously; a match already made
    /// is still played.
    pub async fn deactivate(&self, owner: &User, bot_name: &str) -> Result<Bot> {
        write_tx!(self, |conn| deactivate_tx(conn, owner, bot_name))
    }

    /// Widens the rating window of the active bots a wave left unpaired.
    pub(crate) async fn active_waited(&self, class: WeightClass, cutoff_ms: i64) -> Result<()> {
        sqlx::query(
            "UPDATE bots SET active_waves = active_waves + 1 WHERE class = $1 \
             AND active_stake IS NOT NULL AND paused_reason IS NULL \
             AND active_ready_ms IS NOT NULL AND active_ready_ms <= $2",
        )
        .bind(class.name())
        .bind(cutoff_ms)
        .execute(&mut *self.writer().await?)
        .await?;
        Ok(())
    }
}
