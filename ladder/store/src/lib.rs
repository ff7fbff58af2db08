//! The ladder's storage: one [`Store`] over sqlx's `Any` driver, with the SQL that
//! differs between SQLite and PostgreSQL behind the [`Dialect`] trait (one
//! implementation per backend, in [`sqlite`] and [`postgres`]). Migrations run on
//! connect. Every write is one transaction; PostgreSQL transactions that lose a
//! deadlock or serialization race are retried.
//!
//! Architecture invariant: the ladder's SQL (besides it only the bench's
//! synthetic seed). It enforces data invariants (no negative balance, each
//! pending transfer resolved once, a match settled once and only by the
//! lease holder) by applying what the rules (`duel-ladder-core`) decide and
//! writing what the service draws (match ids, seeds); it decides nothing:
//! pairing waves and retries are the service's, permissions are checked in
//! its facade. It depends on no referee crate.

/// The oldest claimable match: the oldest queued one or the oldest running
/// one whose lease expired (`$now` the time), whichever was accepted first,
/// with `$lock` after each branch's `LIMIT`. Each branch walks
/// `matches_claimable` in order and stops at its first row, so a claim reads
/// two rows however many matches wait; one `state = 'queued' OR (state =
/// 'running' AND …)` would read and sort every queued match, on the one
/// writer every worker waits for (docs/perf/ladder.md, "The store's query
/// shapes").
macro_rules! oldest_claimable_sql {
    ($columns:literal, $now:literal, $lock:literal) => {
        concat!(
            "SELECT ",
            $columns,
            " FROM (SELECT * FROM (SELECT ",
            $columns,
            ", accepted_ms FROM matches WHERE state = 'queued' \
             ORDER BY accepted_ms, id LIMIT 1",
            $lock,
            ") queued UNION ALL SELECT * FROM (SELECT ",
            $columns,
            ", accepted_ms FROM matches WHERE state = 'running' AND lease_expires_ms < ",
            $now,
            " ORDER BY accepted_ms, id LIMIT 1",
            $lock,
            ") expired) claimable ORDER BY accepted_ms, id LIMIT 1"
        )
    };
}

/// A claimed match, both pinned versions and the season's name, in one read
/// of `$from m` (the `matches` table, or a `WITH` query over it) joined with
/// `$join` (`JOIN`, or `LEFT JOIN` so that a missing version reads as a
/// corrupt row rather than as no match); `$which` picks the match.
macro_rules! claimed_match_sql {
    ($from:literal, $join:literal, $which:literal) => {
        concat!(
            "SELECT m.*, ba.name AS name_a, bb.name AS name_b, s.name AS season_name, \
             va.kind AS kind_a, va.spec AS spec_a, va.digest AS digest_a, va.created_ms AS created_a, \
             vb.kind AS kind_b, vb.spec AS spec_b, vb.digest AS digest_b, vb.created_ms AS created_b \
             FROM ", $from, " m ", $join, " bots ba ON ba.id = m.bot_a ", $join, " bots bb ON bb.id = m.bot_b ",
            $join, " seasons s ON s.id = m.season_id ",
            $join, " bot_versions va ON va.bot_id = m.bot_a AND va.version = m.version_a ",
            $join, " bot_versions vb ON vb.bot_id = m.bot_b AND vb.version = m.version_b \
             WHERE ",
            $which
        )
    };
}

/// Claims the oldest claimable match if it has runs left (`$1` lease id,
/// `$2` lease expiry, `$3` now, `$4` most runs), returning `$returning`;
/// `$lock` as in [`oldest_claimable_sql`].
macro_rules! claim_next_sql {
    ($lock:literal, $returning:literal) => {
        concat!(
            "UPDATE matches SET state = 'running', lease_id = $1, lease_expires_ms = $2, \
             attempts = attempts + 1 WHERE id = (",
            oldest_claimable_sql!("id", "$3", $lock),
            ") AND attempts < $4 RETURNING ",
            $returning
        )
    };
}

mod cost;
pub mod error;
mod fit;
pub mod kept;
mod ledger_sql;
pub mod limits;
mod logs;
mod matches;
mod params;
mod play;
mod postgres;
mod registry;
mod replay_index;
mod rows;
mod script;
mod seasons;
mod settle;
pub mod site;
mod sqlite;
mod status;
mod transcripts;
mod tv;

use std::str::FromStr;
use std::sync::Arc;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions, AnyRow};
use sqlx::{AnyConnection, AnyPool, Row, Transaction};

pub use crate::error::{LadderError, Result};
use crate::limits::{
    POOL_ACQUIRE_TIMEOUT, POSTGRES_CONNECTIONS, POSTGRES_PING_IDLE_AFTER,
    SQLITE_CHECKPOINT_INTERVAL, SQLITE_READ_CONNECTIONS, SQLITE_WRITER_CHECKPOINT_PAGES,
};
use duel_ladder_core::clock::{Clock, SystemClock};

pub use cost::{ClassSpend, CostLine, FallbackShare, ModelLine};
pub use fit::{FitReport, SolvedFit};
pub use matches::{PairOrigin, PairSide, PoolEntry, WaveReport};
pub use postgres::Postgres;
pub use replay_index::LadderReplayIndex;
pub use seasons::SeasonChoice;
pub use settle::SettlementStats;
pub use sqlite::Sqlite;
pub use transcripts::{TranscriptPart, readable_transcript};
pub use tv::SettledMatch;

/// The SQL and transaction behaviour that differ between backends.
pub trait Dialect: Send + Sync + std::fmt::Debug {
    fn name(&self) -> &'static str;
    /// The statement that opens a write transaction.
    fn begin_write(&self) -> &'static str;
    /// The statement that opens a settlement batch's transaction.
    fn begin_settlement(&self) -> &'static str {
        self.begin_write()
    }
    /// Selects the oldest claimable match (`$1` = now): queued, or running with an
    /// expired lease; locked so concurrent claimers skip it where the backend can.
    fn select_claimable(&self) -> &'static str;
    /// Claims the oldest claimable match if it has runs left (`$1` lease id,
    /// `$2` lease expiry, `$3` now, `$4` most runs); otherwise changes
    /// nothing. See [`ClaimSql`] for how the claimed match is read back.
    fn claim_next(&self) -> ClaimSql;
    /// Reads one match row for settlement (`$1` = id), locked against concurrent
    /// settlement, with whether its season still runs (`season_open`: 1, 0, NULL without a season).
    fn select_match_for_update(&self) -> &'static str;
    /// Whether the backend locks rows (`SELECT … FOR UPDATE`); without row
    /// locks, the write transaction holds the whole database.
    fn row_locks(&self) -> bool;
    /// Whether several statements with bound parameters go as one command
    /// (SQLite's driver prepares and runs them in turn, one hop to its
    /// connection thread for all; PostgreSQL prepares one per command).
    fn one_command_scripts(&self) -> bool;
    /// Whether a failed transaction is worth running again.
    fn is_retryable(&self, error: &sqlx::Error) -> bool;
    fn migrator(&self) -> &'static sqlx::migrate::Migrator;
}

/// A claim's statement, and how the claimed match is read back.
#[derive(Clone, Copy, Debug)]
pub enum ClaimSql {
    /// An `UPDATE … RETURNING id`, followed in the same command by the read
    /// of the match running under the new lease (SQLite: one hop for both).
    ThenRead(&'static str),
    /// One statement that claims and returns the claimed match's row as
    /// that read gives it (PostgreSQL, one statement per command: one round
    /// trip, not two).
    WithRead(&'static str),
}

/// Most times one write transaction is retried after a deadlock or serialization failure.
const MAX_TRANSACTION_RETRIES: u32 = 8;

/// The ladder database.
#[derive(Clone, Debug)]
pub struct Store {
    /// Where writes (and reads that must see them) go.
    writer: Writer,
    /// Where reads outside write transactions go: on SQLite, read-only
    /// connections beside the one writer, so pages and listings do not queue
    /// behind writes (WAL: a reader sees every commit made before it began);
    /// on PostgreSQL, the same pool.
    reads: AnyPool,
    dialect: Arc<dyn Dialect>,
    /// Every time the store writes on its own (acceptance, transfers, seasons,
    /// registrations) comes from here; calls that take `now` use theirs.
    clock: Arc<dyn Clock>,
    /// Settlements waiting to be written together (group commit).
    settlements: Arc<settle::SettlementQueue>,
    /// SQLite files: the task that checkpoints the log beside the writer,
    /// stopped when the last clone of the store goes.
    checkpoints: Option<Arc<Checkpointer>>,
    /// How long bots' logs are kept, and how much of them one owner keeps.
    log_limits: duel_ladder_core::model::LogLimits,
    /// How long transcripts are kept, and how much of them one owner keeps.
    transcript_limits: duel_ladder_core::model::TranscriptLimits,
    /// Pages' reads kept while the database says they hold.
    kept: Arc<kept::KeptReads>,
}

/// The store's read side: the projections the public site, Duel TV and
/// listings show, and nothing that writes. The site takes this, not a
/// [`Store`], so a page cannot change the ladder.
#[derive(Clone, Debug)]
pub struct Reads {
    store: Store,
}

// Every read below is on the read pool: on SQLite the writer is one
// connection, and a page that queued for it waited behind settlements.
impl Reads {
    /// A connection of the read pool, for the store's `…_on(conn)` reads.
    pub(crate) async fn reader(&self) -> Result<sqlx::pool::PoolConnection<sqlx::Any>> {
        Ok(self.store.read_pool().acquire().await?)
    }

    /// The running season, if any.
    pub async fn active_season(&self) -> Result<Option<duel_ladder_core::model::Season>> {
        rows::active_season_on(&mut *self.reader().await?).await
    }

    /// The season that ended last, if any.
    pub async fn last_ended_season(&self) -> Result<Option<duel_ladder_core::model::Season>> {
        seasons::last_ended_season_on(&mut *self.reader().await?).await
    }

    /// The season a choice names: the running one, else the one that ended
    /// last (its frozen table); NOT_FOUND only when there never was a season.
    pub async fn chosen_season(
        &self,
        choice: &SeasonChoice,
    ) -> Result<duel_ladder_core::model::Season> {
        seasons::chosen_season_on(&mut *self.reader().await?, choice).await
    }

    /// A bot by name.
    pub async fn bot(&self, name: &str) -> Result<duel_ladder_core::model::Bot> {
        rows::load_bot(&mut *self.reader().await?, name).await
    }

    /// A match with its sides (bots, versions and owners).
    pub async fn game(&self, id: &str) -> Result<duel_ladder_core::model::Match> {
        matches::load_match(&mut *self.reader().await?, id).await
    }

    /// The account a token belongs to (the owner's form on a match page:
    /// a read, it changes nothing).
    pub async fn authenticate(&self, token: &str) -> Result<duel_ladder_core::auth::User> {
        registry::authenticate_on(&mut *self.reader().await?, token).await
    }
}

/// The writer's settings on SQLite: write-ahead log, synced at checkpoints,
/// and its own checkpoints only as a backstop (see [`Checkpointer`]).
fn writer_pragmas() -> String {
    format!(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; \
         PRAGMA busy_timeout = 10000; PRAGMA wal_autocheckpoint = {SQLITE_WRITER_CHECKPOINT_PAGES};"
    )
}

/// Checkpoints a SQLite store's write-ahead log on a connection of its own,
/// every [`SQLITE_CHECKPOINT_INTERVAL`]. Left to the writer, every ~1,000
/// pages of log one commit also copied them into the database file and
/// waited for two `fsync`s, while every worker queued behind it. A passive
/// checkpoint waits for nobody: the writer goes on appending meanwhile.
#[derive(Debug)]
struct Checkpointer {
    task: tokio::task::JoinHandle<()>,
}

impl Checkpointer {
    async fn start(options: &AnyConnectOptions) -> Result<Checkpointer> {
        let mut conn = sqlx::ConnectOptions::connect(options).await?;
        sqlx::raw_sql("PRAGMA busy_timeout = 10000;")
            .execute(&mut conn)
            .await?;
        let task = tokio::spawn(async move {
            let mut failing = false;
            loop {
                tokio::time::sleep(SQLITE_CHECKPOINT_INTERVAL).await;
                match sqlx::raw_sql("PRAGMA wal_checkpoint(PASSIVE);")
                    .execute(&mut conn)
                    .await
                {
                    Ok(_) if failing => {
                        failing = false;
                        tracing::info!("the SQLite log is checkpointed again");
                    }
                    Ok(_) => {}
                    // Said once, not ten times a second; the writer's own
                    // checkpoints still run past the backstop.
                    Err(error) if !failing => {
                        failing = true;
                        tracing::warn!(%error, "cannot checkpoint the SQLite log; the writer will");
                    }
                    Err(error) => tracing::debug!(%error, "cannot checkpoint the SQLite log"),
                }
            }
        });
        Ok(Checkpointer { task })
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The connection writes go through.
///
/// On SQLite, one connection the store holds behind a lock: SQLite takes one
/// writer at a time anyway, and a pool of one would ping the connection's
/// thread and spawn a task each time a statement gives it back (sqlx checks
/// every returned connection), two more thread hops per statement. On
/// PostgreSQL, a pool: connections to a server are worth sharing.
#[derive(Clone, Debug)]
enum Writer {
    Pool(AnyPool),
    /// `None` once the store is closed.
    Held(Arc<tokio::sync::Mutex<Option<AnyConnection>>>),
}

/// A connection to write on, for as long as this lives.
pub(crate) enum WriteConn {
    Pooled(sqlx::pool::PoolConnection<sqlx::Any>),
    Held(tokio::sync::OwnedMappedMutexGuard<Option<AnyConnection>, AnyConnection>),
}

impl std::ops::Deref for WriteConn {
    type Target = AnyConnection;

    fn deref(&self) -> &AnyConnection {
        match self {
            WriteConn::Pooled(conn) => conn,
            WriteConn::Held(conn) => conn,
        }
    }
}

impl std::ops::DerefMut for WriteConn {
    fn deref_mut(&mut self) -> &mut AnyConnection {
        match self {
            WriteConn::Pooled(conn) => conn,
            WriteConn::Held(conn) => conn,
        }
    }
}

/// Pool settings shared by the writer and the readers. sqlx pings a
/// connection before every use by default: on SQLite that is one more hop to
/// the connection's thread per statement, for a connection that cannot hang
/// up; on PostgreSQL, one more round trip, spent only on connections idle past
/// [`POSTGRES_PING_IDLE_AFTER`] here.
fn pool_options(is_sqlite: bool) -> AnyPoolOptions {
    let options = AnyPoolOptions::new()
        .acquire_timeout(POOL_ACQUIRE_TIMEOUT)
        .test_before_acquire(false);
    if is_sqlite {
        return options;
    }
    options.before_acquire(|conn, meta| {
        Box::pin(async move {
            if meta.idle_for > POSTGRES_PING_IDLE_AFTER {
                sqlx::Connection::ping(conn).await?;
            }
            Ok(true)
        })
    })
}

pub use duel_ladder_core::clock::now_ms;

/// A fresh account token: 32 bytes from the operating system's randomness
/// (the rules only give it its form).
pub fn new_token() -> Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(LadderError::Randomness)?;
    Ok(duel_ladder_core::auth::token_of(bytes))
}

/// Runs `$body` (an expression using `$conn: &mut AnyConnection` and returning a
/// future of `Result<T>`) in a write transaction, retrying retryable failures.
macro_rules! write_tx {
    ($store:expr, |$conn:ident| $body:expr) => {{
        let store: &$crate::Store = $store;
        let mut attempt: u32 = 0;
        loop {
            // The connection goes back before any retry waits.
            let result = {
                let mut conn = store.writer().await?;
                let mut tx = store.begin_write(&mut conn).await?;
                let result: $crate::error::Result<_> = {
                    let $conn: &mut sqlx::AnyConnection = &mut *tx;
                    $body.await
                };
                match result {
                    Ok(value) => tx
                        .commit()
                        .await
                        .map(|()| value)
                        .map_err($crate::error::LadderError::from),
                    Err(error) => {
                        let _ = tx.rollback().await;
                        Err(error)
                    }
                }
            };
            match result {
                Err($crate::error::LadderError::Database(ref error))
                    if attempt < $crate::MAX_TRANSACTION_RETRIES_PUB
                        && store.is_retryable(error) =>
                {
                    attempt += 1;
                    tokio::time::sleep(std::time::Duration::from_millis(u64::from(attempt) * 3))
                        .await;
                }
                other => break other,
            }
        }
    }};
}
pub(crate) use write_tx;
pub(crate) const MAX_TRANSACTION_RETRIES_PUB: u32 = MAX_TRANSACTION_RETRIES;

impl Store {
    /// Connects to `sqlite://path` (the file is created on first use) or
    /// `postgres://…`, and runs the migrations.
    pub async fn connect(url: &str) -> Result<Store> {
        sqlx::any::install_default_drivers();
        let dialect: Arc<dyn Dialect> = if url.starts_with("sqlite:") {
            Arc::new(Sqlite)
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Arc::new(Postgres)
        } else {
            return Err(LadderError::Invalid(format!(
                "database URL must start with sqlite:// or postgres://, got {:?}",
                url.split(':').next().unwrap_or("")
            )));
        };
        let url = if dialect.name() == "sqlite" && !url.contains("mode=") {
            let separator = if url.contains('?') { '&' } else { '?' };
            format!("{url}{separator}mode=rwc")
        } else {
            url.to_owned()
        };
        let options = AnyConnectOptions::from_str(&url)?;
        let is_sqlite = dialect.name() == "sqlite";
        let (writer, reads, checkpoints) = if is_sqlite {
            // A pool of one to open the writer and migrate, then its
            // connection taken out of it for the store to hold.
            let opening = pool_options(is_sqlite)
                .max_connections(1)
                .after_connect(|conn, _meta| {
                    Box::pin(async move {
                        // Our own text: a number from limits.rs, no input.
                        sqlx::raw_sql(sqlx::AssertSqlSafe(writer_pragmas()))
                            .execute(&mut *conn)
                            .await?;
                        Ok(())
                    })
                })
                .connect_with(options.clone())
                .await?;
            dialect.migrator().run(&opening).await?;
            let conn = opening.acquire().await?.detach();
            opening.close().await;
            let reads = pool_options(is_sqlite)
                .max_connections(SQLITE_READ_CONNECTIONS)
                .after_connect(|conn, _meta| {
                    Box::pin(async move {
                        sqlx::raw_sql("PRAGMA query_only = ON; PRAGMA busy_timeout = 10000;")
                            .execute(&mut *conn)
                            .await?;
                        Ok(())
                    })
                })
                .connect_with(options.clone())
                .await?;
            let writer = Writer::Held(Arc::new(tokio::sync::Mutex::new(Some(conn))));
            let checkpoints = if url.contains(":memory:") || url.contains("mode=memory") {
                None
            } else {
                Some(Arc::new(Checkpointer::start(&options).await?))
            };
            (writer, reads, checkpoints)
        } else {
            let pool = pool_options(is_sqlite)
                .max_connections(POSTGRES_CONNECTIONS)
                .connect_with(options)
                .await?;
            dialect.migrator().run(&pool).await?;
            (Writer::Pool(pool.clone()), pool, None)
        };
        Ok(Store {
            writer,
            reads,
            dialect,
            clock: Arc::new(SystemClock),
            settlements: Arc::default(),
            checkpoints,
            log_limits: duel_ladder_core::model::LogLimits::default(),
            transcript_limits: duel_ladder_core::model::TranscriptLimits::default(),
            kept: Arc::default(),
        })
    }

    /// The same store keeping bots' logs within `limits`.
    pub fn with_log_limits(mut self, limits: duel_ladder_core::model::LogLimits) -> Store {
        self.log_limits = limits;
        self
    }

    /// The same store keeping transcripts within `limits`.
    pub fn with_transcript_limits(
        mut self,
        limits: duel_ladder_core::model::TranscriptLimits,
    ) -> Store {
        self.transcript_limits = limits;
        self
    }

    /// The same store reading time from `clock` (tests and simulations move
    /// time by hand).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Store {
        self.clock = clock;
        self
    }

    /// The store's clock: workers read lease times from it.
    pub fn clock(&self) -> &dyn Clock {
        &*self.clock
    }

    pub(crate) fn now(&self) -> i64 {
        self.clock.now_ms()
    }

    pub fn backend(&self) -> &'static str {
        self.dialect.name()
    }

    /// The connection to write on (and to read what must see every write):
    /// on SQLite the one the store holds, waited for up to
    /// [`POOL_ACQUIRE_TIMEOUT`] like a pooled one.
    pub(crate) async fn writer(&self) -> Result<WriteConn> {
        match &self.writer {
            Writer::Pool(pool) => Ok(WriteConn::Pooled(pool.acquire().await?)),
            Writer::Held(conn) => {
                let guard =
                    tokio::time::timeout(POOL_ACQUIRE_TIMEOUT, Arc::clone(conn).lock_owned())
                        .await
                        .map_err(|_| sqlx::Error::PoolTimedOut)?;
                tokio::sync::OwnedMutexGuard::try_map(guard, Option::as_mut)
                    .map(WriteConn::Held)
                    .map_err(|_| sqlx::Error::PoolClosed.into())
            }
        }
    }

    /// The read-only side of this store (for the site and Duel TV).
    pub fn reads(&self) -> Reads {
        Reads {
            store: self.clone(),
        }
    }

    /// The pool for reads outside write transactions (see [`Store::reads`]'s field).
    pub(crate) fn kept(&self) -> &kept::KeptReads {
        &self.kept
    }

    pub(crate) fn read_pool(&self) -> &AnyPool {
        &self.reads
    }

    pub(crate) fn dialect(&self) -> &dyn Dialect {
        &*self.dialect
    }

    /// Opens a write transaction on `conn` (from [`Store::writer`]).
    pub(crate) async fn begin_write<'c>(
        &self,
        conn: &'c mut WriteConn,
    ) -> Result<Transaction<'c, sqlx::Any>> {
        Ok(sqlx::Connection::begin_with(&mut **conn, self.dialect.begin_write()).await?)
    }

    /// Opens a settlement batch's transaction on `conn`.
    pub(crate) async fn begin_settlement<'c>(
        &self,
        conn: &'c mut WriteConn,
    ) -> Result<Transaction<'c, sqlx::Any>> {
        Ok(sqlx::Connection::begin_with(&mut **conn, self.dialect.begin_settlement()).await?)
    }

    pub(crate) fn is_retryable(&self, error: &sqlx::Error) -> bool {
        self.dialect.is_retryable(error)
    }

    /// Closes every connection (tests drop their databases afterwards).
    pub async fn close(&self) {
        if let Some(checkpoints) = &self.checkpoints {
            checkpoints.task.abort();
        }
        self.reads.close().await;
        match &self.writer {
            Writer::Pool(pool) => pool.close().await,
            Writer::Held(conn) => {
                if let Some(conn) = conn.lock().await.take() {
                    let _ = sqlx::Connection::close(conn).await;
                }
            }
        }
    }

    /// A setting stored as an integer.
    pub async fn setting(&self, key: &str) -> Result<Option<i64>> {
        let row = sqlx::query("SELECT value FROM settings WHERE key = $1")
            .bind(key.to_owned())
            .fetch_optional(&mut *self.writer().await?)
            .await?;
        row.map(|row| get::<i64>(&row, "value")).transpose()
    }

    pub async fn set_setting(&self, key: &str, value: i64) -> Result<()> {
        let key = key.to_owned();
        write_tx!(self, |conn| set_setting_tx(conn, &key, value))
    }
}

async fn set_setting_tx(conn: &mut AnyConnection, key: &str, value: i64) -> Result<()> {
    sqlx::query("INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = $2")
        .bind(key.to_owned())
        .bind(value)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// Reads a column, turning a type mismatch into a one-line error.
/// The `n` of a `SELECT COUNT(*) AS n …` query bound to one text value.
pub(crate) async fn count_of(
    conn: &mut sqlx::AnyConnection,
    sql: &'static str,
    value: &str,
) -> Result<i64> {
    let row = sqlx::query(sql)
        .bind(value.to_owned())
        .fetch_one(&mut *conn)
        .await?;
    get(&row, "n")
}

pub(crate) fn get<'r, T>(row: &'r AnyRow, column: &str) -> Result<T>
where
    T: sqlx::Decode<'r, sqlx::Any> + sqlx::Type<sqlx::Any>,
{
    row.try_get::<T, _>(column)
        .map_err(|error| LadderError::corrupt(format!("column {column}: {error}")))
}

/// Whether a database error is a unique-constraint violation.
pub(crate) fn is_unique_violation(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Database(database) => database.is_unique_violation(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use duel_ladder_core::auth::Role;

    /// The writer's own checkpoints wait for 10,000 pages of log; the
    /// background task moves a few hundred writes into the database file
    /// long before that, while the store stays open.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_log_is_checkpointed_beside_the_writer() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("ladder.db");
        let store = Store::connect(&format!("sqlite://{}", file.display()))
            .await
            .expect("store");
        let size = || std::fs::metadata(&file).expect("database file").len();
        // Whatever the migrations left in the log reaches the file first.
        tokio::time::sleep(SQLITE_CHECKPOINT_INTERVAL * 3).await;
        let before = size();
        for index in 0..300 {
            store
                .create_user(&format!("user-{index}"), Role::Owner)
                .await
                .expect("user");
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while size() <= before && std::time::Instant::now() < deadline {
            tokio::time::sleep(SQLITE_CHECKPOINT_INTERVAL).await;
        }
        assert!(
            size() > before,
            "300 users never reached the database file ({before} bytes)"
        );
        let mut writer = store.writer().await.expect("writer");
        let pages: i64 = sqlx::query_scalar("PRAGMA wal_autocheckpoint")
            .fetch_one(&mut *writer)
            .await
            .expect("pragma");
        assert_eq!(pages, i64::from(SQLITE_WRITER_CHECKPOINT_PAGES));
        drop(writer);
        store.close().await;
    }

    /// The site's reads take a connection of the read pool: while the one
    /// writer of a SQLite file is held (a settlement being written), a
    /// page's seasons, bot and match lookups and an owner's token still
    /// answer.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn pages_do_not_queue_behind_the_writer() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("ladder.db");
        let store = Store::connect(&format!("sqlite://{}", file.display()))
            .await
            .expect("store");
        store.start_season("first").await.expect("season");
        let reads = store.reads();
        let writer = store.writer().await.expect("writer");
        let soon = std::time::Duration::from_secs(5);
        let season = tokio::time::timeout(soon, reads.active_season())
            .await
            .expect("the running season while the writer is held")
            .expect("read");
        assert_eq!(season.map(|season| season.name), Some("first".to_owned()));
        let chosen = tokio::time::timeout(soon, reads.chosen_season(&SeasonChoice::Current))
            .await
            .expect("the chosen season while the writer is held")
            .expect("read");
        assert_eq!(chosen.name, "first");
        let ended = tokio::time::timeout(soon, reads.last_ended_season())
            .await
            .expect("the last ended season while the writer is held")
            .expect("read");
        assert!(ended.is_none());
        let seasons = tokio::time::timeout(soon, reads.season_lines())
            .await
            .expect("the seasons while the writer is held")
            .expect("read");
        assert_eq!(seasons.len(), 1);
        let stranger = tokio::time::timeout(soon, reads.authenticate("no-such-token"))
            .await
            .expect("a token's account while the writer is held");
        assert!(
            matches!(stranger, Err(LadderError::Unauthenticated(_))),
            "{stranger:?}"
        );
        for missing in [
            tokio::time::timeout(soon, reads.bot("nobody"))
                .await
                .map(|read| read.err()),
            tokio::time::timeout(soon, reads.game("m-none"))
                .await
                .map(|read| read.err()),
        ] {
            let error = missing.expect("a lookup while the writer is held");
            assert!(matches!(error, Some(LadderError::NotFound(_))), "{error:?}");
        }
        drop(writer);
        store.close().await;
    }
}
