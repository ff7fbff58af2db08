//! The one error type of the referee library (its servers, the replay
//! service and client, the arena): the match engine's errors, and the
//! servers' own. Each edge maps it once: gRPC status in `grpc/status.rs`,
//! HTTP status in `publish/error.rs`, exit codes in the binary. A cause of
//! another crate is kept as the variant's `source` and its words end the
//! message (one line for a person); `duel_match::terminal::error_line`
//! prints a chain without saying a cause twice.

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
    /// A live feed for this match is open already.
    #[error("live feed: match {match_id} is already live")]
    AlreadyLive { match_id: String },
    /// As many live feeds as the server keeps are open.
    #[error("live feed: {limit} matches are live already")]
    TooManyLive { limit: usize },
    /// The HTTP client for fetching replays could not be built.
    #[error("cannot start an HTTP client: {0}")]
    HttpClient(#[source] reqwest::Error),
    /// A replay, transcript or key could not be fetched from a replay service.
    #[error("cannot fetch {url}: {source}")]
    Fetch {
        url: String,
        #[source]
        source: FetchFailure,
    },
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
    /// An opened listener has no local address.
    #[error("cannot read the listening address: {0}")]
    LocalAddr(#[source] std::io::Error),
    /// The match host's start-up task ended without a host.
    #[error("cannot start the match host: {0}")]
    HostStart(#[source] tokio::task::JoinError),
    /// gRPC reflection could not be built from the descriptor sets.
    #[error("cannot build reflection: {0}")]
    Reflection(#[source] tonic_reflection::server::Error),
    /// The gRPC server stopped on an error.
    #[error("server stopped: {0}")]
    Stopped(#[source] tonic::transport::Error),
}

/// Why fetching a URL of a replay service failed.
#[derive(Debug, thiserror::Error)]
pub enum FetchFailure {
    /// No answer: the connection, TLS, a timeout, or a body cut short.
    #[error("{0}")]
    Request(#[from] reqwest::Error),
    /// The answer is longer than what it may be.
    #[error("the answer is over {limit_bytes} bytes")]
    TooLarge { limit_bytes: u64 },
    /// An error status, with the service's `error` text when it sent one.
    #[error("{status} ({detail})")]
    Status { status: u16, detail: String },
    /// A zstd answer that does not decompress.
    #[error("{0}")]
    Decompress(#[source] duel_replays::ReplayError),
    /// A text answer (a public key) that is not UTF-8.
    #[error("the answer is not text")]
    NotText(#[source] std::string::FromUtf8Error),
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
            | RefereeError::AlreadyLive { .. }
            | RefereeError::TooManyLive { .. }
            | RefereeError::HttpClient(_)
            | RefereeError::Fetch { .. }
            | RefereeError::Bind { .. }
            | RefereeError::LocalAddr(_)
            | RefereeError::HostStart(_)
            | RefereeError::Reflection(_)
            | RefereeError::Stopped(_) => false,
        }
    }
}
