//! PostgreSQL: for many workers. Claims skip rows other workers hold
//! (`FOR UPDATE SKIP LOCKED`); settlement locks the match row, then both bots'
//! rating rows in bot-id order before reading them.

use super::{ClaimSql, Dialect};

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations/postgres");

#[derive(Clone, Copy, Debug, Default)]
pub struct Postgres;

impl Dialect for Postgres {
    fn name(&self) -> &'static str {
        "postgres"
    }

    fn begin_write(&self) -> &'static str {
        "BEGIN"
    }

    // A batch's statements differ only in their numbers of rows, and each
    // text is planned afresh for its first executions on a connection, which
    // would be most of a batch's time (docs/perf/ladder.md).
    // Every one of them finds its rows by key, so the generic plan is the
    // plan. Sent with `BEGIN` as one simple query, queued before the first
    // statement: no round trip of its own; `LOCAL` ends with the transaction.
    fn begin_settlement(&self) -> &'static str {
        "BEGIN; SET LOCAL plan_cache_mode = force_generic_plan"
    }

    // Each branch locks its own candidate (a lock clause may not apply to a
    // UNION or its inputs, but may to a subquery they read); the one not
    // chosen is released when the statement's transaction ends.
    fn select_claimable(&self) -> &'static str {
        oldest_claimable_sql!("id, attempts", "$1", " FOR UPDATE SKIP LOCKED")
    }

    // PostgreSQL runs one statement per command: as two, a claim would be two
    // round trips, the second after the first's commit.
    fn claim_next(&self) -> ClaimSql {
        ClaimSql::WithRead(concat!(
            "WITH claimed AS (",
            claim_next_sql!(" FOR UPDATE SKIP LOCKED", "*"),
            ") ",
            claimed_match_sql!("claimed", "LEFT JOIN", "TRUE")
        ))
    }

    fn select_match_for_update(&self) -> &'static str {
        "SELECT m.*, \
         (SELECT CAST(CASE WHEN ended_ms IS NULL THEN 1 ELSE 0 END AS BIGINT) FROM seasons s \
          WHERE s.id = m.season_id) AS season_open \
         FROM matches m WHERE m.id = $1 FOR UPDATE OF m"
    }

    fn one_command_scripts(&self) -> bool {
        false
    }

    fn row_locks(&self) -> bool {
        true
    }

    fn is_retryable(&self, error: &sqlx::Error) -> bool {
        // 40001 serialization failure, 40P01 deadlock detected.
        match error {
            sqlx::Error::Database(database) => {
                matches!(database.code().as_deref(), Some("40001" | "40P01"))
            }
            _ => false,
        }
    }

    fn migrator(&self) -> &'static sqlx::migrate::Migrator {
        &MIGRATOR
    }
}
