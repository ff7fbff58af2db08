//! Every limit of the store, named and documented in one place: its
//! connections, its batches, and how many rows a query returns.

/// Most settlements written in one transaction (group commit): a batch's
/// statements grow with it, and each size is one more prepared statement per
/// connection.
pub const MAX_SETTLEMENT_BATCH: usize = 16;

/// The `settings` key of the opening ranked matches are accepted with, in
/// exchanges (`ladder serve --ranked-openings`); unset, it is
/// duel_ladder_core::limits::RANKED_OPENING_EXCHANGES.
pub const OPENING_EXCHANGES_SETTING: &str = "opening_exchanges";

/// Rows read at a time while finding the oldest logs or transcript parts
/// an owner over its quota must give up (most keeps read none: one sum
/// shows the owner is within it).
pub const QUOTA_PAGE_ROWS: i64 = 100;

/// SQLite connections that only read (the site, listings, Duel TV, status),
/// beside the one that writes: in WAL mode readers never wait for the writer.
pub const SQLITE_READ_CONNECTIONS: u32 = 4;

/// How often a SQLite store's own connection checkpoints the write-ahead log
/// into the database file (`PRAGMA wal_checkpoint(PASSIVE)`), so that the
/// writer every worker waits for never stops to copy pages and `fsync`.
pub const SQLITE_CHECKPOINT_INTERVAL: std::time::Duration = std::time::Duration::from_millis(100);

/// The writer checkpoints on its own only past this many pages of log (4 KiB
/// each, 40 MiB): a backstop should the background checkpoints fall behind.
/// SQLite's default, 1,000, made every ~100th settlement pay for one.
pub const SQLITE_WRITER_CHECKPOINT_PAGES: u32 = 10_000;

/// PostgreSQL connections one ladder process keeps (SQLite has one writer the
/// store holds, and [`SQLITE_READ_CONNECTIONS`] readers).
pub const POSTGRES_CONNECTIONS: u32 = 16;

/// How long a store operation waits for a database connection before it fails.
pub const POOL_ACQUIRE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// A pooled PostgreSQL connection idle longer than this is pinged before use,
/// so one a server restart or a proxy's idle cut closed is replaced rather than
/// failing a statement. Busier connections are not pinged: sqlx's default
/// pings before every use, one more round trip per statement. SQLite
/// connections are in-process and never pinged.
pub const POSTGRES_PING_IDLE_AFTER: std::time::Duration = std::time::Duration::from_secs(30);

/// Most bots waiting in one class; an enqueue beyond it is refused.
pub const MAX_QUEUE_PER_CLASS: i64 = 100_000;

/// Most bots playing continuously (active or paused) in one class; an
/// activation beyond it is refused. A wave's pool is at most the queue and
/// these.
pub const MAX_ACTIVE_PER_CLASS: i64 = 100_000;

/// Most rows a list call returns.
pub const MAX_LIST_ROWS: i64 = 1_000;

/// Points on a bot's rating chart: its last this many rated matches.
pub const MAX_CHART_POINTS: i64 = 500;

/// Opponents listed on a bot's page (those it met most often).
pub const MAX_OPPONENTS_LISTED: i64 = 50;

/// Rows of `ratings` one statement of the season fit writes: 4 values a row
/// keeps a statement under SQLite's 32,766 bound parameters.
pub const FIT_WRITE_ROWS: usize = 1_000;

/// Spend tables (one per season and class) a process keeps in memory for the
/// cost page (`kept::KeptReads`): four seasons of three classes, at most
/// ~1 MB each at 3,333 bots a class.
pub const KEPT_SPEND_TABLES: usize = 12;

/// Bots whose page reads (record, [`MAX_CHART_POINTS`] of rating history,
/// [`MAX_OPPONENTS_LISTED`] opponents) a process keeps in memory: ~60 KB
/// each at most, 30 MB in all.
pub const KEPT_BOT_PAGES: usize = 500;
