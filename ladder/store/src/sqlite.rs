//! SQLite: the embedded default. One writer at a time (`BEGIN IMMEDIATE` takes
//! the write lock up front), so a claim needs no row locks.

use super::{ClaimSql, Dialect};

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations/sqlite");

#[derive(Clone, Copy, Debug, Default)]
pub struct Sqlite;

impl Dialect for Sqlite {
    fn name(&self) -> &'static str {
        "sqlite"
    }

    fn begin_write(&self) -> &'static str {
        "BEGIN IMMEDIATE"
    }

    fn select_claimable(&self) -> &'static str {
        oldest_claimable_sql!("id, attempts", "$1", "")
    }

    fn claim_next(&self) -> ClaimSql {
        ClaimSql::ThenRead(claim_next_sql!("", "id"))
    }

    fn select_match_for_update(&self) -> &'static str {
        "SELECT m.*, \
         (SELECT CAST(CASE WHEN ended_ms IS NULL THEN 1 ELSE 0 END AS BIGINT) FROM seasons s \
          WHERE s.id = m.season_id) AS season_open \
         FROM matches m WHERE m.id = $1"
    }

    fn one_command_scripts(&self) -> bool {
        true
    }

    fn row_locks(&self) -> bool {
        false
    }

    fn is_retryable(&self, error: &sqlx::Error) -> bool {
        // SQLITE_BUSY (5) and SQLITE_LOCKED (6), should the busy timeout run out.
        match error {
            sqlx::Error::Database(database) => {
                matches!(database.code().as_deref(), Some("5" | "6" | "517"))
            }
            _ => false,
        }
    }

    fn migrator(&self) -> &'static sqlx::migrate::Migrator {
        &MIGRATOR
    }
}
