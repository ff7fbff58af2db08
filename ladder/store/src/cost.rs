//! What a win cost: each bot's model tokens, dollars and lost decisions over a
//! season's settled matches in one class (summed at settlement into its
//! ratings row, migration 0010), and the standings of the models that the
//! replays say were called (summed at settlement by season, class, model and
//! bot, migration 0012). What an owner declares about its bot counts for
//! nothing here: only what was recorded at settlement. A class's tables are
//! kept in memory while its ratings rows say nothing changed
//! ([`crate::kept`]).

use std::sync::Arc;

use duel_rules::WeightClass;
use serde::Serialize;
use sqlx::any::AnyRow;

use super::{Reads, get};
use crate::error::Result;
use duel_ladder_core::model::Season;

/// One bot's spend over a season's settled matches in its class.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CostLine {
    pub bot: String,
    pub owner: String,
    /// The bot's rating, deviation and rating − 2·RD in the season.
    pub rating: f64,
    pub deviation: f64,
    pub conservative: f64,
    /// Settled matches, rated or not (their stakes settled all the same):
    /// the same as `settled_matches`.
    pub matches: i64,
    /// Of the settled matches.
    pub wins: i64,
    pub draws: i64,
    pub losses: i64,
    pub settled_matches: i64,
    /// Of those, the matches that moved its rating: what the season's table
    /// counts (crate::site, "rated" and "settled").
    pub rated_matches: i64,
    /// Model tokens charged over those matches.
    pub tokens: i64,
    pub tokens_per_match: f64,
    /// `None` without a win.
    pub tokens_per_win: Option<f64>,
    /// US dollars at the prices the replays recorded, over the matches whose
    /// calls all had a price; `unpriced_matches` did not.
    pub cost_usd: f64,
    pub cost_per_match_usd: Option<f64>,
    pub cost_per_win_usd: Option<f64>,
    pub unpriced_matches: i64,
    /// Decisions the bot was asked for (one per exchange).
    pub decisions: i64,
    /// The share of those decisions lost to the fallback, by cause (0 to 1).
    pub fallback_share: FallbackShare,
}

/// Shares of a bot's decisions lost to the fallback, by cause.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct FallbackShare {
    pub timeout: f64,
    pub budget: f64,
    pub fault: f64,
}

/// One model's standing in a class and season: every side of a settled match
/// that called it, whichever bot it was.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModelLine {
    pub model: String,
    /// Distinct bots that called it.
    pub bots: i64,
    /// Sides of settled matches that called it.
    pub matches: i64,
    pub wins: i64,
    pub draws: i64,
    pub losses: i64,
    /// (wins + draws / 2) / matches.
    pub score: f64,
    pub calls: i64,
    pub tokens: i64,
    pub tokens_per_match: f64,
    /// Over the calls that had a price (`unpriced_matches` had none).
    pub cost_usd: f64,
    pub cost_per_win_usd: Option<f64>,
    pub unpriced_matches: i64,
}

fn per(total: f64, count: i64) -> Option<f64> {
    (count > 0).then(|| total / count as f64)
}

/// A class's spend in a season: its bots' lines, the cheapest per match
/// first (then the best rated), and its models' lines, the best score first.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClassSpend {
    pub bots: Vec<CostLine>,
    pub models: Vec<ModelLine>,
}

/// What a class's ratings rows add up to: every write that moves its spend
/// table moves this. Settlement adds to `settled` (and writes the model sums
/// in the same transaction); the fit and settlement move ratings and
/// deviations, whose sums change with them. Bot and owner names never change.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct SpendFingerprint {
    bots: i64,
    settled: i64,
    games: i64,
    /// Compared bit for bit: a sum that moves in its last bit because the
    /// plan summed in another order costs one needless reload, no more.
    rating_bits: u64,
    deviation_bits: u64,
}

impl Reads {
    /// `class`'s spend over `season`'s settled matches: read from the
    /// database when its ratings rows moved since the last read, from memory
    /// otherwise.
    pub async fn class_spend(
        &self,
        season: &Season,
        class: WeightClass,
    ) -> Result<Arc<ClassSpend>> {
        // At 10,000 bots a class's table is 3,333 rows joined to their names
        // plus the class's model sums; the fingerprint is one aggregate over
        // its ratings rows, no join.
        let fingerprint = self.spend_fingerprint(season, class).await?;
        self.store
            .kept()
            .spend
            .get_or_read((season.id, class), fingerprint, async {
                Ok(ClassSpend {
                    bots: self.read_cost_lines(season, class).await?,
                    models: self.read_model_lines(season, class).await?,
                })
            })
            .await
    }

    /// Each bot's spend in `class` over `season`'s settled matches, the
    /// cheapest per match first (then the best rated).
    pub async fn cost_lines(&self, season: &Season, class: WeightClass) -> Result<Vec<CostLine>> {
        Ok(self.class_spend(season, class).await?.bots.clone())
    }

    /// The models called in `class` over `season`'s settled matches, the
    /// best score first.
    pub async fn model_lines(&self, season: &Season, class: WeightClass) -> Result<Vec<ModelLine>> {
        Ok(self.class_spend(season, class).await?.models.clone())
    }

    async fn spend_fingerprint(
        &self,
        season: &Season,
        class: WeightClass,
    ) -> Result<SpendFingerprint> {
        let row = sqlx::query(
            "SELECT COUNT(*) AS bots, CAST(COALESCE(SUM(settled), 0) AS BIGINT) AS settled, \
             CAST(COALESCE(SUM(games), 0) AS BIGINT) AS games, \
             CAST(COALESCE(SUM(rating), 0) AS DOUBLE PRECISION) AS rating_sum, \
             CAST(COALESCE(SUM(deviation), 0) AS DOUBLE PRECISION) AS deviation_sum \
             FROM ratings WHERE season_id = $1 AND class = $2 AND settled > 0",
        )
        .bind(season.id)
        .bind(class.name())
        .fetch_one(self.store.read_pool())
        .await?;
        Ok(SpendFingerprint {
            bots: get(&row, "bots")?,
            settled: get(&row, "settled")?,
            games: get(&row, "games")?,
            rating_bits: get::<f64>(&row, "rating_sum")?.to_bits(),
            deviation_bits: get::<f64>(&row, "deviation_sum")?.to_bits(),
        })
    }

    async fn read_cost_lines(&self, season: &Season, class: WeightClass) -> Result<Vec<CostLine>> {
        // Settlement keeps each bot's season sums in its ratings row
        // (settle::record_spend, migration 0010): one row per bot, never a
        // pass over the season's matches.
        let sql = "SELECT b.name AS bot_name, u.name AS owner_name, r.rating, r.deviation, \
             r.settled AS matches, r.games AS rated, r.settled_wins AS wins, r.settled_draws AS draws, \
             r.settled_losses AS losses, r.tokens, r.cost_usd AS cost, r.unpriced, \
             r.priced_wins, r.decisions, r.fallback_timeout AS f_timeout, \
             r.fallback_budget AS f_budget, r.fallback_fault AS f_fault \
             FROM ratings r JOIN bots b ON b.id = r.bot_id JOIN users u ON u.id = b.owner_id \
             WHERE r.season_id = $1 AND r.class = $2 AND r.settled > 0";
        let rows = sqlx::query(sql)
            .bind(season.id)
            .bind(class.name())
            .fetch_all(self.store.read_pool())
            .await?;
        let mut lines = rows.iter().map(cost_line).collect::<Result<Vec<_>>>()?;
        lines.sort_by(|x, y| {
            x.tokens_per_match
                .total_cmp(&y.tokens_per_match)
                .then(y.conservative.total_cmp(&x.conservative))
                .then_with(|| x.bot.cmp(&y.bot))
        });
        Ok(lines)
    }

    async fn read_model_lines(
        &self,
        season: &Season,
        class: WeightClass,
    ) -> Result<Vec<ModelLine>> {
        // Settlement keeps each bot's sums by model (settle::record_usage,
        // migration 0012): a few rows per model, never a pass over the
        // season's matches.
        let rows = sqlx::query(
            "SELECT model, COUNT(*) AS bots, CAST(SUM(matches) AS BIGINT) AS matches, \
             CAST(SUM(wins) AS BIGINT) AS wins, CAST(SUM(draws) AS BIGINT) AS draws, \
             CAST(SUM(calls) AS BIGINT) AS calls, CAST(SUM(tokens) AS BIGINT) AS tokens, \
             CAST(SUM(cost_usd) AS DOUBLE PRECISION) AS cost, \
             CAST(SUM(unpriced) AS BIGINT) AS unpriced, CAST(SUM(priced_wins) AS BIGINT) AS priced_wins \
             FROM model_spend WHERE season_id = $1 AND class = $2 \
             GROUP BY model",
        )
        .bind(season.id)
        .bind(class.name())
        .fetch_all(self.store.read_pool())
        .await?;
        let mut lines = rows.iter().map(model_line).collect::<Result<Vec<_>>>()?;
        lines.sort_by(|x, y| {
            y.score
                .total_cmp(&x.score)
                .then(y.matches.cmp(&x.matches))
                .then_with(|| x.model.cmp(&y.model))
        });
        Ok(lines)
    }
}

fn cost_line(row: &AnyRow) -> Result<CostLine> {
    let rating: f64 = get(row, "rating")?;
    let deviation: f64 = get(row, "deviation")?;
    let matches: i64 = get(row, "matches")?;
    let wins: i64 = get(row, "wins")?;
    let tokens: i64 = get(row, "tokens")?;
    let cost_usd: f64 = get(row, "cost")?;
    let unpriced: i64 = get(row, "unpriced")?;
    let decisions: i64 = get(row, "decisions")?;
    let share = |column: &str| -> Result<f64> {
        Ok(per(get::<i64>(row, column)? as f64, decisions).unwrap_or(0.0))
    };
    Ok(CostLine {
        bot: get(row, "bot_name")?,
        owner: get(row, "owner_name")?,
        rating,
        deviation,
        conservative: rating - duel_ladder_core::limits::CONSERVATIVE_DEVIATIONS * deviation,
        matches,
        wins,
        draws: get(row, "draws")?,
        losses: get(row, "losses")?,
        settled_matches: matches,
        rated_matches: get(row, "rated")?,
        tokens,
        tokens_per_match: per(tokens as f64, matches).unwrap_or(0.0),
        tokens_per_win: per(tokens as f64, wins),
        cost_usd,
        cost_per_match_usd: per(cost_usd, matches - unpriced),
        cost_per_win_usd: per(cost_usd, get(row, "priced_wins")?),
        unpriced_matches: unpriced,
        decisions,
        fallback_share: FallbackShare {
            timeout: share("f_timeout")?,
            budget: share("f_budget")?,
            fault: share("f_fault")?,
        },
    })
}

fn model_line(row: &AnyRow) -> Result<ModelLine> {
    let matches: i64 = get(row, "matches")?;
    let wins: i64 = get(row, "wins")?;
    let draws: i64 = get(row, "draws")?;
    let tokens: i64 = get(row, "tokens")?;
    let cost_usd: f64 = get(row, "cost")?;
    Ok(ModelLine {
        model: get(row, "model")?,
        bots: get(row, "bots")?,
        matches,
        wins,
        draws,
        losses: matches - wins - draws,
        score: per(wins as f64 + draws as f64 / 2.0, matches).unwrap_or(0.0),
        calls: get(row, "calls")?,
        tokens,
        tokens_per_match: per(tokens as f64, matches).unwrap_or(0.0),
        cost_usd,
        cost_per_win_usd: per(cost_usd, get(row, "priced_wins")?),
        unpriced_matches: get(row, "unpriced")?,
    })
}
