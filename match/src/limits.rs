//! Every limit of the match engine, named and documented in one place: the
//! clock, bot specs and answers, logs and transcripts kept, seeds, openings,
//! and the caches and pools of a match host.

use std::time::Duration;

use duel_gateway::limits::{MAX_GRPC_MESSAGE_BYTES, MODEL_CALL_TIMEOUT};

/// The rules' wall clock per decision: from sending the observation to receiving
/// the answer. A later answer is discarded and the fallback plays.
pub const DECISION_WALL_CLOCK: Duration = Duration::from_secs(10);

const _: () = assert!(
    MODEL_CALL_TIMEOUT.as_nanos() == DECISION_WALL_CLOCK.as_nanos(),
    "a model call may take as long as the decision that makes it"
);

/// The longest `builtin:script:` list accepted (defined beside the built-in
/// strategies, in `duel-builtin`).
pub use duel_builtin::MAX_SCRIPT_ACTIONS;

/// The longest bot spec accepted on the command line or in config, in bytes.
pub const MAX_SPEC_BYTES: usize = 4_096;

/// The longest substitution reason kept in a replay, in bytes; longer reasons are
/// cut so a misbehaving bot cannot bloat the public record.
pub const MAX_REASON_BYTES: usize = 200;

/// How many recent opponent actions `builtin:counter` weighs (`duel-builtin`).
pub use duel_builtin::COUNTER_MEMORY_EXCHANGES;
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
