//! Bots' logs of ranked matches, kept for their owners (the published replay
//! carries none).

use sqlx::Row;

use super::Store;
use crate::error::{LadderError, Result};
use duel_ladder_core::model::{ExchangeLog, SideLogs};

impl Store {
    /// Keeps one side's logs of a match (replacing those of an earlier run of it).
    pub async fn keep_logs(
        &self,
        match_id: &str,
        side: duel_rules::Side,
        owner_id: &str,
        logs: &[ExchangeLog],
    ) -> Result<()> {
        let json = serde_json::to_string(logs)
            .map_err(|error| LadderError::corrupt(format!("cannot encode logs: {error}")))?;
        let side = side.name().to_owned();
        sqlx::query("DELETE FROM match_logs WHERE match_id = $1 AND side = $2")
            .bind(match_id.to_owned())
            .bind(side.clone())
            .execute(&mut *self.writer().await?)
            .await?;
        sqlx::query(
            "INSERT INTO match_logs (match_id, side, owner_id, logs) VALUES ($1, $2, $3, $4)",
        )
        .bind(match_id.to_owned())
        .bind(side)
        .bind(owner_id.to_owned())
        .bind(json)
        .execute(&mut *self.writer().await?)
        .await?;
        Ok(())
    }

    /// The logs kept for a match, side `a` first (sides that logged nothing have none).
    pub async fn match_logs(&self, match_id: &str) -> Result<Vec<SideLogs>> {
        let rows = sqlx::query(
            "SELECT side, owner_id, logs FROM match_logs WHERE match_id = $1 ORDER BY side",
        )
        .bind(match_id.to_owned())
        .fetch_all(&mut *self.writer().await?)
        .await?;
        rows.iter()
            .map(|row| {
                let side: String = row.try_get("side")?;
                let side = match side.as_str() {
                    "a" => duel_rules::Side::A,
                    "b" => duel_rules::Side::B,
                    other => return Err(LadderError::corrupt(format!("log side {other:?}"))),
                };
                let text: String = row.try_get("logs")?;
                let exchanges: Vec<ExchangeLog> = serde_json::from_str(&text).map_err(|error| {
                    LadderError::corrupt(format!("stored logs of {match_id}: {error}"))
                })?;
                Ok(SideLogs {
                    side,
                    owner_id: row.try_get("owner_id")?,
                    exchanges,
                })
            })
            .collect()
    }
}
