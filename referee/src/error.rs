//! The one error type of the referee library.

#[derive(Debug, thiserror::Error)]
pub enum RefereeError {
    #[error("{0}")]
    Spec(String),
    #[error(transparent)]
    Replay(#[from] duel_replays::ReplayError),
    #[error("{0}")]
    Unsupported(String),
    #[error("live feed: {0}")]
    Live(String),
    #[error("{0}")]
    Fetch(String),
    /// A setting (flag, environment variable, request field) out of range.
    #[error("{0}")]
    Config(String),
    /// The server could not start or stopped on an I/O error.
    #[error("{0}")]
    Serve(String),
}
