//! The one error type of the store: the rules'
//! own errors ([`CoreError`], converted variant for variant) beside what a
//! database, a replay store or a disk can fail with. Messages are one line:
//! they reach operators and owners through the CLI as they are. A variant
//! that wraps a cause of another crate keeps it as its `source` and ends
//! with its words.

use duel_ladder_core::CoreError;
use duel_replays::ReplayError;

#[derive(Debug, thiserror::Error)]
pub enum LadderError {
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("database migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// No token, or a token no account holds.
    #[error("unauthenticated: {0}")]
    Unauthenticated(String),
    /// A valid token that may not do this.
    #[error("permission denied: {0}")]
    PermissionDenied(String),
    #[error("not found: {0}")]
    NotFound(String),
    #[error("invalid argument: {0}")]
    Invalid(String),
    /// The thing exists already (a name taken, a transfer id reused with other fields).
    #[error("conflict: {0}")]
    Conflict(String),
    /// A debit would take an account below zero.
    #[error("insufficient credits: {0}")]
    InsufficientCredits(String),
    /// The ladder is not in a state that allows this (no season running).
    #[error("failed precondition: {0}")]
    Precondition(String),
    /// A worker tried to complete a match whose lease it no longer holds.
    #[error("lease lost: {0}")]
    LeaseLost(String),
    /// An owner quota (bot versions, stored bytes, compile seconds per day)
    /// would be exceeded; the message names the quota and its value.
    #[error("quota exceeded: {0}")]
    Quota(String),
    #[error("replay: {0}")]
    Replay(#[from] ReplayError),
    /// Stored data that breaks an invariant the code relies on.
    #[error("corrupt data: {0}")]
    Corrupt(String),
    /// The operating system gave no randomness for a new token.
    #[error("no randomness for a token: {0}")]
    Randomness(#[source] getrandom::Error),
}

impl LadderError {
    pub fn corrupt(what: impl std::fmt::Display) -> LadderError {
        LadderError::Corrupt(what.to_string())
    }
}

impl From<CoreError> for LadderError {
    fn from(error: CoreError) -> LadderError {
        match error {
            CoreError::Unauthenticated(message) => LadderError::Unauthenticated(message),
            CoreError::PermissionDenied(message) => LadderError::PermissionDenied(message),
            CoreError::NotFound(message) => LadderError::NotFound(message),
            CoreError::Invalid(message) => LadderError::Invalid(message),
            CoreError::Conflict(message) => LadderError::Conflict(message),
            CoreError::InsufficientCredits(message) => LadderError::InsufficientCredits(message),
            CoreError::Corrupt(message) => LadderError::Corrupt(message),
        }
    }
}

pub type Result<T, E = LadderError> = std::result::Result<T, E>;
