//! The one error type of the match engine. Each edge maps it once: gRPC
//! status in the referee's `grpc/status.rs`, exit codes in the binaries, the
//! ladder's worker into its own.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum MatchError {
    /// A bot spec that cannot be parsed or used as given (bad input).
    #[error("{0}")]
    Spec(String),
    /// A `.wasm` path that cannot be read, or is not a regular file.
    #[error("cannot read bot {}: {reason}", path.display())]
    BotFile {
        path: PathBuf,
        #[source]
        reason: BotFileReason,
    },
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
    Unreachable {
        url: String,
        #[source]
        reason: HelloFailure,
    },
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
    /// The model gateway could not be set up (a models file, a key, TLS roots).
    #[error(transparent)]
    Gateway(#[from] duel_gateway::GatewayError),
    /// A setting (flag, environment variable, request field) out of range.
    #[error("{0}")]
    Config(String),
    /// The process is shutting down: work handed to its threads was dropped.
    #[error("the referee is shutting down")]
    ShuttingDown,
    /// The clock's time could not be written as RFC 3339.
    #[error("cannot format the current time: {0}")]
    Clock(#[source] time::error::Format),
}

/// Why a bot's `.wasm` file could not be read (the path is the error's).
#[derive(Debug, thiserror::Error)]
pub enum BotFileReason {
    #[error("not a regular file (a {kind})")]
    NotRegular { kind: &'static str },
    #[error("{size_bytes} bytes, more than the {limit_bytes}-byte limit")]
    TooLarge { size_bytes: u64, limit_bytes: u64 },
    #[error("not read within {deadline_ms} ms")]
    Stalled { deadline_ms: u64 },
    #[error("{0}")]
    Io(#[source] std::io::Error),
    #[error("{0}")]
    File(#[source] duel_files::FileError),
}

impl From<duel_files::FileError> for BotFileReason {
    fn from(error: duel_files::FileError) -> BotFileReason {
        match error {
            duel_files::FileError::NotRegular { kind, .. } => BotFileReason::NotRegular { kind },
            duel_files::FileError::TooLarge {
                size_bytes,
                limit_bytes,
                ..
            } => BotFileReason::TooLarge {
                size_bytes,
                limit_bytes,
            },
            duel_files::FileError::Stalled { deadline_ms, .. } => {
                BotFileReason::Stalled { deadline_ms }
            }
            duel_files::FileError::Io { source, .. } => BotFileReason::Io(source),
            other => BotFileReason::File(other),
        }
    }
}

/// Why an endpoint bot did not answer `Hello` as a match needs.
#[derive(Debug, Clone, thiserror::Error)]
pub enum HelloFailure {
    /// An error status (its message's first line: a bot's text, kept short).
    #[error("Hello failed ({code:?}): {message}")]
    Status { code: tonic::Code, message: String },
    #[error("no answer to Hello within {timeout_ms} ms")]
    NoAnswer { timeout_ms: u128 },
    /// The bot names the rulesets it speaks, and not this referee's.
    #[error("speaks ruleset {spoken}, not {ours}")]
    OtherRuleset { spoken: String, ours: &'static str },
}

impl MatchError {
    /// Whether the caller's input is at fault (exit code 2, INVALID_ARGUMENT),
    /// as opposed to this machine or a service it depends on.
    pub fn is_bad_input(&self) -> bool {
        match self {
            MatchError::Spec(_)
            | MatchError::BotFile { .. }
            | MatchError::Component { .. }
            | MatchError::Unreachable { .. }
            | MatchError::AddressRefused { .. }
            | MatchError::Config(_) => true,
            MatchError::Gateway(duel_gateway::GatewayError::Config(_)) => true,
            MatchError::Gateway(_)
            | MatchError::Sandbox(_)
            | MatchError::Runtime(_)
            | MatchError::Replay(_)
            | MatchError::ShuttingDown
            | MatchError::Clock(_) => false,
        }
    }
}
