//! The season fit behind the standings: a class's rated games of the running
//! season, read at once and fitted by [`duel_ladder_core::rating::season_fit`],
//! written back to the bots' ratings rows (docs/RULES.md, "Standings: one fit
//! of the season").

use std::collections::HashMap;

use sqlx::AnyConnection;

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
}

impl Store {
    /// Fits the running season's ratings of `class` from all its rated
    /// games. The wave timer runs it; ending a season runs it for every class
    /// before the standings freeze. FAILED_PRECONDITION when no season runs.
    pub async fn fit_season(&self, class: WeightClass) -> Result<FitReport> {
        let row_locks = self.dialect().row_locks();
        write_tx!(self, |conn| async {
            let season = super::seasons::active_season_tx(conn)
                .await?
                .ok_or_else(|| LadderError::Precondition("no season is running".to_owned()))?;
            fit_tx(conn, row_locks, season.id, class.name()).await
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
    // Bots by id and games in the order they settled: the same season gives
    // the same fit to the last bit, on either backend.
    let sql = if row_locks {
        "SELECT bot_id, start_rating, start_deviation, volatility FROM ratings \
         WHERE season_id = $1 AND class = $2 ORDER BY bot_id FOR UPDATE"
    } else {
        "SELECT bot_id, start_rating, start_deviation, volatility FROM ratings \
         WHERE season_id = $1 AND class = $2 ORDER BY bot_id"
    };
    let rating_rows = sqlx::query(sql)
        .bind(season_id)
        .bind(class.to_owned())
        .fetch_all(&mut *conn)
        .await?;
    let mut bots = Vec::with_capacity(rating_rows.len());
    let mut starts = Vec::with_capacity(rating_rows.len());
    for row in &rating_rows {
        bots.push(get::<String>(row, "bot_id")?);
        starts.push(Rating {
            rating: get(row, "start_rating")?,
            deviation: get(row, "start_deviation")?,
            volatility: get(row, "volatility")?,
        });
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
    let fitted = season_fit(&starts, &games);
    let mut played = vec![false; bots.len()];
    for game in &games {
        played[game.a] = true;
        played[game.b] = true;
    }
    let moved: Vec<(&str, Rating)> = bots
        .iter()
        .zip(&fitted)
        .zip(&played)
        .filter(|(_, played)| **played)
        .map(|((bot, rating), _)| (bot.as_str(), *rating))
        .collect();
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
                Arg::from(*bot),
                Arg::from(rating.rating),
                Arg::from(rating.deviation),
            ]);
        }
        writes.push_expecting(sql, args, chunk.len(), "ratings");
    }
    writes.run(conn, false).await?;
    Ok(FitReport {
        bots: bots.len(),
        games: games.len(),
        written: moved.len(),
    })
}
