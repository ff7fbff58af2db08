//! Every limit and default of the ladder, named and documented in one place.

/// Largest WASM component accepted at registration, in bytes: the sandbox's
/// own upload cap, so the ladder accepts exactly what a referee runs.
/// Components are stored in the database, so this also bounds one row.
pub const MAX_WASM_BYTES: usize = duel_sandbox::limits::UPLOAD_BYTES_MAX_DEFAULT;

/// The largest message the upload RPCs of `duel.v1.Ladder` (`RegisterBot`,
/// `NewBotVersion`) decode, and the largest any reply or client message may
/// be, in bytes: a WASM upload at the cap plus room for the other fields. Only
/// an authenticated caller's upload is ever decoded at this size.
pub const MAX_UPLOAD_MESSAGE_BYTES: usize = MAX_WASM_BYTES + 64 * 1024;

/// The largest message every other `duel.v1.Ladder` RPC decodes, in bytes:
/// names, ids and amounts fit many times over. Larger ones are refused with
/// `OUT_OF_RANGE` before they are buffered.
pub const MAX_RPC_MESSAGE_BYTES: usize = 1024 * 1024;

/// Calls per second one client address may make to the API, and the burst it
/// may make at once (IPv6 clients are counted per /64). Checked before the
/// token, so a flood of bad tokens costs no database lookups past it.
pub const DEFAULT_CALLS_PER_SECOND_PER_PEER: u32 = 50;
pub const DEFAULT_CALL_BURST_PER_PEER: u32 = 100;
/// Calls per second one token (its account) may make, and its burst.
pub const DEFAULT_CALLS_PER_SECOND_PER_TOKEN: u32 = 20;
pub const DEFAULT_CALL_BURST_PER_TOKEN: u32 = 60;
/// Rate-limiter entries kept before idle ones are dropped (bounds the
/// limiters' memory against clients that change address).
pub const MAX_RATE_LIMITED_KEYS: usize = 100_000;

/// Upload RPCs (`RegisterBot`, `NewBotVersion`) decoded at once; one more gets
/// `RESOURCE_EXHAUSTED` at once instead of buffering another 64 MiB.
pub const DEFAULT_MAX_CONCURRENT_UPLOADS: usize = 4;
/// WASM validations (compilations) at once; further uploads wait for a turn
/// (at most [`DEFAULT_MAX_CONCURRENT_UPLOADS`] can be waiting).
pub const DEFAULT_MAX_CONCURRENT_COMPILES: usize = 2;

/// Owner quotas (`ladder serve --max-versions-per-owner` …): bot versions
/// across all of an owner's bots, bytes of distinct WASM components they
/// reference, and seconds spent validating (compiling) uploads per UTC day.
pub const DEFAULT_MAX_BOT_VERSIONS_PER_OWNER: u64 = 200;
pub const DEFAULT_MAX_STORED_BYTES_PER_OWNER: u64 = 512 * 1024 * 1024;
pub const DEFAULT_COMPILE_SECONDS_PER_DAY_PER_OWNER: u64 = 600;
/// The length of the day compile seconds are counted in (UTC days).
pub const QUOTA_DAY_MS: i64 = 86_400_000;

/// How long registration waits for an endpoint bot to answer `Hello`.
pub const ENDPOINT_HELLO_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Longest bot, account and season name, in bytes (ASCII letters, digits, `-`, `_`, `.`).
pub const MAX_NAME_BYTES: usize = 64;

/// Longest endpoint URL accepted, in bytes.
pub const MAX_URL_BYTES: usize = 2_048;

/// Longest transfer id and memo, in bytes.
pub const MAX_TRANSFER_ID_BYTES: usize = 128;
pub const MAX_MEMO_BYTES: usize = 256;

/// Largest stake or credit grant in one transfer. Keeps every sum of a match
/// (two stakes) and of the whole ledger far from `i64` overflow.
pub const MAX_TRANSFER_CREDITS: i64 = 1_000_000_000_000;

/// Default house rake in basis points (500 = 5%). The rake is the pot times the
/// rate, rounded down to whole credits, so rounding always favours the winner.
pub const DEFAULT_RAKE_BP: i64 = 500;
/// The largest rake an operator may set (basis points): 50%.
pub const MAX_RAKE_BP: i64 = 5_000;

/// A worker's lease on a match: if it does not heartbeat within this time the
/// match may be claimed again.
pub const DEFAULT_LEASE_MS: i64 = 30_000;
/// How often a worker extends its lease while a match runs.
pub const DEFAULT_HEARTBEAT_MS: i64 = 5_000;
/// A match is run at most this many times: the next claim of a match that never
/// settled (its third) voids it (stakes returned) instead of running it again.
pub const MAX_MATCH_RUNS: i64 = 2;
/// Most settlements written in one transaction (group commit): a batch's
/// statements grow with it, and each size is one more prepared statement per
/// connection.
pub const MAX_SETTLEMENT_BATCH: usize = 16;
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

/// Matchmaking: the rating gap every bot accepts on its first wave, and how much
/// it widens for each wave it waited without a partner.
pub const BASE_RATING_GAP: f64 = 100.0;
pub const RATING_GAP_WIDEN_PER_WAVE: f64 = 50.0;
/// The widest gap ever allowed, however long a bot waited.
pub const MAX_RATING_GAP: f64 = 1_000.0;
/// How many rating-sorted neighbours each waiting bot considers per wave. Bounds
/// a wave to `O(n · NEIGHBOURS)` candidate pairs.
pub const MATCHMAKER_NEIGHBOURS: usize = 16;
/// Default time between pairing waves in `ladder serve`.
pub const DEFAULT_WAVE_INTERVAL_MS: u64 = 5_000;
/// Most bots waiting in one class; an enqueue beyond it is refused.
pub const MAX_QUEUE_PER_CLASS: i64 = 100_000;
/// Most bots playing continuously (active or paused) in one class; an
/// activation beyond it is refused. A wave's pool is at most the queue and
/// these.
pub const MAX_ACTIVE_PER_CLASS: i64 = 100_000;
/// Default `ladder serve --match-interval-ms`: an active bot is back in the
/// waves as soon as its last match settled (the wave interval paces it).
pub const DEFAULT_MATCH_INTERVAL_MS: u64 = 0;

/// Glicko-2 system constant τ.
pub const GLICKO2_TAU: f64 = 0.5;
/// A bot is provisional while its rating deviation is at or above this.
pub const PROVISIONAL_DEVIATION: f64 = 110.0;
/// Standings rank by `rating − CONSERVATIVE_DEVIATIONS × deviation`.
pub const CONSERVATIVE_DEVIATIONS: f64 = 2.0;
/// Soft reset between seasons: the rating keeps this share of its distance
/// from 1500, and the deviation is raised to at least `SOFT_RESET_MIN_DEVIATION`
/// (never above the initial 350).
pub const SOFT_RESET_KEEP: f64 = 0.5;
pub const SOFT_RESET_MIN_DEVIATION: f64 = 150.0;

/// How many of the rulesets an endpoint offers in `Hello` are quoted back, and
/// how many characters of each, when none is the ladder's: the refusal stays one
/// short line whatever the endpoint sends.
pub const MAX_QUOTED_RULESETS: usize = 8;
pub const MAX_QUOTED_RULESET_CHARS: usize = 32;

/// Most rows a list call returns.
pub const MAX_LIST_ROWS: i64 = 1_000;

/// A worker publishes a replay within this share of its lease (in parts per
/// thousand), right after making sure at least
/// [`LEASE_LEFT_TO_PUBLISH_PERMILLE`] of a lease is left, so a replay is only
/// published by a worker that still holds the match when it settles.
pub const PUBLISH_LEASE_SHARE_PERMILLE: i64 = 500;
/// Before publishing, a worker whose lease still has this share of a whole
/// lease to run (parts per thousand: a match that took under a tenth of the
/// lease since the claim or the last heartbeat, as built-in and WASM matches
/// do) only reads it, beside the writer; with less left it extends the lease
/// first. Either way at least 40% of a lease is left to settle in after the
/// longest publishing.
pub const LEASE_LEFT_TO_PUBLISH_PERMILLE: i64 = 900;

/// How long an idle worker waits before polling for a match again.
pub const WORKER_IDLE_POLL_MS: u64 = 200;

const _: () = assert!(DEFAULT_HEARTBEAT_MS * 3 <= DEFAULT_LEASE_MS);
const _: () = assert!(MAX_RAKE_BP < 10_000);
const _: () = assert!(MAX_TRANSFER_CREDITS < i64::MAX / 1_000_000);
const _: () = assert!(MAX_RPC_MESSAGE_BYTES < MAX_UPLOAD_MESSAGE_BYTES);
const _: () = assert!(DEFAULT_MAX_CONCURRENT_COMPILES <= DEFAULT_MAX_CONCURRENT_UPLOADS);

// The public site (`ladder serve --http`, src/site/).

/// Points on a bot's rating chart: its last this many rated matches.
pub const MAX_CHART_POINTS: i64 = 500;
/// Opponents listed on a bot's page (those it met most often).
pub const MAX_OPPONENTS_LISTED: i64 = 50;
/// Rows of a listing page (matches, a class's table) unless `limit=` asks fewer.
pub const SITE_PAGE_ROWS: usize = 50;
/// The most rows one page may ask for (`limit=`).
pub const MAX_SITE_PAGE_ROWS: usize = 200;
/// Rows of each class's table and of the latest matches on the home page.
pub const HOME_TOP_ROWS: usize = 10;
/// How long browsers and caches may reuse a page or its JSON twin.
pub const SITE_PAGE_MAX_AGE_S: u32 = 5;

/// Duel TV (`ladder serve --http`, [`crate::tv`]): the default pace of the
/// broadcast, one exchange every this many milliseconds
/// (`--tv-exchange-ms`): slow enough to follow, a 36-exchange match in ~25 s.
pub const DEFAULT_TV_EXCHANGE_MS: u64 = 700;
/// The slowest pace `--tv-exchange-ms` accepts (one exchange a minute).
pub const MAX_TV_EXCHANGE_MS: u64 = 60_000;
/// Between two broadcast matches Duel TV pauses this many exchanges' time,
/// so the result stays on screen for a moment.
pub const TV_PAUSE_EXCHANGES: u32 = 4;
/// How often Duel TV looks for a settled ranked match while it has none.
pub const TV_IDLE_POLL: std::time::Duration = std::time::Duration::from_secs(2);
/// How many of the latest settled ranked matches Duel TV chooses from.
pub const TV_CANDIDATE_MATCHES: usize = 5;
/// How many of its last broadcasts Duel TV avoids repeating while another
/// candidate exists: one less than the candidates, so a quiet ladder's last
/// matches are shown in turn.
pub const TV_RECENTLY_SHOWN: usize = TV_CANDIDATE_MATCHES - 1;
/// A win is an upset when the winner was rated this much below the loser
/// before the match (from `rating_history`; after it for a bot's first match
/// of the season, when the win has already narrowed the gap).
pub const TV_UPSET_MIN_RATING_GAP: f64 = 50.0;
/// A match is close when it was decided by one round at most and the damage
/// dealt differs by at most this share of the total, in percent.
pub const TV_CLOSE_DAMAGE_PERCENT: u64 = 25;
/// Events a Duel TV watcher may fall behind before it skips ahead (the
/// broadcast channel's capacity): more than one whole match (at most 38
/// events), so only a watcher that stopped reading for a minute skips.
pub const TV_WATCHER_LAG_EVENTS: usize = 64;
/// Most `GET /tv` watchers at once; one more is answered 503. Each holds the
/// current match's events by reference (a few hundred bytes) and a place in
/// the HTTP connection cap.
pub const MAX_TV_WATCHERS: usize = 2_000;
/// How often `GET /tv` sends a keep-alive comment when nothing happens:
/// the live feeds' interval, under the HTTP idle timeout.
pub const TV_KEEP_ALIVE: std::time::Duration = duel_referee::limits::LIVE_KEEP_ALIVE;

const _: () = assert!(DEFAULT_TV_EXCHANGE_MS <= MAX_TV_EXCHANGE_MS);
const _: () = assert!(TV_RECENTLY_SHOWN < TV_CANDIDATE_MATCHES);
const _: () =
    assert!(TV_KEEP_ALIVE.as_millis() < duel_referee::limits::HTTP_IDLE_TIMEOUT.as_millis());

// `ladder bench-site` (src/bench_site/): the site's scale benchmark.

/// The fewest bots `bench-site seed` makes: each class needs at least five,
/// so every bot has opponents of other owners.
pub const BENCH_SITE_MIN_BOTS: u64 = 15;
/// Bots per owner account in a seeded ladder.
pub const BENCH_SITE_BOTS_PER_OWNER: u64 = 5;
/// The stake of each seeded match, per side.
pub const BENCH_SITE_STAKE: i64 = 10;
/// The seeded matches span this many days, the ended season the first
/// `BENCH_SITE_ENDED_SHARE_PERCENT` of them.
pub const BENCH_SITE_SPAN_DAYS: i64 = 300;
pub const BENCH_SITE_ENDED_SHARE_PERCENT: u64 = 30;
/// One seeded match in this many has the class's busiest bot on side a (its
/// page has the most matches, chart points and opponents), and one in
/// `BENCH_SITE_RIVALRY_EVERY` also meets that bot's rival (the head-to-head).
pub const BENCH_SITE_BUSY_EVERY: u64 = 100;
pub const BENCH_SITE_RIVALRY_EVERY: u64 = 1_000;
/// The listing page `bench-site load` measures (its cursor is computed in SQL).
pub const BENCH_SITE_DEEP_LISTING_PAGE: u64 = 1_000;
/// Requests per page run before the measured ones (connections, caches).
pub const BENCH_SITE_WARMUP_REQUESTS: usize = 10;
/// The most requests per page and concurrent clients `bench-site load` runs.
pub const BENCH_SITE_MAX_REQUESTS: usize = 1_000_000;
pub const BENCH_SITE_MAX_CONCURRENCY: usize = 1_000;
/// Concurrent SSE watchers of Duel TV the load opens, and how long each may
/// take to answer with headers; they are held this long before RSS is read.
pub const BENCH_SITE_SSE_WATCHERS: usize = 200;
pub const BENCH_SITE_SSE_CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
pub const BENCH_SITE_SSE_HOLD: std::time::Duration = std::time::Duration::from_secs(2);
/// How long one measured request may take before it counts as an error.
pub const BENCH_SITE_REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);
