//! The one error type of the referee library. Each edge maps it once: gRPC
//! status in `grpc/status.rs`, HTTP status in `publish/error.rs`, exit codes in
//! the binary.

use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum RefereeError {
    /// A bot spec that cannot be parsed or used as given (bad input).
    #[error("{0}")]
    Spec(String),
    /// A `.wasm` path that cannot be read, or is not a regular file.
    #[error("cannot read bot {path}: {reason}")]
    BotFile { path: PathBuf, reason: String },
    /// A component the sandbox refuses (not a `duel:bot` component, too large…):
    /// bad input, the reason in one line.
    #[error("bot {bot}: {source}")]
    Component {
        bot: String,
        #[source]
        source: duel_sandbox::SandboxError,
    },
    /// An endpoint bot that does not answer `Hello` before a match (unreachable,
    /// wrong protocol, wrong ruleset).
    #[error("bot {url}: {reason}")]
    Unreachable { url: String, reason: String },
    /// An endpoint whose address this host may not dial (a private address on
    /// a public service, see `address_policy`), or whose name does not resolve.
    #[error("bot {url}: {reason}")]
    AddressRefused { url: String, reason: String },
    /// The WASM sandbox of this process could not start (engine set-up): the
    /// machine's fault, not the request's.
    #[error("cannot start the WASM sandbox: {0}")]
    Sandbox(#[source] duel_sandbox::SandboxError),
    /// An async runtime could not start.
    #[error("cannot start the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
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
        match error {
            duel_gateway::GatewayError::Config(message) => RefereeError::Config(message),
            serve @ duel_gateway::GatewayError::Serve(_) => RefereeError::Serve(serve.to_string()),
        }
    }
}

impl RefereeError {
    /// Whether the caller's input is at fault (exit code 2, INVALID_ARGUMENT),
    /// as opposed to this machine or a service it depends on.
    pub fn is_bad_input(&self) -> bool {
        match self {
            RefereeError::Spec(_)
            | RefereeError::BotFile { .. }
            | RefereeError::Component { .. }
            | RefereeError::Unreachable { .. }
            | RefereeError::AddressRefused { .. }
            | RefereeError::Config(_) => true,
            RefereeError::Sandbox(_)
            | RefereeError::Runtime(_)
            | RefereeError::Replay(_)
            | RefereeError::Live(_)
            | RefereeError::Fetch(_)
            | RefereeError::Bind { .. }
            | RefereeError::Serve(_) => false,
        }
    }
}
