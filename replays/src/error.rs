//! The one error type of this crate.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("cannot read replay {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write replay {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("replay is {size_bytes} bytes, more than the {limit_bytes}-byte limit")]
    TooLarge { size_bytes: u64, limit_bytes: u64 },
    #[error("malformed replay: {0}")]
    Malformed(String),
    #[error("unknown replay format {found:?} (this tool reads {expected:?})")]
    UnknownFormat {
        found: String,
        expected: &'static str,
    },
    #[error("replay uses {0}")]
    UnknownRuleset(#[from] duel_rules::UnknownRuleset),
    #[error("{0}")]
    Key(String),
    #[error("replay store: {0}")]
    Store(String),
    /// A replay is already published under this id with other bytes: a
    /// published replay is never replaced (it is served as immutable).
    #[error(
        "replay {0} is already published with other contents; a published replay is never replaced"
    )]
    Conflict(String),
    #[error("{0} is not a valid replay id (1 to 128 of A-Z a-z 0-9 - _)")]
    BadId(String),
    #[error("{0}")]
    BadQuery(String),
    /// An integer RFC 8785 cannot write exactly (over 2^53 − 1), so no
    /// signature or digest could bind it.
    #[error("{field} is {value}, over 2^53 - 1: a signature cannot bind it")]
    IntegerTooLarge { field: String, value: String },
    /// A file named by the caller could not be read or written (one line,
    /// the path first).
    #[error("{0}")]
    File(String),
}
