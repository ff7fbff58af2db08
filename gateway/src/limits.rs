//! Every limit of the model gateway, named and documented in one place:
//! what a bot may send (prompts, names, roles, stop strings, calls), what the
//! meter keeps, what an upstream may answer, and the credentials' door.

use std::time::Duration;

/// The largest request or response the referee's gRPC services decode or
/// encode (`duel.v1.Inference` here, `duel.v1.Referee` in the referee), in
/// bytes (a replay is at most ~60 KiB of JSON).
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
/// counted then): the rules' decision wall clock, which bounds what a bot can
/// wait anyway (`duel_match::limits` asserts the two agree).
pub const MODEL_CALL_TIMEOUT: Duration = Duration::from_secs(10);

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

/// The largest file of extra trusted certificates (`DUEL_EXTRA_CA`) read, in
/// bytes: a PEM bundle of a few CAs is a few KiB.
pub const MAX_CA_FILE_BYTES: u64 = 1024 * 1024;

/// Client addresses whose unknown credentials are tracked before idle ones
/// are forgotten (the credentials' rate limiter's memory).
pub const MAX_CREDENTIAL_RATE_LIMITED_CLIENTS: usize = 100_000;
