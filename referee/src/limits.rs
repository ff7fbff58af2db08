//! Every limit of the referee, named and documented in one place.

use std::time::Duration;

/// The gateway's limits (prompts, names, calls, credentials), named where
/// they are kept.
pub use duel_gateway::limits::*;

/// The rules' wall clock per decision: from sending the observation to receiving
/// the answer. A later answer is discarded and the fallback plays.
pub const DECISION_WALL_CLOCK: Duration = Duration::from_secs(10);

const _: () = assert!(
    MODEL_CALL_TIMEOUT.as_nanos() == DECISION_WALL_CLOCK.as_nanos(),
    "a model call may take as long as the decision that makes it"
);

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
/// The shortest wall clock a match may be configured with (tests and benches use
/// short clocks; below this, scheduling noise alone would time bots out).
pub const MIN_WALL_CLOCK: Duration = Duration::from_millis(1);

/// The largest `DecideResponse` accepted from an endpoint bot, in bytes: an
/// action and a log of a few KiB (the recorder keeps at most
/// [`MAX_LOG_BYTES_PER_DECISION`] of it). A larger reply is a fault; the bound
/// stops a hostile endpoint from making the referee buffer megabytes.
pub const MAX_BOT_RESPONSE_BYTES: usize = 64 * 1024;

/// The longest bot name kept from an endpoint's `Hello`, in characters (control
/// characters dropped first); the name is shown on tapes and in replays.
pub const MAX_HELLO_NAME_CHARS: usize = 64;

/// The longest log line kept in a replay, in bytes; longer lines are cut and
/// end in `…`.
pub const MAX_LOG_LINE_BYTES: usize = 300;

/// The most log lines kept per decision.
pub const MAX_LOG_LINES_PER_DECISION: usize = 32;

/// The most log bytes kept per decision (after cutting lines).
pub const MAX_LOG_BYTES_PER_DECISION: usize = 4 * 1024;

/// The most log bytes kept per fighter per match: 36 decisions at the
/// per-decision bound would be 144 KiB; a chatty bot keeps its early lines.
/// Two fighters at this bound add at most 128 KiB to a replay.
pub const MAX_LOG_BYTES_PER_MATCH: usize = 64 * 1024;

const _: () = assert!(MAX_LOG_LINE_BYTES <= MAX_LOG_BYTES_PER_DECISION);
const _: () = assert!(MAX_LOG_BYTES_PER_DECISION <= MAX_LOG_BYTES_PER_MATCH);
const _: () = assert!(MAX_LOG_BYTES_PER_DECISION < MAX_BOT_RESPONSE_BYTES);

/// The most transcript text (message contents and completions) kept per
/// decision of one fighter, in bytes; beyond it texts are cut and the call
/// is marked `truncated` (its tokens stay what was charged).
pub const MAX_TRANSCRIPT_BYTES_PER_DECISION: usize = 256 * 1024;

/// The most transcript text kept per fighter per match, in bytes: 36
/// decisions at the per-decision bound would be 9 MiB; a talkative bot keeps
/// its early decisions whole. Two fighters stay under
/// `duel_replays::MAX_TRANSCRIPT_BYTES` with room for JSON framing.
pub const MAX_TRANSCRIPT_BYTES_PER_MATCH: usize = 4 * 1024 * 1024;

/// What each transcript message costs against the transcript's bounds
/// beyond its texts: its JSON framing (`{"content":"","role":""},`), so
/// that a call of 256 empty messages is bounded too.
pub const TRANSCRIPT_MESSAGE_FRAMING_BYTES: usize = 32;

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

const _: () = assert!(MAX_BOT_RESPONSE_BYTES <= MAX_GRPC_MESSAGE_BYTES);
const _: () = assert!(
    2 * MAX_TRANSCRIPT_BYTES_PER_MATCH < duel_replays::MAX_TRANSCRIPT_BYTES as usize,
    "a transcript of two fighters at the bound is read back"
);
const _: () = assert!(MAX_TRANSCRIPT_BYTES_PER_DECISION <= MAX_TRANSCRIPT_BYTES_PER_MATCH);
const _: () = assert!(MIN_WALL_CLOCK.as_nanos() < DECISION_WALL_CLOCK.as_nanos());

/// Components a match host keeps loaded by digest (ladder workers fetch a
/// bot's bytes from the database once, not once per match). Each holds its
/// compiled code: ~0.5 MiB for a Rust bot, ~31 MiB for a Python one.
pub const MAX_CACHED_COMPONENTS: usize = 64;

/// Matches a WASM instance pool is sized for at most, whatever bound the
/// process has on matches at once (`referee serve` allows 256 by default):
/// two slots a match plus two, each slot reserving ~16 GiB of address space
/// (`duel_sandbox::limits::POOL_MEMORIES_PER_SLOT`), so 16 matches reserve
/// ~0.5 TiB. Instances beyond the pool are allocated on demand, never refused.
pub const POOLED_MATCHES_MAX: usize = 16;

/// Sandboxes (one per wall clock in use) that get an instance pool; a process
/// playing under more distinct clocks (a `referee serve` caller may choose any
/// of 1..=10,000 ms) allocates the rest on demand, so callers cannot make it
/// reserve address space without bound.
pub const POOLED_SANDBOXES_MAX: usize = 2;

/// Seeds the referee makes are below this: random, and short enough to retype.
pub const SEED_MODULUS: u64 = 1_000_000_000;

/// The largest seed accepted anywhere (`--seed`, `RunMatch.seed`, a
/// tournament's game seeds): 2^53 − 1, the largest integer a replay's
/// signature binds (RFC 8785 writes numbers as doubles).
pub const SEED_MAX: u64 = duel_replays::JSON_INTEGER_MAX;

const _: () = assert!(SEED_MODULUS <= SEED_MAX);

// A WASM bot's decision log is bounded in the sandbox as it is written, with
// the same per-decision bounds the recorder applies: whatever the sandbox keeps,
// the replay keeps (within the per-match bound).
const _: () = assert!(duel_sandbox::limits::LOG_LINE_BYTES_DEFAULT == MAX_LOG_LINE_BYTES);
const _: () =
    assert!(duel_sandbox::limits::LOG_LINES_PER_DECISION_DEFAULT == MAX_LOG_LINES_PER_DECISION);
const _: () =
    assert!(duel_sandbox::limits::LOG_BYTES_PER_DECISION_DEFAULT == MAX_LOG_BYTES_PER_DECISION);

/// The longest opening (`--openings N`, a book line), in exchanges: what a
/// replay may record.
pub const MAX_OPENING_EXCHANGES: usize = duel_replays::MAX_OPENING_EXCHANGES;

/// The most openings a book (`--book FILE`) may hold.
pub const MAX_BOOK_OPENINGS: usize = 100_000;

/// The largest opening book read, in bytes.
pub const MAX_BOOK_BYTES: usize = 8 * 1024 * 1024;

const _: () = assert!(
    MAX_OPENING_EXCHANGES < duel_rules::Ruleset::CURRENT.exchanges_per_round() as usize,
    "an opening is shorter than a round"
);

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
