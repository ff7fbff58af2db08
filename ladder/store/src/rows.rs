//! Reading the ladder's rows into core types, and the checks every write that
//! stakes a bot shares. Nothing here writes: the modules that write build on
//! it, and it builds on none of them.

use sqlx::any::AnyRow;
use sqlx::{AnyConnection, Row};

use super::get;
use super::ledger_sql::load_account;
use crate::error::{LadderError, Result};
use duel_ladder_core::auth::User;
use duel_ladder_core::ledger::owner_account;
use duel_ladder_core::model::{
    Bot, BotKind, BotVersion, Match, MatchSide, MatchState, Play, Season, class_from_name,
    winner_from_name,
};
use duel_ladder_core::profile::BotProfile;

pub(crate) fn season_from_row(row: &AnyRow) -> Result<Season> {
    Ok(Season {
        id: get(row, "id")?,
        name: get(row, "name")?,
        started_ms: get(row, "started_ms")?,
        ended_ms: get(row, "ended_ms")?,
    })
}

/// The running season, if any, read on `conn`.
pub(crate) async fn active_season_on(conn: &mut AnyConnection) -> Result<Option<Season>> {
    let row = sqlx::query("SELECT * FROM seasons WHERE ended_ms IS NULL ORDER BY id DESC LIMIT 1")
        .fetch_optional(&mut *conn)
        .await?;
    row.as_ref().map(season_from_row).transpose()
}

/// A bot's recent opponents, the latest first (stored separated by spaces).
pub(crate) fn recent_opponents(row: &AnyRow) -> Result<Vec<String>> {
    Ok(get::<Option<String>>(row, "recent_opponents")?
        .map(|list| list.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default())
}

pub(crate) fn match_from_row(row: &AnyRow) -> Result<Match> {
    let side = |suffix: &str| -> Result<MatchSide> {
        Ok(MatchSide {
            bot_id: get(row, &format!("bot_{suffix}"))?,
            // Rows locked for settlement do not join the bots table, so they
            // carry no names; a name column that is there must read.
            bot_name: {
                let column = format!("name_{suffix}");
                if row.try_column(column.as_str()).is_ok() {
                    get(row, &column)?
                } else {
                    String::new()
                }
            },
            version: get(row, &format!("version_{suffix}"))?,
            owner_id: get(row, &format!("owner_{suffix}"))?,
            stake: get(row, &format!("stake_{suffix}"))?,
        })
    };
    Ok(Match {
        id: get(row, "id")?,
        season_id: get(row, "season_id")?,
        class: class_from_name(&get::<String>(row, "class")?)?,
        ruleset: get(row, "ruleset")?,
        budget: get(row, "budget")?,
        rake_bp: get(row, "rake_bp")?,
        seed: get(row, "seed")?,
        opening_exchanges: get(row, "opening_exchanges")?,
        sides: [side("a")?, side("b")?],
        state: MatchState::from_name(&get::<String>(row, "state")?)?,
        attempts: get(row, "attempts")?,
        accepted_ms: get(row, "accepted_ms")?,
        finished_ms: get(row, "finished_ms")?,
        winner: get::<Option<String>>(row, "winner")?
            .map(|winner| winner_from_name(&winner))
            .transpose()?,
        replay_path: get(row, "replay_path")?,
        note: get(row, "note")?,
        last_failure: get(row, "last_failure")?,
        repeat_of: get(row, "repeat_of")?,
        not_rated: get(row, "not_rated")?,
    })
}

/// The columns `bots` rows carry for continuous play, read into a [`Play`].
pub(crate) fn play_from_row(row: &AnyRow) -> Result<Play> {
    let stake: Option<i64> = get(row, "active_stake")?;
    let Some(stake) = stake else {
        return Ok(Play::Inactive);
    };
    let since_ms = get::<Option<i64>>(row, "active_since")?.unwrap_or(0);
    Ok(match get::<Option<String>>(row, "paused_reason")? {
        Some(reason) => Play::Paused {
            stake,
            since_ms,
            reason,
        },
        None => Play::Active { stake, since_ms },
    })
}

/// `bot_name`, which `owner` must own (PERMISSION_DENIED otherwise).
pub(crate) async fn load_own_bot(
    conn: &mut AnyConnection,
    owner: &User,
    bot_name: &str,
) -> Result<Bot> {
    let bot = load_bot(conn, bot_name).await?;
    if bot.owner_id != owner.id {
        return Err(LadderError::PermissionDenied(format!(
            "bot {bot_name} belongs to {}, not {}",
            bot.owner_name, owner.name
        )));
    }
    Ok(bot)
}

/// The running season, for what needs one (queueing, playing).
pub(crate) async fn running_season_tx(
    conn: &mut AnyConnection,
) -> Result<duel_ladder_core::model::Season> {
    active_season_on(conn).await?.ok_or_else(|| {
        LadderError::Precondition("no season is running; an operator starts one".to_owned())
    })
}

pub(crate) async fn load_bot(conn: &mut AnyConnection, name: &str) -> Result<Bot> {
    let row = sqlx::query(
        "SELECT b.id, b.name, b.owner_id, u.name AS owner_name, b.class, b.current_version, \
         b.active_stake, b.active_since, b.paused_reason, b.description, b.author, b.source_url \
         FROM bots b JOIN users u ON u.id = b.owner_id WHERE b.name = $1",
    )
    .bind(name.to_owned())
    .fetch_optional(&mut *conn)
    .await?
    .ok_or_else(|| LadderError::NotFound(format!("bot {name}")))?;
    let mut bot = bot_from_row(&row)?;
    bot.versions = sqlx::query("SELECT * FROM bot_versions WHERE bot_id = $1 ORDER BY version")
        .bind(bot.id.clone())
        .fetch_all(&mut *conn)
        .await?
        .iter()
        .map(version_from_row)
        .collect::<Result<_>>()?;
    Ok(bot)
}

pub(crate) fn bot_from_row(row: &AnyRow) -> Result<Bot> {
    Ok(Bot {
        id: get(row, "id")?,
        name: get(row, "name")?,
        owner_id: get(row, "owner_id")?,
        owner_name: get(row, "owner_name")?,
        class: class_from_name(&get::<String>(row, "class")?)?,
        current_version: get(row, "current_version")?,
        versions: Vec::new(),
        play: play_from_row(row)?,
        profile: BotProfile {
            description: get(row, "description")?,
            author: get(row, "author")?,
            source_url: get(row, "source_url")?,
        },
    })
}

pub(crate) fn version_from_row(row: &AnyRow) -> Result<BotVersion> {
    Ok(BotVersion {
        version: get(row, "version")?,
        kind: BotKind::from_name(&get::<String>(row, "kind")?)?,
        spec: get(row, "spec")?,
        digest: get(row, "digest")?,
        created_ms: get(row, "created_ms")?,
    })
}

/// What queueing a bot once (`ladder enqueue`) and activating it for
/// continuous play (`ladder bot activate`) both require: `owner` owns the bot,
/// a season runs, the bot's class is open, and the owner's available balance
/// covers `stake`. An owner without a ledger account is corrupt state in both.
///
/// With `row_locks` (PostgreSQL) the bot's row is locked first: enqueueing and
/// activating each read the other's state (the queue, the bot's play) and then
/// write their own, so without the lock both could pass their checks at once
/// and leave one bot both queued and active (write skew). SQLite's write
/// transaction already holds the whole database.
pub(crate) async fn stake_precondition_tx(
    conn: &mut AnyConnection,
    row_locks: bool,
    owner: &User,
    bot_name: &str,
    stake: i64,
) -> Result<(Bot, Season)> {
    if row_locks {
        sqlx::query("SELECT id FROM bots WHERE name = $1 FOR UPDATE")
            .bind(bot_name.to_owned())
            .fetch_optional(&mut *conn)
            .await?;
    }
    let bot = load_own_bot(conn, owner, bot_name).await?;
    let season = running_season_tx(conn).await?;
    let class = bot.class.name();
    let open = sqlx::query("SELECT open FROM classes WHERE name = $1")
        .bind(class)
        .fetch_optional(&mut *conn)
        .await?
        .map(|row| get::<i64>(&row, "open"))
        .transpose()?;
    if open != Some(1) {
        return Err(LadderError::Invalid(format!(
            "class {class} is closed for ranked play"
        )));
    }
    let account = load_account(conn, &owner_account(&owner.id))
        .await?
        .ok_or_else(|| {
            LadderError::corrupt(format!("owner {} has no ledger account", owner.name))
        })?;
    if account.available() < stake {
        return Err(LadderError::InsufficientCredits(format!(
            "{} has {} credits available, the stake is {stake}",
            owner.name,
            account.available()
        )));
    }
    Ok((bot, season))
}
