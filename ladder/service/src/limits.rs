//! Every limit of the ladder service, named and documented in one place:
//! the API's message sizes and rates, uploads, leases and workers. The
//! rules' limits (core) and the store's are re-exported beside them, so
//! `duel_ladder::limits` is the whole service's view.

pub use duel_ladder_core::limits::*;
pub use duel_ladder_store::limits::*;

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

/// How long registration waits for an endpoint bot to answer `Hello`.
pub const ENDPOINT_HELLO_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Longest endpoint URL accepted, in bytes.
pub const MAX_URL_BYTES: usize = 2_048;

/// A worker's lease on a match: if it does not heartbeat within this time the
/// match may be claimed again.
pub const DEFAULT_LEASE_MS: i64 = 30_000;

/// How often a worker extends its lease while a match runs.
pub const DEFAULT_HEARTBEAT_MS: i64 = 5_000;

/// `--lease-ms` of `ladder serve` and `ladder worker`: from one second (a
/// failed run is run again that soon after; each heartbeat a database write)
/// to an hour (a dead worker's match waits that long).
pub const MIN_LEASE_MS: i64 = 1_000;
pub const MAX_LEASE_MS: i64 = 3_600_000;

/// A worker heartbeats this many times per lease (`--lease-ms`), so two
/// heartbeats may be late before the lease runs out.
pub const HEARTBEATS_PER_LEASE: i64 = 6;

/// Default time between pairing waves in `ladder serve`.
pub const DEFAULT_WAVE_INTERVAL_MS: u64 = 5_000;

/// Default `ladder serve --match-interval-ms`: an active bot is back in the
/// waves as soon as its last match settled (the wave interval paces it).
pub const DEFAULT_MATCH_INTERVAL_MS: u64 = 0;

/// The standings' season fit (docs/RULES.md) runs after a class's wave, at
/// most this often per class: with short wave intervals it would otherwise
/// re-read a season's rated games many times a second.
pub const SEASON_FIT_MIN_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);
/// ...and no sooner after a fit than this many times as long as the fit
/// took, so that on a large season the fit takes at most a tenth of the
/// store's time. It runs only when a match settled since the last fit.
pub const SEASON_FIT_SPACING_FACTOR: u32 = 10;

/// Fits of a class solved without locks and found stale (a rated game
/// settled between their read and their write) before the next is solved
/// with the class's ratings rows locked, as settlements then wait on it.
pub const FIT_UNLOCKED_ATTEMPTS: u32 = 3;

/// How many of the rulesets an endpoint offers in `Hello` are quoted back, and
/// how many characters of each, when none is the ladder's: the refusal stays one
/// short line whatever the endpoint sends.
pub const MAX_QUOTED_RULESETS: usize = 8;
pub const MAX_QUOTED_RULESET_CHARS: usize = 32;

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
const _: () = assert!(DEFAULT_HEARTBEAT_MS == DEFAULT_LEASE_MS / HEARTBEATS_PER_LEASE);
const _: () = assert!(MIN_LEASE_MS <= DEFAULT_LEASE_MS && DEFAULT_LEASE_MS <= MAX_LEASE_MS);

const _: () = assert!(MAX_RPC_MESSAGE_BYTES < MAX_UPLOAD_MESSAGE_BYTES);

const _: () = assert!(DEFAULT_MAX_CONCURRENT_COMPILES <= DEFAULT_MAX_CONCURRENT_UPLOADS);

/// The most workers one process runs (`ladder serve --workers`, `ladder
/// worker --workers`). Each holds a WASM instance slot and a database
/// connection; 100,000 took 2.1 GB in 5 s before this bound. More matches at
/// once come from more `ladder worker` processes.
pub const MAX_WORKERS_PER_PROCESS: usize = 64;

/// How often a process serving `/metrics` reads the database's match counts
/// into `duel_ladder_store_matches` (a handful of indexed counts per class).
pub const STORE_GAUGES_REFRESH: std::time::Duration = std::time::Duration::from_secs(5);

/// How often a serving or working process drops bots' logs past their
/// retention (`--log-retention-days`): retention is counted in days, so
/// hourly is exact enough, and a pass is one indexed delete.
pub const LOG_PRUNE_INTERVAL: std::time::Duration = std::time::Duration::from_secs(3_600);
