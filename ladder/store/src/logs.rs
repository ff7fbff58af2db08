//! Bots' logs of ranked matches, kept for their owners (the published replay
//! carries none), for a retention period and within a quota per owner
//! (`LogLimits`): past the quota an owner's oldest logs go first.

use sqlx::{AnyConnection, Row};

use super::{Store, get, write_tx};
use crate::error::{LadderError, Result};
use crate::limits::QUOTA_PAGE_ROWS;
use duel_ladder_core::model::{ExchangeLog, SideLogs};

impl Store {
    /// Keeps one side's logs of a match (replacing those of an earlier run of
    /// it), within the owner's quota: its oldest logs go first to make room,
    /// and logs larger than the whole quota are not kept. `false` when not kept.
    pub async fn keep_logs(
        &self,
        match_id: &str,
        side: duel_rules::Side,
        owner_id: &str,
        logs: &[ExchangeLog],
    ) -> Result<bool> {
        let json = serde_json::to_string(logs)
            .map_err(|error| LadderError::corrupt(format!("cannot encode logs: {error}")))?;
        let size = i64::try_from(json.len()).unwrap_or(i64::MAX);
        let quota = i64::try_from(self.log_limits.max_bytes_per_owner).unwrap_or(i64::MAX);
        let now = self.clock().now_ms();
        let kept = size <= quota;
        write_tx!(self, |conn| keep_logs_tx(
            conn,
            LogRow {
                match_id,
                side: side.name(),
                owner_id,
                json: kept.then_some(json.as_str()),
                size,
                now,
            },
            quota
        ))?;
        Ok(kept)
    }

    /// Drops the logs kept longer than the retention period; how many rows went.
    pub async fn prune_logs(&self) -> Result<u64> {
        let cutoff = self.log_limits.cutoff_ms(self.clock().now_ms());
        let done = sqlx::query("DELETE FROM match_logs WHERE kept_ms < $1")
            .bind(cutoff)
            .execute(&mut *self.writer().await?)
            .await?;
        Ok(done.rows_affected())
    }

    /// Bytes of logs kept for `owner_id`.
    pub async fn log_bytes(&self, owner_id: &str) -> Result<i64> {
        owner_log_bytes(&mut *self.writer().await?, owner_id).await
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

/// One side's logs on their way into `match_logs`; `json: None` drops the
/// side's earlier logs and keeps none (they are over the whole quota).
struct LogRow<'a> {
    match_id: &'a str,
    side: &'static str,
    owner_id: &'a str,
    json: Option<&'a str>,
    size: i64,
    now: i64,
}

async fn keep_logs_tx(conn: &mut AnyConnection, row: LogRow<'_>, quota: i64) -> Result<()> {
    sqlx::query("DELETE FROM match_logs WHERE match_id = $1 AND side = $2")
        .bind(row.match_id.to_owned())
        .bind(row.side)
        .execute(&mut *conn)
        .await?;
    let Some(json) = row.json else {
        return Ok(());
    };
    let total = owner_log_bytes(conn, row.owner_id).await?;
    let mut over = total.saturating_add(row.size).saturating_sub(quota);
    // The owner's oldest logs make room, a page of rows at a time (each
    // page is read after the previous one's rows are gone).
    while over > 0 {
        let oldest = sqlx::query(
            "SELECT match_id, side, size_bytes FROM match_logs WHERE owner_id = $1 \
             ORDER BY kept_ms, match_id, side LIMIT $2",
        )
        .bind(row.owner_id.to_owned())
        .bind(QUOTA_PAGE_ROWS)
        .fetch_all(&mut *conn)
        .await?;
        if oldest.is_empty() {
            break;
        }
        for old in &oldest {
            if over <= 0 {
                break;
            }
            sqlx::query("DELETE FROM match_logs WHERE match_id = $1 AND side = $2")
                .bind(get::<String>(old, "match_id")?)
                .bind(get::<String>(old, "side")?)
                .execute(&mut *conn)
                .await?;
            over -= get::<i64>(old, "size_bytes")?;
        }
    }
    sqlx::query(
        "INSERT INTO match_logs (match_id, side, owner_id, logs, kept_ms, size_bytes) \
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(row.match_id.to_owned())
    .bind(row.side)
    .bind(row.owner_id.to_owned())
    .bind(json.to_owned())
    .bind(row.now)
    .bind(row.size)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

async fn owner_log_bytes(conn: &mut AnyConnection, owner_id: &str) -> Result<i64> {
    let row = sqlx::query(
        "SELECT CAST(COALESCE(SUM(size_bytes), 0) AS BIGINT) AS bytes FROM match_logs WHERE owner_id = $1",
    )
    .bind(owner_id.to_owned())
    .fetch_one(&mut *conn)
    .await?;
    get(&row, "bytes")
}
