//! Every limit and default of `ladder bench-site`, the site's scale
//! benchmark, named in one place.

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

// The synthetic ladder of `ladder bench-site seed` ([`crate::bench_site::seed`]).

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

/// With a replay store, `bench-site seed` writes transcripts for this many
/// of the ended season's newest heavy matches in which side a called a
/// model: the class whose transcripts are largest, each
/// `BENCH_SITE_TRANSCRIPT_DECISIONS` calls that spend the class's whole
/// budget (about 2 MB of JSON, half the referee's cap per match).
pub const BENCH_SITE_TRANSCRIPTS: i64 = 8;
pub const BENCH_SITE_TRANSCRIPT_DECISIONS: u64 = 24;
