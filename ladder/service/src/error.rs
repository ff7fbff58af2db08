//! The one error type of the ladder service: what the store refused or
//! failed with ([`LadderError`], as it is), beside what only the service
//! does: listening, starting the match host, validating bots, and playing
//! and publishing matches. A cause of another crate is kept as the variant's
//! `source`, not copied into a string, and its words end the message, as the
//! store's do (`database error: …`): an owner reads one line. [`one_line`]
//! renders an error with the causes its message does not already quote.

use std::net::SocketAddr;

use duel_referee::MatchError;
use duel_replays::{ReplayError, SignatureFailure};
use duel_rules::UnknownRuleset;
use duel_sandbox::SandboxError;

pub use duel_ladder_store::LadderError;

use crate::limits::{MAX_URL_BYTES, MAX_WASM_BYTES};

#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// What the store refused (permissions, quotas, a missing bot…) or failed
    /// with (the database).
    #[error(transparent)]
    Ladder(#[from] LadderError),
    /// A bot upload or endpoint refused by validation, or a stored bot the
    /// match host cannot build: voids its match rather than running it again.
    #[error("bot rejected: {0}")]
    BotRejected(#[source] Rejection),
    /// A match whose row pins a ruleset or budget other than this worker's:
    /// it cannot be played as accepted (voided rather than run again).
    #[error("rules mismatch: {0}")]
    RulesMismatch(#[source] PinnedRules),
    /// The match engine failed (building fighters, playing, publishing),
    /// not for the bots' fault: the match runs again after its lease.
    #[error(transparent)]
    Match(#[from] MatchError),
    /// Publishing the replay took longer than the lease allows.
    #[error("publishing the replay to {store} took more than {ms} ms")]
    PublishTimedOut { store: String, ms: i64 },
    /// The replay an earlier run of a match published cannot be used.
    #[error("published replay of {match_id}: {fault}")]
    PublishedReplay {
        match_id: String,
        #[source]
        fault: PublishedReplayFault,
    },
    /// A listener could not be opened.
    #[error("cannot listen on {address} ({what}): {source}")]
    Listen {
        address: SocketAddr,
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// An opened listener has no local address.
    #[error("{what} socket: {source}")]
    Socket {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// The match host's start-up task ended without a host.
    #[error("cannot start the match host: {0}")]
    HostStart(#[source] tokio::task::JoinError),
    /// The gRPC server stopped on an error.
    #[error("gRPC server: {0}")]
    Grpc(#[source] tonic::transport::Error),
    /// The turns to validate uploads are gone (the ladder is shutting down).
    #[error("the compile queue is closed")]
    CompileQueueClosed(#[source] tokio::sync::AcquireError),
}

/// Why a bot was refused.
#[derive(Debug, thiserror::Error)]
pub enum Rejection {
    /// The match engine refused it: a spec it cannot parse, an endpoint it
    /// cannot reach before a match, a component it cannot build.
    #[error(transparent)]
    Match(MatchError),
    /// The sandbox cannot load the component.
    #[error(transparent)]
    Sandbox(SandboxError),
    #[error("upload is {bytes} bytes, over the cap of {MAX_WASM_BYTES} bytes")]
    TooLarge { bytes: usize },
    #[error("endpoint URL longer than {MAX_URL_BYTES} bytes")]
    UrlTooLong,
    #[error(
        "endpoint {url:?} is a loopback, private or link-local address (the operator may allow them with --allow-private-endpoints)"
    )]
    PrivateAddress { url: String },
    #[error("endpoint did not answer Hello: {0}")]
    NoHello(#[source] MatchError),
    #[error(
        "endpoint {url} plays rulesets [{}], not {current} (the ruleset this ladder runs)",
        offered.join(", ")
    )]
    OtherRulesets {
        url: String,
        offered: Vec<String>,
        current: &'static str,
    },
    /// The built-in-only worker (`ladder bench`) met another kind of bot.
    #[error("{kind} bots cannot run in the built-in-only worker")]
    NotBuiltin { kind: &'static str },
}

/// How a match row's pinned rules differ from the ones this worker plays.
#[derive(Debug, thiserror::Error)]
pub enum PinnedRules {
    #[error("match pins {0}")]
    UnknownRuleset(#[source] UnknownRuleset),
    #[error("match pins ruleset {pinned}, this worker plays {plays}")]
    Ruleset {
        pinned: &'static str,
        plays: &'static str,
    },
    #[error(
        "match pins a budget of {pinned} tokens, but ruleset {ruleset} gives class {class} {budget}"
    )]
    Budget {
        pinned: i64,
        ruleset: &'static str,
        class: &'static str,
        budget: u64,
    },
}

/// Why a published replay cannot be settled with.
#[derive(Debug, thiserror::Error)]
pub enum PublishedReplayFault {
    #[error(transparent)]
    Unreadable(#[from] ReplayError),
    #[error("refused as a conflict, then not found")]
    Missing,
    /// Debug-printed, as the run's cause has always named it.
    #[error("signature: {0:?}")]
    Signature(SignatureFailure),
    #[error("it names match {0}")]
    OtherMatch(String),
}

impl ServiceError {
    /// This error in one line with its causes (see [`one_line`]).
    pub fn line(&self) -> String {
        one_line(self)
    }
}

impl From<Rejection> for ServiceError {
    fn from(rejection: Rejection) -> ServiceError {
        ServiceError::BotRejected(rejection)
    }
}

impl From<PinnedRules> for ServiceError {
    fn from(pinned: PinnedRules) -> ServiceError {
        ServiceError::RulesMismatch(pinned)
    }
}

impl From<duel_ladder_core::CoreError> for ServiceError {
    fn from(error: duel_ladder_core::CoreError) -> ServiceError {
        ServiceError::Ladder(error.into())
    }
}

impl From<ReplayError> for ServiceError {
    fn from(error: ReplayError) -> ServiceError {
        ServiceError::Ladder(error.into())
    }
}

/// An error and its causes on one line, each cause once (the match engine's
/// printer: a message that already quotes its cause, the database's say, is
/// not followed by it again).
pub use duel_referee::terminal::error_line as one_line;

pub type Result<T, E = ServiceError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    /// Each cause once, in order; one the message already quotes is not
    /// repeated.
    #[tokio::test]
    async fn one_line_names_each_cause_once() {
        let rejected = ServiceError::BotRejected(Rejection::TooLarge { bytes: 9 });
        assert_eq!(
            rejected.line(),
            format!("bot rejected: upload is 9 bytes, over the cap of {MAX_WASM_BYTES} bytes")
        );
        assert_eq!(rejected.line(), rejected.to_string());
        let listen = ServiceError::Listen {
            address: "127.0.0.1:1".parse().expect("address"),
            what: "gRPC",
            source: std::io::Error::new(std::io::ErrorKind::AddrInUse, "address in use"),
        };
        assert_eq!(
            listen.line(),
            "cannot listen on 127.0.0.1:1 (gRPC): address in use"
        );
        let mismatch = ServiceError::from(PinnedRules::Ruleset {
            pinned: "0.9.0",
            plays: "1.0.0",
        });
        assert_eq!(
            mismatch.line(),
            "rules mismatch: match pins ruleset 0.9.0, this worker plays 1.0.0"
        );
        // A store error whose message quotes its source, as the database's do.
        let hung_up = sqlx::Error::Protocol("the server hung up".to_owned());
        let words = hung_up.to_string();
        let database = ServiceError::from(LadderError::Database(hung_up));
        assert_eq!(database.line(), format!("database error: {words}"));
        // A cause the message does not quote is added after it.
        let turns = tokio::sync::Semaphore::new(1);
        turns.close();
        let acquired = turns.acquire().await.expect_err("closed");
        let words = acquired.to_string();
        let closed = ServiceError::CompileQueueClosed(acquired);
        assert_eq!(
            closed.line(),
            format!("the compile queue is closed: {words}")
        );
    }
}
