//! The `duel-replay/1` format: the public record of a match, how to read and write
//! it, and how to re-verify it by re-running the recorded actions through
//! `duel-rules`.
//!
//! Architecture invariant: this crate owns the wire shape of replays. The rules
//! crate's types stay plain; conversions live here. Parsing never panics on any
//! bytes: every failure is a [`ReplayError`] with a one-line message.

mod error;
mod format;
mod limits;
mod verify;

pub use error::ReplayError;
pub use format::{
    ActionName, ClassName, ExchangeRecord, FORMAT, FighterInfo, FighterKind, MatchResultRecord,
    Replay, RoundEndName, RoundRecord, RoundResultRecord, SideRecord, SourceName, WinnerName,
};
pub use limits::MAX_REPLAY_BYTES;
pub use verify::{Disagreement, Location, VerifiedMatch, verify};
