//! Every limit of the referee's servers, named and documented in one place:
//! the replay service, live feeds, `referee serve`'s matches and its operator
//! door. The match engine's and the gateway's limits are theirs
//! (`duel_match::limits`, `duel_gateway::limits`), re-exported here.

use std::time::Duration;

/// The match engine's limits (clock, answers, logs, seeds, openings).
pub use duel_match::limits::*;

/// The gateway's limits (prompts, names, calls, credentials), named where
/// they are kept.
pub use duel_gateway::limits::*;

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

/// The replay service's HTTP limits, owned by the listener both binaries
/// use (`duel_plumbing::listen`).
pub use duel_plumbing::limits::{
    HTTP_HEADER_READ_TIMEOUT, HTTP_IDLE_TIMEOUT, MAX_HTTP_CONNECTIONS,
};

const _: () = assert!(
    HTTP_IDLE_TIMEOUT.as_millis() > LIVE_KEEP_ALIVE.as_millis(),
    "a live feed's keep-alive comments must come before the idle timeout"
);

/// The longest time `referee replay fetch` waits for a server.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(30);

/// The most live match ids `GET /live` returns.
pub const MAX_LIVE_LISTED: usize = 1_000;

const _: () = assert!(
    MAX_LIVE_EVENTS >= 2 + duel_rules::Ruleset::CURRENT.max_exchanges_per_match() as usize,
    "a whole match must fit a live feed"
);

/// Default bound on matches running at once in `referee serve`; excess
/// `RunMatch` calls get `RESOURCE_EXHAUSTED` instead of queueing.
pub const DEFAULT_MAX_CONCURRENT_MATCHES: usize = 256;

/// Finished matches (their replays and event logs) `referee serve` keeps in
/// memory for `WatchMatch` and `GetReplay`; the oldest are forgotten first.
/// ~60 KiB each at most: ~60 MiB.
pub const MAX_KEPT_MATCHES: usize = 1_000;

/// Events buffered per `WatchMatch` stream before the sender waits for the
/// spectator (a match has at most 38 events).
pub const WATCH_BUFFER_EVENTS: usize = 64;

/// Default time `referee serve` gives matches in flight to finish after SIGTERM
/// or ctrl-c, before recording them as aborted.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(60);

/// `referee serve`'s operator-token door (`duel.v1.Referee` calls while
/// `DUEL_REFEREE_TOKEN` is set): calls a second one client address (IPv6: its
/// /64) may make, and at once before that rate applies, counted before the
/// token is compared, as the ladder's API counts its calls (its
/// `DEFAULT_CALLS_PER_SECOND_PER_PEER` and `DEFAULT_CALL_BURST_PER_PEER`).
/// Over it: `RESOURCE_EXHAUSTED` naming the wait.
pub const OPERATOR_CALLS_PER_SECOND_PER_CLIENT: u32 = 50;
pub const OPERATOR_CALL_BURST_PER_CLIENT: u32 = 100;

/// Client addresses the operator door's limiter remembers before it drops
/// the idle ones (checked every 4,096 calls).
pub const MAX_OPERATOR_RATE_LIMITED_CLIENTS: usize = 100_000;
