//! Every limit of the referee, named and documented in one place.

use std::time::Duration;

/// The rules' wall clock per decision: from sending the observation to receiving
/// the answer. A later answer is discarded and the fallback plays.
pub const DECISION_WALL_CLOCK: Duration = Duration::from_secs(10);

/// The longest `builtin:script:` list accepted; a match has at most 36 decisions,
/// so longer scripts only waste memory.
pub const MAX_SCRIPT_ACTIONS: usize = 1_000;

/// The longest bot spec accepted on the command line or in config, in bytes.
pub const MAX_SPEC_BYTES: usize = 4_096;

/// The longest substitution reason kept in a replay, in bytes; longer reasons are
/// cut so a misbehaving bot cannot bloat the public record.
pub const MAX_REASON_BYTES: usize = 200;

/// How many recent opponent actions `builtin:counter` weighs (older ones count 1).
pub const COUNTER_MEMORY_EXCHANGES: i64 = 12;

/// Listing requests each client address may make per minute on the replay
/// service, after its burst; beyond that it gets 429 with Retry-After.
pub const LISTINGS_PER_MINUTE: u32 = 120;

/// Listing requests a client may make at once before the per-minute rate applies.
pub const LISTING_BURST: u32 = 30;

/// Client addresses the listing rate limiter tracks before it forgets idle ones.
pub const MAX_RATE_LIMITED_CLIENTS: usize = 100_000;

/// Default page size of a replay listing (the most is `duel_replays` MAX_PAGE_REPLAYS).
pub const DEFAULT_PAGE_REPLAYS: usize = 20;

/// Matches that may be live on one service at once.
pub const MAX_LIVE_MATCHES: usize = 10_000;

/// Events kept per live match for late joiners: a start, at most 36 exchanges and
/// an end fit with room to spare; the broadcast channel has the same capacity,
/// so a spectator never lags within one match.
pub const MAX_LIVE_EVENTS: usize = 64;

/// How often a live feed sends a keep-alive comment when nothing happens.
pub const LIVE_KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The longest time `referee replay fetch` waits for a server.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(30);

/// The most live match ids `GET /live` returns.
pub const MAX_LIVE_LISTED: usize = 1_000;

const _: () = assert!(
    MAX_LIVE_EVENTS >= 2 + duel_rules::Ruleset::CURRENT.max_exchanges_per_match() as usize,
    "a whole match must fit a live feed"
);
