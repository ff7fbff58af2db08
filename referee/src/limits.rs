//! Every limit of the referee, named and documented in one place.

use std::time::Duration;

/// The rules' wall clock per decision: from sending the observation to receiving
/// the answer. A later answer is discarded and the fallback plays.
pub const DECISION_WALL_CLOCK: Duration = Duration::from_secs(10);

/// The longest `builtin:script:` list accepted; a match has at most 36 decisions,
/// so longer scripts only waste memory.
pub const MAX_SCRIPT_ACTIONS: usize = 1_000;

/// The longest bot spec accepted on the command line or in config, in bytes.
pub const MAX_SPEC_BYTES: usize = 4_096;

/// The longest substitution reason kept in a replay, in bytes; longer reasons are
/// cut so a misbehaving bot cannot bloat the public record.
pub const MAX_REASON_BYTES: usize = 200;

/// How many recent opponent actions `builtin:counter` weighs (older ones count 1).
pub const COUNTER_MEMORY_EXCHANGES: i64 = 12;
