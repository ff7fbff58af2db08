//! The plumbing both binaries (`referee`, `ladder`) share around their work,
//! so it is written once: how a command ends ([`outcome`]), the stop signal
//! ([`shutdown`]), log lines ([`logging`]), where the replay signing key is
//! ([`signing_key`]), the HTTP listener with its connection cap and timeouts
//! ([`listen`]) with the security headers of every answer ([`headers`]) and
//! who its clients are ([`clients`], [`proxy_protocol`]), the gRPC listeners' connection limits ([`grpc_listen`]),
//! the `/metrics` route ([`metrics`]) and how a failure reaches
//! an HTTP client ([`reply`]).
//!
//! Architecture invariant: nothing here knows the rules, matches or the
//! ladder; it depends on `duel-replays` for the key file only.

pub mod clients;
pub mod grpc_listen;
pub mod headers;
pub mod limits;
pub mod listen;
pub mod logging;
pub mod metrics;
pub mod outcome;
pub mod proxy_protocol;
pub mod reply;
pub mod shutdown;
pub mod signing_key;

pub use outcome::{EXIT_ERROR, Outcome};
pub use shutdown::Shutdown;

/// Everything this crate's functions can fail with.
#[derive(Debug, thiserror::Error)]
pub enum PlumbingError {
    /// The ctrl-c / SIGTERM listener could not be installed.
    #[error("{0}")]
    Signal(String),
    /// No signing key path was given and none can be derived.
    #[error("{0}")]
    NoKeyPath(String),
    #[error(transparent)]
    Replay(#[from] duel_replays::ReplayError),
}
