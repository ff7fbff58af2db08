//! The one error type of the referee library (its servers, the replay
//! service and client, the arena): the match engine's errors, and the
//! servers' own. Each edge maps it once: gRPC status in `grpc/status.rs`,
//! HTTP status in `publish/error.rs`, exit codes in the binary.

use std::net::SocketAddr;

pub use duel_match::MatchError;

#[derive(Debug, thiserror::Error)]
pub enum RefereeError {
    /// Building or playing a match (bot specs and files, endpoints, the
    /// sandbox, the gateway's set-up, replays of matches).
    #[error(transparent)]
    Match(#[from] MatchError),
    #[error(transparent)]
    Replay(#[from] duel_replays::ReplayError),
    #[error("live feed: {0}")]
    Live(String),
    #[error("{0}")]
    Fetch(String),
    /// A setting (flag, environment variable, request field) out of range.
    #[error("{0}")]
    Config(String),
    /// A listener could not be opened.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    /// The server could not start or stopped on an I/O error.
    #[error("{0}")]
    Serve(String),
}

impl From<duel_gateway::GatewayError> for RefereeError {
    fn from(error: duel_gateway::GatewayError) -> RefereeError {
        RefereeError::Match(MatchError::Gateway(error))
    }
}

impl RefereeError {
    /// Whether the caller's input is at fault (exit code 2, INVALID_ARGUMENT),
    /// as opposed to this machine or a service it depends on.
    pub fn is_bad_input(&self) -> bool {
        match self {
            RefereeError::Match(error) => error.is_bad_input(),
            RefereeError::Config(_) => true,
            RefereeError::Replay(_)
            | RefereeError::Live(_)
            | RefereeError::Fetch(_)
            | RefereeError::Bind { .. }
            | RefereeError::Serve(_) => false,
        }
    }
}
