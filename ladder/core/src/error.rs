//! The one error type of the ladder's rules: what a request or a plan can
//! break, whatever stores it. Messages are one line; they reach operators
//! and owners as they are. The store wraps these in its own type, beside the
//! database's failures.

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CoreError {
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
    /// Stored data that breaks an invariant the code relies on.
    #[error("corrupt data: {0}")]
    Corrupt(String),
}

impl CoreError {
    pub fn corrupt(what: impl std::fmt::Display) -> CoreError {
        CoreError::Corrupt(what.to_string())
    }
}

pub type Result<T, E = CoreError> = std::result::Result<T, E>;
