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

/// The largest request or response the referee's own gRPC services decode or
/// encode, in bytes (a replay is at most ~60 KiB of JSON).
pub const MAX_GRPC_MESSAGE_BYTES: usize = 1024 * 1024;

/// The largest prompt forwarded to the model in one call, in bytes of message
/// text, checked before anything is counted. A count costs at most ~60 ms a
/// MiB on this 2-core machine whatever the text (docs/perf/grpc.md,
/// "Adversarial prompts"), so no one call costs the referee more than ~30 ms
/// of counting. 512 KiB is ~128,000 tokens of English: a whole context
/// window of today's models, a quarter of the heavy budget; a bot spends a
/// larger budget over several calls. (It was 4 MiB, which let one call take
/// 0.4-2 s of CPU to count.)
pub const MAX_PROMPT_BYTES: usize = 512 * 1024;

/// The most messages in one model call.
pub const MAX_PROMPT_MESSAGES: usize = 256;

/// The roles a message may have (OpenAI's chat roles; `function` is
/// deprecated). Roles are framing, not counted (D-7), so a bot cannot carry
/// uncounted text in them: anything else is refused.
pub const MESSAGE_ROLES: [&str; 5] = ["system", "user", "assistant", "tool", "developer"];

/// The most stop strings a call may forward (OpenAI's own limit).
pub const MAX_STOP_STRINGS: usize = 4;

/// The longest stop string forwarded, in bytes. Stop strings reach the
/// model, so their tokens are counted with the prompt; the bound keeps them
/// what they are for (a few characters that end an answer).
pub const MAX_STOP_BYTES: usize = 256;

/// The most model calls one decision may make. Later calls are refused
/// (429 `too_many_calls`, RESOURCE_EXHAUSTED) before they reach the meter:
/// they cost nothing and are not recorded, so a bot looping on refused calls
/// cannot grow its replay without bound. 32 calls of 36 decisions of two
/// fighters add at most ~200 KiB of `calls` to a replay.
pub const MAX_MODEL_CALLS_PER_DECISION: usize = 32;

/// A prompt (all its texts) or a completion at most this long is counted on
/// the thread that asked (~30 µs for 1 KiB on a slow machine): the round
/// trip to the blocking pool costs more. Longer ones are counted there, so
/// that a fighter's megabyte of prompt never holds up the threads that run
/// both fighters' clocks.
pub const INLINE_COUNT_MAX_BYTES: usize = 1024;

/// A prompt longer than [`INLINE_COUNT_MAX_BYTES`] and at most this long,
/// from a call that names its completion cap (`max_tokens`) and whose bytes
/// plus that cap fit what is left, is forwarded to the model while it is
/// counted: an o200k token is at least one byte, so it fits whatever its
/// count, and the cap forwarded is the one asked either way. Counting 8,000
/// tokens takes ~3 ms, which the model's own time then hides. The bound keeps
/// the rare count a cut call must finish on the spot (the decision ended
/// first) to a few milliseconds: 64 KiB is ~16,000 tokens, ~6 ms.
pub const OVERLAP_COUNT_MAX_BYTES: usize = 64 * 1024;

const _: () = assert!(INLINE_COUNT_MAX_BYTES < OVERLAP_COUNT_MAX_BYTES);
const _: () = assert!(OVERLAP_COUNT_MAX_BYTES <= MAX_PROMPT_BYTES);

/// Message texts at least this long are counted once per fighter and match
/// (a system prompt and a history resent with every call): shorter ones cost
/// less to count again than to look up.
pub const MIN_CACHED_TEXT_BYTES: usize = 256;

/// The most message counts one fighter's meter remembers (16 bytes each);
/// past it, it starts over.
pub const MAX_CACHED_COUNTS: usize = 1_024;

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

/// The largest models file (`--models`) read, in bytes.
pub const MAX_CATALOGUE_BYTES: usize = 256 * 1024;

/// The most `[[model]]` tables a catalogue may have.
pub const MAX_CATALOGUE_MODELS: usize = 64;

/// The longest model name (catalogue and upstream), in bytes. A name a bot
/// sends that is longer is refused without being looked up.
pub const MAX_MODEL_NAME_BYTES: usize = 128;

/// The longest model name a record keeps (replay `calls[].model`, the
/// transcript, logs, error bodies): a name of the catalogue as it is, a
/// bot's unknown name by its first [`MAX_MODEL_NAME_BYTES`] with control
/// characters replaced, then `…[N bytes]` when it was longer
/// (`models::recorded_name`).
pub const MAX_RECORDED_MODEL_NAME_BYTES: usize = MAX_MODEL_NAME_BYTES + 32;

/// The highest price a catalogue accepts, in US dollars per million tokens.
pub const MAX_PRICE_USD_PER_MTOK: f64 = 1_000_000.0;

/// A chat-completions body at most this long is read (parsed) on the thread
/// that received it; a longer one on the blocking pool: parsing a megabyte
/// takes milliseconds, and `referee local` runs both fighters' clocks on one
/// thread.
pub const INLINE_PARSE_MAX_BYTES: usize = 64 * 1024;

/// The largest body `POST /v1/chat/completions` reads, in bytes: the largest
/// prompt as JSON (escaping can double it) with room for the rest.
pub const MAX_CHAT_REQUEST_BYTES: usize = 2 * MAX_PROMPT_BYTES + 64 * 1024;

/// The largest model HTTP response read, in bytes.
pub const MAX_MODEL_RESPONSE_BYTES: usize = 4 * 1024 * 1024;

/// How long one forwarded model call may take before it is abandoned (nothing is
/// counted then). The decision wall clock bounds what a bot can wait anyway.
pub const MODEL_CALL_TIMEOUT: Duration = DECISION_WALL_CLOCK;

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

/// Random bytes in an Inference credential (hex-encoded on the wire).
pub const CREDENTIAL_BYTES: usize = 32;

/// Unknown Inference credentials a client address (IPv6: its /64) may send
/// per second to the gateway (`duel.v1.Inference` and the OpenAI face), after
/// its burst: the ladder API's per-address rate. Only unknown tokens count;
/// past them the address gets RESOURCE_EXHAUSTED / HTTP 429 with
/// Retry-After, and none of its tokens is looked up until then.
pub const BAD_CREDENTIALS_PER_SECOND_PER_CLIENT: u32 = 50;

/// Unknown credentials a client address may send at once before the rate
/// applies (a bot's stale calls after its decisions end stay far below).
pub const BAD_CREDENTIALS_BURST_PER_CLIENT: u32 = 100;

const _: () = assert!(MAX_BOT_RESPONSE_BYTES <= MAX_GRPC_MESSAGE_BYTES);
const _: () = assert!(
    2 * MAX_TRANSCRIPT_BYTES_PER_MATCH < duel_replays::MAX_TRANSCRIPT_BYTES as usize,
    "a transcript of two fighters at the bound is read back"
);
const _: () = assert!(MAX_TRANSCRIPT_BYTES_PER_DECISION <= MAX_TRANSCRIPT_BYTES_PER_MATCH);
const _: () = assert!(MIN_WALL_CLOCK.as_nanos() < DECISION_WALL_CLOCK.as_nanos());

/// The largest file of extra trusted certificates (`DUEL_EXTRA_CA`) read, in
/// bytes: a PEM bundle of a few CAs is a few KiB.
pub const MAX_CA_FILE_BYTES: u64 = 1024 * 1024;

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
