//! The `duel-replay/1` format: the public record of a match, how to read and write
//! it, and how to re-verify it by re-running the recorded actions through
//! `duel-rules`.
//!
//! Architecture invariant: this crate owns the wire shape of replays. The rules
//! crate's types stay plain; conversions live here. Parsing never panics on any
//! bytes: every failure is a [`ReplayError`] with a one-line message.

mod error;
mod fork;
mod format;
mod integers;
mod limits;
mod sign;
#[cfg(feature = "store")]
pub mod store;
pub mod transcript;
mod verify;

/// The key types of replay signatures.
pub use ed25519_dalek::{SigningKey, VerifyingKey};
pub use error::ReplayError;
pub use fork::{ForkPoint, ForkRecord, check_fork, replay_sha256};
pub use format::ReplaySignature;
pub use format::{
    ActionName, CallOutcome, CallRecord, ClassName, ExchangeRecord, FORMAT, FighterInfo,
    FighterKind, MatchResultRecord, ModelPrice, ModelSpend, Replay, RoundEndName, RoundRecord,
    RoundResultRecord, SideRecord, SourceName, WinnerName, sha256_digest,
};
pub use integers::check_integers;
pub use limits::{
    JSON_INTEGER_MAX, MAX_CURSOR_BYTES, MAX_FILTER_BYTES, MAX_KEY_FILE_BYTES, MAX_LISTING_SCAN,
    MAX_OPENING_EXCHANGES, MAX_PAGE_REPLAYS, MAX_REPLAY_BYTES, MAX_REPLAY_ID_BYTES,
    MAX_TRANSCRIPT_BYTES, ZSTD_LEVEL,
};
pub use sign::{
    SIGNATURE_ALG, SignatureFailure, SignatureStatus, canonical_bytes, check_signature,
    default_signing_key_path, generate_signing_key, load_or_create_signing_key, parse_public_key,
    public_key_text, sign,
};
pub use transcript::{FighterName, Transcript, calls_sha256, verify_transcript};
pub use verify::{Disagreement, Location, VerifiedMatch, verify};
