//! The crate's one error type, and the failure of a single decision.

use std::fmt;

use duel_rules::Source;

/// Why the sandbox could not be built or a bot could not be loaded. Decisions do
/// not fail with this type: see [`DecideFailure`].
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("invalid sandbox configuration: {0}")]
    Config(String),
    #[error("could not set up the wasm engine: {0}")]
    Engine(String),
    #[error("upload is {size} bytes, over the cap of {cap} bytes")]
    TooLarge { size: usize, cap: usize },
    #[error("not a WebAssembly component: {0}")]
    NotAComponent(String),
    #[error("invalid component: {0}")]
    InvalidComponent(String),
    #[error("not a duel:bot component: {0}")]
    WrongWorld(String),
    #[error("disk cache {path}: {reason}")]
    DiskCache { path: String, reason: String },
}

/// The reason a replay records when a decision's wall clock ran out. The
/// sandbox's epoch interrupt, its timer around a bot blocked in a host call,
/// and the referee's own timer may each notice first, whichever the scheduler
/// runs first at the deadline; one wording keeps the replay the same.
pub fn timeout_reason(wall_clock: std::time::Duration) -> String {
    format!("no answer within {} ms", wall_clock.as_millis())
}

/// What a failed decision becomes in the replay's `source` column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FailureCause {
    /// The wall clock ran out (epoch deadline, or the outer timer for a sleeper).
    Timeout,
    /// A trap, a limit hit (fuel, memory, tables), a panic, an exit, a bad return.
    Fault,
}

impl FailureCause {
    /// The substitution source the referee records.
    pub const fn source(self) -> Source {
        match self {
            FailureCause::Timeout => Source::Timeout,
            FailureCause::Fault => Source::Fault,
        }
    }
}

/// A decision that produced no usable action: the fallback plays that exchange.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecideFailure {
    pub cause: FailureCause,
    /// Short, one line, for the replay (at most
    /// [`FAILURE_REASON_CHARS_MAX`](crate::limits::FAILURE_REASON_CHARS_MAX) chars).
    pub reason: String,
}

impl DecideFailure {
    pub(crate) fn new(cause: FailureCause, reason: impl Into<String>) -> DecideFailure {
        DecideFailure {
            cause,
            reason: short_reason(&reason.into()),
        }
    }
}

impl fmt::Display for DecideFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.cause.source(), self.reason)
    }
}

impl std::error::Error for DecideFailure {}

/// First line, bounded length, no control characters.
pub(crate) fn short_reason(text: &str) -> String {
    let line = text.lines().next().unwrap_or("").trim();
    line.chars()
        .filter(|c| !c.is_control())
        .take(crate::limits::FAILURE_REASON_CHARS_MAX)
        .collect()
}
