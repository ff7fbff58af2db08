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
