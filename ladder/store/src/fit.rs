//! The season fit behind the standings: a class's rated games of the running
//! season, read at once and fitted by [`duel_ladder_core::rating::season_fit`],
//! written back to the bots' ratings rows (docs/RULES.md, "Standings: one fit
//! of the season").

use std::collections::HashMap;

use sqlx::AnyConnection;
use sqlx::any::AnyRow;

use super::rows::active_season_on;
use super::script::{Arg, Script, placeholder_rows};
use super::{Store, get, write_tx};
use crate::error::{LadderError, Result};
use crate::limits::FIT_WRITE_ROWS;
use duel_ladder_core::rating::{FitGame, Rating, Score, season_fit};
use duel_rules::WeightClass;

/// What one fit read and wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FitReport {
    /// Bots of the class with a ratings row in the season.
    pub bots: usize,
    /// Rated games the fit stood on.
    pub games: usize,
    /// Ratings rows it wrote (bots with at least one rated game).
    pub written: usize,
    /// Fits solved without locks and thrown away because a rated game
    /// settled before they could be written.
    pub stale: u32,
    /// Whether the fit was solved with the class's ratings rows locked
    /// ([`Store::fit_season_locked`]).
    pub locked: bool,
}

/// A class's fit solved from a read that held no locks: written by
/// [`Store::write_season_fit`] only if no rated game settled since the read.
#[derive(Clone, Debug, PartialEq)]
pub struct SolvedFit {
    season_id: i64,
    class: String,
    /// The class's rated games (the sum of its ratings rows' `games`) when
    /// the read began: settlement adds to it in the transaction that rates a
    /// game, so an equal sum under the locks means the same games.
    rated_games: i64,
    bots: usize,
    games: usize,
    moved: Vec<(String, Rating)>,
}

impl Store {
    /// Fits the running season's ratings of `class` from all its rated
    /// games, with the class's ratings rows locked from the read of the games
    /// to the write: settlements of the class wait meanwhile. What the wave
    /// timer falls back to when fits solved without locks
    /// ([`Store::solve_season_fit`]) keep going stale. FAILED_PRECONDITION
    /// when no season runs.
    pub async fn fit_season_locked(&self, class: WeightClass) -> Result<FitReport> {
        let row_locks = self.dialect().row_locks();
        write_tx!(self, |conn| async {
            let season = active_season_on(conn)
                .await?
                .ok_or_else(|| LadderError::Precondition("no season is running".to_owned()))?;
            let report = fit_tx(conn, row_locks, season.id, class.name()).await?;
            Ok(FitReport {
                locked: true,
                ..report
            })
        })
    }

    /// Reads the running season's rated games of `class` on a reader
    /// connection, holding no lock, and solves their fit.
    pub async fn solve_season_fit(&self, class: WeightClass) -> Result<SolvedFit> {
        let mut conn = self.read_pool().acquire().await?;
        let season = active_season_on(&mut conn)
            .await?
            .ok_or_else(|| LadderError::Precondition("no season is running".to_owned()))?;
        let inputs = read_fit_inputs(&mut conn, false, season.id, class.name()).await?;
        drop(conn);
        Ok(SolvedFit {
            season_id: season.id,
            class: class.name().to_owned(),
            rated_games: inputs.rated_games,
            bots: inputs.bots.len(),
            games: inputs.games.len(),
            moved: inputs.solve(),
        })
    }

    /// Writes a fit solved by [`Store::solve_season_fit`] if the class's
    /// rated games are still those it was solved from; `None` (nothing
    /// written) once another rated game settled, or the season ended.
    pub async fn write_season_fit(&self, solved: &SolvedFit) -> Result<Option<FitReport>> {
        let row_locks = self.dialect().row_locks();
        write_tx!(self, |conn| async {
            let running = active_season_on(conn).await?;
            if running.is_none_or(|season| season.id != solved.season_id) {
                return Ok(None);
            }
            // Locked in bot-id order, as settlement takes them.
            let rated_games =
                rated_games_tx(conn, row_locks, solved.season_id, &solved.class).await?;
            if rated_games != solved.rated_games {
                return Ok(None);
            }
            write_fit(conn, solved.season_id, &solved.moved).await?;
            Ok(Some(FitReport {
                bots: solved.bots,
                games: solved.games,
                written: solved.moved.len(),
                stale: 0,
                locked: false,
            }))
        })
    }
}

impl Store {
    /// When the latest settlement finished, if any did: a probe off the
    /// `matches_finished` index that tells the wave timer whether anything
    /// was settled since its last fit.
    pub async fn latest_settlement_ms(&self) -> Result<Option<i64>> {
        let row = sqlx::query(
            "SELECT finished_ms FROM matches WHERE state = 'settled' \
             ORDER BY finished_ms DESC LIMIT 1",
        )
        .fetch_optional(&mut *self.writer().await?)
        .await?;
        row.map(|row| get::<Option<i64>>(&row, "finished_ms"))
            .transpose()
            .map(Option::flatten)
    }
}

/// The fit of every class of a season (before its standings freeze).
pub(crate) async fn fit_every_class_tx(
    conn: &mut AnyConnection,
    row_locks: bool,
    season_id: i64,
) -> Result<()> {
    let classes =
        sqlx::query("SELECT DISTINCT class FROM ratings WHERE season_id = $1 ORDER BY class")
            .bind(season_id)
            .fetch_all(&mut *conn)
            .await?;
    for row in &classes {
        let class: String = get(row, "class")?;
        fit_tx(conn, row_locks, season_id, &class).await?;
    }
    Ok(())
}

/// The fit of one class of one season, inside the caller's transaction.
/// Where the backend has row locks, the class's ratings rows are locked in
/// bot-id order first (the order settlement takes them in), so no settlement
/// of the class commits between the read of the games and the write.
pub(crate) async fn fit_tx(
    conn: &mut AnyConnection,
    row_locks: bool,
    season_id: i64,
    class: &str,
) -> Result<FitReport> {
    let inputs = read_fit_inputs(conn, row_locks, season_id, class).await?;
    let moved = inputs.solve();
    write_fit(conn, season_id, &moved).await?;
    Ok(FitReport {
        bots: inputs.bots.len(),
        games: inputs.games.len(),
        written: moved.len(),
        stale: 0,
        locked: row_locks,
    })
}

/// What a fit stands on: the class's bots by id with their starts, and its
/// rated games in the order they settled.
struct FitInputs {
    bots: Vec<String>,
    starts: Vec<Rating>,
    games: Vec<FitGame>,
    /// The sum of the ratings rows' `games` as read.
    rated_games: i64,
}

impl FitInputs {
    /// The fitted ratings of the bots that played (a bot without a rated
    /// game keeps its row as it is).
    fn solve(&self) -> Vec<(String, Rating)> {
        let fitted = season_fit(&self.starts, &self.games);
        let mut played = vec![false; self.bots.len()];
        for game in &self.games {
            played[game.a] = true;
            played[game.b] = true;
        }
        self.bots
            .iter()
            .zip(fitted)
            .zip(played)
            .filter(|(_, played)| *played)
            .map(|((bot, rating), _)| (bot.clone(), rating))
            .collect()
    }
}

/// The class's ratings rows of the season in bot-id order, locked where the
/// backend has row locks (PostgreSQL takes them in that order, so two fits
/// never wait on each other crosswise).
async fn class_ratings_rows(
    conn: &mut AnyConnection,
    columns: &'static str,
    row_locks: bool,
    season_id: i64,
    class: &str,
) -> Result<Vec<AnyRow>> {
    let locks = if row_locks { " FOR UPDATE" } else { "" };
    Ok(sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {columns} FROM ratings WHERE season_id = $1 AND class = $2 ORDER BY bot_id{locks}"
    )))
    .bind(season_id)
    .bind(class.to_owned())
    .fetch_all(&mut *conn)
    .await?)
}

/// The class's rated games so far, as the sum of its ratings rows' `games`,
/// with the rows locked in bot-id order where the backend has row locks.
async fn rated_games_tx(
    conn: &mut AnyConnection,
    row_locks: bool,
    season_id: i64,
    class: &str,
) -> Result<i64> {
    let rows = class_ratings_rows(conn, "games", row_locks, season_id, class).await?;
    let mut sum: i64 = 0;
    for row in &rows {
        sum = sum.saturating_add(get::<i64>(row, "games")?);
    }
    Ok(sum)
}

async fn read_fit_inputs(
    conn: &mut AnyConnection,
    row_locks: bool,
    season_id: i64,
    class: &str,
) -> Result<FitInputs> {
    // Bots by id and games in the order they settled: the same season gives
    // the same fit to the last bit, on either backend.
    let rating_rows = class_ratings_rows(
        conn,
        "bot_id, start_rating, start_deviation, volatility, games",
        row_locks,
        season_id,
        class,
    )
    .await?;
    let mut bots = Vec::with_capacity(rating_rows.len());
    let mut starts = Vec::with_capacity(rating_rows.len());
    let mut rated_games: i64 = 0;
    for row in &rating_rows {
        bots.push(get::<String>(row, "bot_id")?);
        starts.push(Rating {
            rating: get(row, "start_rating")?,
            deviation: get(row, "start_deviation")?,
            volatility: get(row, "volatility")?,
        });
        rated_games = rated_games.saturating_add(get::<i64>(row, "games")?);
    }
    let index: HashMap<&str, usize> = bots
        .iter()
        .enumerate()
        .map(|(at, bot)| (bot.as_str(), at))
        .collect();
    // Rated: settled with a row in the rating history (settlement writes one
    // per side of every match whose plan moved ratings, and only then).
    let game_rows = sqlx::query(
        "SELECT m.bot_a, m.bot_b, m.winner FROM matches m \
         WHERE m.season_id = $1 AND m.class = $2 AND m.state = 'settled' AND m.not_rated IS NULL \
         AND EXISTS (SELECT 1 FROM rating_history h WHERE h.bot_id = m.bot_a AND h.match_id = m.id) \
         ORDER BY m.finished_ms, m.id",
    )
    .bind(season_id)
    .bind(class.to_owned())
    .fetch_all(&mut *conn)
    .await?;
    let mut games = Vec::with_capacity(game_rows.len());
    for row in &game_rows {
        let score_a = match get::<Option<String>>(row, "winner")?.as_deref() {
            Some("a") => Score::Win,
            Some("b") => Score::Loss,
            Some("draw") => Score::Draw,
            other => {
                return Err(LadderError::corrupt(format!(
                    "a rated match has winner {other:?}"
                )));
            }
        };
        let (bot_a, bot_b) = (get::<String>(row, "bot_a")?, get::<String>(row, "bot_b")?);
        // A rated match's bots have rows in its season; a bot whose row is of
        // another class (it never changes class) would be a corrupt row.
        let (Some(&a), Some(&b)) = (index.get(bot_a.as_str()), index.get(bot_b.as_str())) else {
            return Err(LadderError::corrupt(format!(
                "a rated match of {bot_a} and {bot_b} has no ratings rows in its class"
            )));
        };
        games.push(FitGame { a, b, score_a });
    }
    Ok(FitInputs {
        bots,
        starts,
        games,
        rated_games,
    })
}

/// Writes the fitted ratings, [`FIT_WRITE_ROWS`] rows a statement.
async fn write_fit(
    conn: &mut AnyConnection,
    season_id: i64,
    moved: &[(String, Rating)],
) -> Result<()> {
    let mut writes = Script::default();
    for chunk in moved.chunks(FIT_WRITE_ROWS) {
        let sql = format!(
            "WITH d(d_season, d_bot, d_rating, d_deviation) AS (VALUES {}) \
             UPDATE ratings SET rating = d.d_rating, deviation = d.d_deviation \
             FROM d WHERE ratings.season_id = d.d_season AND ratings.bot_id = d.d_bot",
            placeholder_rows(chunk.len(), 4)
        );
        let mut args = Vec::with_capacity(chunk.len() * 4);
        for (bot, rating) in chunk {
            args.extend([
                Arg::from(season_id),
                Arg::from(bot.as_str()),
                Arg::from(rating.rating),
                Arg::from(rating.deviation),
            ]);
        }
        writes.push_expecting(sql, args, chunk.len(), "ratings");
    }
    writes.run(conn, false).await?;
    Ok(())
}
