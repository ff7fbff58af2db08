//! Every bound this crate enforces, in one place.

/// The largest replay file accepted. The longest match (36 exchanges) is ~25 KiB
/// of pretty JSON; fault reasons and names are bounded by their writers. 16 MiB
/// leaves room for later additions while keeping a hostile file from exhausting
/// memory.
pub const MAX_REPLAY_BYTES: u64 = 16 * 1024 * 1024;
