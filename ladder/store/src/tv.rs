//! Duel TV's one read: the latest settled ranked matches, with their bots'
//! names, their season and their ratings, newest first.

use duel_rules::WeightClass;

use super::{Reads, get};
use crate::error::Result;
use duel_ladder_core::model::{Winner, class_from_name, winner_from_name};

/// A settled ranked match as Duel TV chooses among them.
#[derive(Clone, Debug, PartialEq)]
pub struct SettledMatch {
    pub id: String,
    pub class: WeightClass,
    pub season: String,
    /// The bots' names, side a then side b.
    pub names: [String; 2],
    pub winner: Winner,
    /// Each bot's rating in the match's season before the match (its last
    /// rated match before this one, from `rating_history`), else as it is now
    /// (its first match of the season: the starting rating is not kept);
    /// `None` when the bot has none there.
    pub ratings: [Option<f64>; 2],
    /// Their rating deviations at the same moments.
    pub deviations: [Option<f64>; 2],
    /// Where the worker published the replay (its id is the match id).
    pub replay_path: Option<String>,
    pub accepted_ms: i64,
}

impl Reads {
    /// The `limit` settled matches accepted last, newest first. Ordered by
    /// acceptance, not settlement, so that the `(state, accepted_ms)` index
    /// answers it without a sort however many matches there are (matches
    /// settle in acceptance order but for re-runs); matches of one wave
    /// (accepted at the same millisecond) come in the index's order.
    pub async fn latest_settled(&self, limit: usize) -> Result<Vec<SettledMatch>> {
        let rows = sqlx::query(
            "SELECT m.id, m.class, m.winner, m.replay_path, m.accepted_ms, s.name AS season, \
             ba.name AS name_a, bb.name AS name_b, \
             COALESCE((SELECT h.rating FROM rating_history h WHERE h.bot_id = m.bot_a \
                 AND h.season_id = m.season_id AND h.at_ms < m.finished_ms \
                 ORDER BY h.at_ms DESC LIMIT 1), ra.rating) AS rating_a, \
             COALESCE((SELECT h.rating FROM rating_history h WHERE h.bot_id = m.bot_b \
                 AND h.season_id = m.season_id AND h.at_ms < m.finished_ms \
                 ORDER BY h.at_ms DESC LIMIT 1), rb.rating) AS rating_b, \
             COALESCE((SELECT h.deviation FROM rating_history h WHERE h.bot_id = m.bot_a \
                 AND h.season_id = m.season_id AND h.at_ms < m.finished_ms \
                 ORDER BY h.at_ms DESC LIMIT 1), ra.deviation) AS deviation_a, \
             COALESCE((SELECT h.deviation FROM rating_history h WHERE h.bot_id = m.bot_b \
                 AND h.season_id = m.season_id AND h.at_ms < m.finished_ms \
                 ORDER BY h.at_ms DESC LIMIT 1), rb.deviation) AS deviation_b \
             FROM matches m \
             JOIN bots ba ON ba.id = m.bot_a JOIN bots bb ON bb.id = m.bot_b \
             JOIN seasons s ON s.id = m.season_id \
             LEFT JOIN ratings ra ON ra.season_id = m.season_id AND ra.bot_id = m.bot_a \
             LEFT JOIN ratings rb ON rb.season_id = m.season_id AND rb.bot_id = m.bot_b \
             WHERE m.state = 'settled' ORDER BY m.accepted_ms DESC LIMIT $1",
        )
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(self.store.read_pool())
        .await?;
        rows.iter()
            .map(|row| {
                Ok(SettledMatch {
                    id: get(row, "id")?,
                    class: class_from_name(&get::<String>(row, "class")?)?,
                    season: get(row, "season")?,
                    names: [get(row, "name_a")?, get(row, "name_b")?],
                    winner: winner_from_name(
                        &get::<Option<String>>(row, "winner")?.unwrap_or_default(),
                    )?,
                    ratings: [get(row, "rating_a")?, get(row, "rating_b")?],
                    deviations: [get(row, "deviation_a")?, get(row, "deviation_b")?],
                    replay_path: get(row, "replay_path")?,
                    accepted_ms: get(row, "accepted_ms")?,
                })
            })
            .collect()
    }
}
