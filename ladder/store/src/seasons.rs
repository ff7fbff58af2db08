//! Seasons, per-season ratings, and standings (live while a season runs,
//! frozen into their own table when it ends).

use duel_rules::WeightClass;
use sqlx::AnyConnection;
use sqlx::any::AnyRow;

use super::rows::{active_season_on, season_from_row};
use super::{Store, get, is_unique_violation, write_tx};
use crate::error::{LadderError, Result};
use crate::limits::MAX_LIST_ROWS;
use crate::params::Params;
use duel_ladder_core::model::{Season, Standing, check_name};
use duel_ladder_core::rating::{self, Rating};

/// Which season a reader asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SeasonChoice {
    /// The running season, else the one that ended last.
    Current,
    Id(i64),
    Name(String),
}

impl SeasonChoice {
    /// `--season` as typed: a number is an id, anything else a name.
    pub fn parse(text: &str) -> SeasonChoice {
        let text = text.trim();
        match text.parse::<i64>() {
            Ok(id) => SeasonChoice::Id(id),
            Err(_) if text.is_empty() => SeasonChoice::Current,
            Err(_) => SeasonChoice::Name(text.to_owned()),
        }
    }
}

/// The seasons, oldest first, read on `conn`.
pub(crate) async fn seasons_on(conn: &mut AnyConnection) -> Result<Vec<Season>> {
    let rows = sqlx::query("SELECT * FROM seasons ORDER BY id LIMIT $1")
        .bind(MAX_LIST_ROWS)
        .fetch_all(&mut *conn)
        .await?;
    rows.iter().map(season_from_row).collect()
}

pub(crate) async fn season_on(conn: &mut AnyConnection, id: i64) -> Result<Season> {
    let row = sqlx::query("SELECT * FROM seasons WHERE id = $1")
        .bind(id)
        .fetch_optional(&mut *conn)
        .await?
        .ok_or_else(|| LadderError::NotFound(format!("season {id}")))?;
    season_from_row(&row)
}

pub(crate) async fn season_named_on(conn: &mut AnyConnection, name: &str) -> Result<Season> {
    let row = sqlx::query("SELECT * FROM seasons WHERE name = $1")
        .bind(name.to_owned())
        .fetch_optional(&mut *conn)
        .await?
        .ok_or_else(|| LadderError::NotFound(format!("season {name}")))?;
    season_from_row(&row)
}

pub(crate) async fn last_ended_season_on(conn: &mut AnyConnection) -> Result<Option<Season>> {
    let row = sqlx::query(
        "SELECT * FROM seasons WHERE ended_ms IS NOT NULL ORDER BY ended_ms DESC, id DESC LIMIT 1",
    )
    .fetch_optional(&mut *conn)
    .await?;
    row.as_ref().map(season_from_row).transpose()
}

/// The season `choice` names, read on `conn` (see [`Store::chosen_season`]).
pub(crate) async fn chosen_season_on(
    conn: &mut AnyConnection,
    choice: &SeasonChoice,
) -> Result<Season> {
    match choice {
        SeasonChoice::Id(id) => season_on(conn, *id).await,
        SeasonChoice::Name(name) => season_named_on(conn, name).await,
        SeasonChoice::Current => match active_season_on(conn).await? {
            Some(season) => Ok(season),
            None => last_ended_season_on(conn).await?.ok_or_else(|| {
                LadderError::NotFound(
                    "no season yet: an operator starts one with `ladder season start NAME`"
                        .to_owned(),
                )
            }),
        },
    }
}

/// Creates the bot's rating row for a season if missing: a soft reset of its
/// last frozen standing in an earlier season, or the initial rating.
pub(crate) async fn ensure_rating(
    conn: &mut AnyConnection,
    season_id: i64,
    bot_id: &str,
    class: &str,
) -> Result<()> {
    let exists = sqlx::query("SELECT 1 AS one FROM ratings WHERE season_id = $1 AND bot_id = $2")
        .bind(season_id)
        .bind(bot_id.to_owned())
        .fetch_optional(&mut *conn)
        .await?;
    if exists.is_some() {
        return Ok(());
    }
    let previous = sqlx::query(
        "SELECT rating, deviation, volatility FROM standings WHERE bot_id = $1 AND season_id < $2 \
         ORDER BY season_id DESC LIMIT 1",
    )
    .bind(bot_id.to_owned())
    .bind(season_id)
    .fetch_optional(&mut *conn)
    .await?;
    let start = match previous {
        Some(row) => Rating {
            rating: get(&row, "rating")?,
            deviation: get(&row, "deviation")?,
            volatility: get(&row, "volatility")?,
        }
        .soft_reset(),
        None => rating::INITIAL,
    };
    sqlx::query(
        "INSERT INTO ratings (season_id, bot_id, class, rating, deviation, volatility, start_rating, start_deviation) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (season_id, bot_id) DO NOTHING",
    )
    .bind(season_id)
    .bind(bot_id.to_owned())
    .bind(class.to_owned())
    .bind(start.rating)
    .bind(start.deviation)
    .bind(start.volatility)
    .bind(start.rating)
    .bind(start.deviation)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

async fn start_tx(conn: &mut AnyConnection, name: &str, now: i64) -> Result<Season> {
    if let Some(active) = active_season_on(conn).await? {
        return Err(LadderError::Conflict(format!(
            "season {} is still running; end it first",
            active.name
        )));
    }
    let next: i64 = get(
        &sqlx::query("SELECT COALESCE(MAX(id), 0) + 1 AS next FROM seasons")
            .fetch_one(&mut *conn)
            .await?,
        "next",
    )?;
    let inserted = sqlx::query("INSERT INTO seasons (id, name, started_ms) VALUES ($1, $2, $3)")
        .bind(next)
        .bind(name.to_owned())
        .bind(now)
        .execute(&mut *conn)
        .await;
    match inserted {
        Ok(_) => {}
        Err(error) if is_unique_violation(&error) => {
            return Err(LadderError::Conflict(format!(
                "a season named {name} exists"
            )));
        }
        Err(error) => return Err(error.into()),
    }
    Ok(Season {
        id: next,
        name: name.to_owned(),
        started_ms: now,
        ended_ms: None,
    })
}

const LIVE_STANDINGS: &str = "SELECT r.bot_id, b.name AS bot_name, u.name AS owner_name, r.class, r.rating, \
     r.deviation, r.volatility, r.games, r.wins, r.losses, r.draws \
     FROM ratings r JOIN bots b ON b.id = r.bot_id JOIN users u ON u.id = b.owner_id \
     WHERE r.season_id = $1";

fn live_standings(rows: &[AnyRow]) -> Result<Vec<Standing>> {
    let mut standings = rows
        .iter()
        .map(|row| {
            let rating = Rating {
                rating: get(row, "rating")?,
                deviation: get(row, "deviation")?,
                volatility: get(row, "volatility")?,
            };
            Ok(Standing {
                rank: 0,
                bot_id: get(row, "bot_id")?,
                bot_name: get(row, "bot_name")?,
                owner_name: get(row, "owner_name")?,
                class: duel_ladder_core::model::class_from_name(&get::<String>(row, "class")?)?,
                rating: rating.rating,
                deviation: rating.deviation,
                volatility: rating.volatility,
                conservative: rating.conservative(),
                provisional: rating.is_provisional(),
                games: get(row, "games")?,
                wins: get(row, "wins")?,
                losses: get(row, "losses")?,
                draws: get(row, "draws")?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    standings.sort_by(|x, y| {
        x.class
            .name()
            .cmp(y.class.name())
            .then(y.conservative.total_cmp(&x.conservative))
            .then(x.bot_name.cmp(&y.bot_name))
    });
    let mut previous_class = None;
    let mut rank = 0;
    for standing in &mut standings {
        if previous_class != Some(standing.class) {
            previous_class = Some(standing.class);
            rank = 0;
        }
        rank += 1;
        standing.rank = rank;
    }
    Ok(standings)
}

async fn end_tx(conn: &mut AnyConnection, row_locks: bool, now: i64) -> Result<Season> {
    let mut season = active_season_on(conn)
        .await?
        .ok_or_else(|| LadderError::Precondition("no season is running".to_owned()))?;
    // The frozen table is the fit of every rated game, including those
    // settled since the last wave's fit.
    super::fit::fit_every_class_tx(conn, row_locks, season.id).await?;
    let rows = sqlx::query(LIVE_STANDINGS)
        .bind(season.id)
        .fetch_all(&mut *conn)
        .await?;
    for standing in live_standings(&rows)? {
        sqlx::query(
            "INSERT INTO standings (season_id, bot_id, class, rank, bot_name, owner_name, rating, deviation, \
             volatility, conservative, provisional, games, wins, losses, draws) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
        )
        .bind(season.id)
        .bind(standing.bot_id)
        .bind(standing.class.name())
        .bind(standing.rank)
        .bind(standing.bot_name)
        .bind(standing.owner_name)
        .bind(standing.rating)
        .bind(standing.deviation)
        .bind(standing.volatility)
        .bind(standing.conservative)
        .bind(i64::from(standing.provisional))
        .bind(standing.games)
        .bind(standing.wins)
        .bind(standing.losses)
        .bind(standing.draws)
        .execute(&mut *conn)
        .await?;
    }
    // Continuous play ends with the season.
    deactivate_all_tx(conn).await?;
    sqlx::query("UPDATE seasons SET ended_ms = $1 WHERE id = $2")
        .bind(now)
        .bind(season.id)
        .execute(&mut *conn)
        .await?;
    season.ended_ms = Some(now);
    Ok(season)
}

impl Store {
    pub async fn start_season(&self, name: &str) -> Result<Season> {
        check_name("season", name)?;
        if name.bytes().all(|byte| byte.is_ascii_digit()) {
            return Err(LadderError::Invalid(format!(
                "season name {name:?} is all digits; `--season N` means the season with id N"
            )));
        }
        write_tx!(self, |conn| start_tx(conn, name, self.now()))
    }

    /// Ends the running season and freezes its standings. Matches of that season
    /// still in flight settle their stakes but no longer move its ratings.
    pub async fn end_season(&self) -> Result<Season> {
        let row_locks = self.dialect().row_locks();
        write_tx!(self, |conn| end_tx(conn, row_locks, self.now()))
    }

    pub async fn seasons(&self) -> Result<Vec<Season>> {
        seasons_on(&mut *self.writer().await?).await
    }

    pub async fn season(&self, id: i64) -> Result<Season> {
        season_on(&mut *self.writer().await?, id).await
    }

    pub async fn season_named(&self, name: &str) -> Result<Season> {
        season_named_on(&mut *self.writer().await?, name).await
    }

    /// Standings of a season (the running one if `None`, else the last ended
    /// one), optionally of one class, best conservative rating first. Frozen
    /// once the season ended.
    pub async fn standings(
        &self,
        season_id: Option<i64>,
        class: Option<WeightClass>,
    ) -> Result<(Season, Vec<Standing>)> {
        let choice = season_id.map_or(SeasonChoice::Current, SeasonChoice::Id);
        self.standings_of(&choice, class).await
    }

    /// Standings of the season `choice` names (see [`crate::Reads::chosen_season`]),
    /// sorted per class by rating − 2·RD (the conservative rating), then name.
    pub async fn standings_of(
        &self,
        choice: &SeasonChoice,
        class: Option<WeightClass>,
    ) -> Result<(Season, Vec<Standing>)> {
        let season = chosen_season_on(&mut *self.writer().await?, choice).await?;
        // The class filter only when given (crate::params).
        if season.ended_ms.is_none() {
            let mut params = Params::after(1);
            let class = class.map_or(String::new(), |class| {
                format!("AND r.class = {}", params.placeholder(class.name()))
            });
            let rows = params
                .bind(
                    sqlx::query(sqlx::AssertSqlSafe(format!("{LIVE_STANDINGS} {class}")))
                        .bind(season.id),
                )
                .fetch_all(&mut *self.writer().await?)
                .await?;
            let standings = live_standings(&rows)?;
            return Ok((season, standings));
        }
        let mut params = Params::after(2);
        let class = class.map_or(String::new(), |class| {
            format!("AND class = {}", params.placeholder(class.name()))
        });
        let rows = params
            .bind(
                sqlx::query(sqlx::AssertSqlSafe(format!(
                    "SELECT * FROM standings WHERE season_id = $1 {class} ORDER BY class, rank LIMIT $2"
                )))
                .bind(season.id)
                .bind(MAX_LIST_ROWS),
            )
        .fetch_all(&mut *self.writer().await?)
        .await?;
        let standings = rows
            .iter()
            .map(|row| {
                Ok(Standing {
                    rank: get(row, "rank")?,
                    bot_id: get(row, "bot_id")?,
                    bot_name: get(row, "bot_name")?,
                    owner_name: get(row, "owner_name")?,
                    class: duel_ladder_core::model::class_from_name(&get::<String>(row, "class")?)?,
                    rating: get(row, "rating")?,
                    deviation: get(row, "deviation")?,
                    volatility: get(row, "volatility")?,
                    conservative: get(row, "conservative")?,
                    provisional: get::<i64>(row, "provisional")? != 0,
                    games: get(row, "games")?,
                    wins: get(row, "wins")?,
                    losses: get(row, "losses")?,
                    draws: get(row, "draws")?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok((season, standings))
    }
}

/// Ending a season makes every active or paused bot inactive.
pub(crate) async fn deactivate_all_tx(conn: &mut AnyConnection) -> Result<u64> {
    let done = sqlx::query(
        "UPDATE bots SET active_stake = NULL, active_since = NULL, active_ready_ms = NULL, \
         active_waves = 0, paused_reason = NULL WHERE active_stake IS NOT NULL",
    )
    .execute(&mut *conn)
    .await?;
    Ok(done.rows_affected())
}
