//! Every bound the sandbox puts on a bot, in one place, with its default, its unit
//! and why it has that value. [`SandboxConfig`] carries them at run time; the
//! `const` assertions at the bottom tie related limits together.
//!
//! Figures quoted here were measured on the 2-core reference machine (see
//! `PERFORMANCE-notes.md`).

use std::path::PathBuf;
use std::time::Duration;

const MIB: usize = 1024 * 1024;

/// The rules' wall clock per decision (RULES-1.0.0.md, "Wall clock"): from handing
/// the observation to the bot to receiving its answer, instantiation and model calls
/// included. Late is a `timeout` substitution.
pub const DECISION_WALL_CLOCK_DEFAULT: Duration = Duration::from_secs(10);

/// How often the background thread advances the engine epoch. The wall clock is
/// enforced to within about one tick, and a spinning guest yields its thread back to
/// the async runtime once per tick. 5 ms held a 50 ms deadline within a few ms.
pub const EPOCH_TICK_DEFAULT: Duration = Duration::from_millis(5);

/// Fuel per decision: the deterministic CPU bound. Out of fuel is a `fault`.
/// A tight loop burns about 1e8 fuel in 9–15 ms here, so 2e10 is roughly 2–3 s of
/// pure computation: well inside the 10 s wall clock, so a runaway loop ends as a
/// reproducible fault rather than a machine-dependent timeout. A Python decision
/// costs ~34k fuel (its first ~150k); a small Rust bot ~50.
pub const FUEL_PER_DECISION_DEFAULT: u64 = 20_000_000_000;

/// Linear memory cap per bot instance (all its memories together). The Python
/// example needs ~13 MiB at rest and ~26 MiB when it builds a 100k-entry dict, so
/// 128 MiB leaves it ample room; a small Rust bot needs ~1 MiB.
pub const MEMORY_BYTES_MAX_DEFAULT: usize = 128 * MIB;

/// Table elements per table. componentize-py bots have indirect-call tables of a
/// few thousand entries; 100k bounds a hostile `table.grow` loop.
pub const TABLE_ELEMENTS_MAX_DEFAULT: usize = 100_000;

/// Core instances, tables and memories a bot's component may create. A Python
/// component instantiates ~10 core instances with a handful of tables and memories.
pub const INSTANCES_MAX_DEFAULT: usize = 64;
pub const TABLES_MAX_DEFAULT: usize = 64;
pub const MEMORIES_MAX_DEFAULT: usize = 16;

/// Bytes of bot output kept per match: `log` lines plus stdout and stderr. The first
/// bytes are kept, the rest are dropped silently (a full pipe would raise
/// `BrokenPipeError` in Python bots and trap them).
pub const LOG_BYTES_PER_MATCH_DEFAULT: usize = 64 * 1024;

/// Bytes of bot output kept per decision and handed back with it (line ends not
/// counted), whatever the per-match log holds: the referee writes them into the
/// replay beside that exchange. What the bot writes beyond this is dropped and
/// the decision's log is marked truncated. 36 decisions at this bound are
/// 144 KiB per match; the referee bounds its replay's share again per match.
pub const LOG_BYTES_PER_DECISION_DEFAULT: usize = 4 * 1024;

/// Lines kept per decision (`log` calls, and stdout/stderr split at `\n`).
pub const LOG_LINES_PER_DECISION_DEFAULT: usize = 32;

/// Bytes kept of one line of a decision's log; a longer line is cut and ends
/// in `…` (the mark counts towards the bound).
pub const LOG_LINE_BYTES_DEFAULT: usize = 300;

/// Compiled components kept in memory, by digest. A compiled Python bot holds
/// ~31 MiB of code, a small Rust bot ~0.5 MiB: 32 entries is at most ~1 GiB.
pub const COMPILED_CACHE_ENTRIES_DEFAULT: usize = 32;

/// The largest WASM upload accepted. The Python example is ~18 MiB.
pub const UPLOAD_BYTES_MAX_DEFAULT: usize = 64 * MIB;

/// How many characters of a failure reason are kept for the replay.
pub const FAILURE_REASON_CHARS_MAX: usize = 200;

/// WebAssembly stack per guest call. wasmtime's default; deep recursion past it is
/// a stack-overflow trap (a `fault`).
pub const WASM_STACK_BYTES_MAX: usize = 512 * 1024;

/// Where guest code runs in async mode; must exceed the wasm stack plus host frames.
pub const ASYNC_STACK_BYTES: usize = 2 * MIB;

/// The instance pool, when the pooling allocator is on: this many bot instances
/// live at once per process (two per running match).
pub const POOL_INSTANCES_DEFAULT: u32 = 256;

/// With the pooling allocator, this much of a freed slot's linear memory is reset
/// in place (only its dirty pages, where the kernel's PAGEMAP_SCAN tells which)
/// and stays mapped, instead of being given back to the kernel: the next bot in
/// the slot then takes no page faults there.
/// A small Rust bot touches well under 1 MiB; a Python bot's ~13 MiB at rest is
/// mostly beyond this and is decommitted as before.
pub const POOL_MEMORY_KEEP_RESIDENT_BYTES: usize = 2 * MIB;

/// The same for tables (a Rust bot's are a few hundred entries).
pub const POOL_TABLE_KEEP_RESIDENT_BYTES: usize = 64 * 1024;

/// Per pool slot, the most core instances, memories and tables reserved (a
/// component may use up to the per-bot maxima above, taking several slots'
/// share; when the totals run out, instances overflow to on-demand
/// allocation). A Python bot has ~10 core instances and 1-2 memories; a Rust
/// bot 1 core instance and 1 memory. Each memory slot reserves 4 GiB plus a
/// 32 MiB guard of address space (never committed unless touched): a pool of
/// 34 instances (16 matches) reserves ~0.5 TiB of the 128 TiB address space.
pub const POOL_CORE_INSTANCES_PER_SLOT: u32 = 16;
pub const POOL_MEMORIES_PER_SLOT: u32 = 4;
pub const POOL_TABLES_PER_SLOT: u32 = 8;

/// Fiber stacks (each [`ASYNC_STACK_BYTES`] plus a guard page) in the pool, per
/// instance slot. A bot's store runs one call at a time, so one stack per slot
/// is enough; the second is slack, so that a stack is never what a decision
/// waits for. wasmtime's default is 1,000 stacks whatever the pool's size, and
/// setting each one's guard page up took 1,000 `mprotect` calls: ~4 ms of
/// every `referee local` with a WASM bot (docs/perf/sandbox.md).
pub const POOL_STACKS_PER_SLOT: u32 = 2;

const _: () = assert!(
    FUEL_PER_DECISION_DEFAULT > 1_000_000,
    "a Python decision must fit"
);
const _: () = assert!(
    MEMORY_BYTES_MAX_DEFAULT >= 64 * MIB,
    "the Python example needs ~26 MiB at peak"
);
const _: () = assert!(ASYNC_STACK_BYTES > WASM_STACK_BYTES_MAX);
const _: () = assert!(
    UPLOAD_BYTES_MAX_DEFAULT >= 32 * MIB,
    "Python bots are ~18 MiB"
);
const _: () = assert!(LOG_BYTES_PER_MATCH_DEFAULT >= 1024);
const _: () = assert!(LOG_LINE_BYTES_DEFAULT <= LOG_BYTES_PER_DECISION_DEFAULT);
const _: () = assert!(
    LOG_LINE_BYTES_DEFAULT >= 8,
    "room for a character and the cut mark"
);
const _: () =
    assert!(EPOCH_TICK_DEFAULT.as_millis() * 100 <= DECISION_WALL_CLOCK_DEFAULT.as_millis());

/// How instance memory is allocated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Allocation {
    /// Allocate each instance's memories and tables when it is created.
    OnDemand,
    /// Pre-reserve slots for this many instances (`Config::allocation_strategy`).
    /// The pool never runs dry: an instance that finds every slot taken is
    /// allocated on demand instead, by a second engine the sandbox keeps for
    /// that (its component deserialized there on first need).
    Pooling { instances: u32 },
}

/// The sandbox's limits and caches. `Default` gives the documented defaults; tests
/// and `referee local --wall-clock` shorten the clock.
#[derive(Clone, Debug)]
pub struct SandboxConfig {
    /// See [`DECISION_WALL_CLOCK_DEFAULT`].
    pub decision_wall_clock: Duration,
    /// See [`EPOCH_TICK_DEFAULT`].
    pub epoch_tick: Duration,
    /// See [`FUEL_PER_DECISION_DEFAULT`].
    pub fuel_per_decision: u64,
    /// See [`MEMORY_BYTES_MAX_DEFAULT`].
    pub memory_bytes_max: usize,
    /// See [`TABLE_ELEMENTS_MAX_DEFAULT`].
    pub table_elements_max: usize,
    pub instances_max: usize,
    pub tables_max: usize,
    pub memories_max: usize,
    /// See [`LOG_BYTES_PER_MATCH_DEFAULT`].
    pub log_bytes_per_match: usize,
    /// See [`LOG_BYTES_PER_DECISION_DEFAULT`].
    pub log_bytes_per_decision: usize,
    /// See [`LOG_LINES_PER_DECISION_DEFAULT`].
    pub log_lines_per_decision: usize,
    /// See [`LOG_LINE_BYTES_DEFAULT`].
    pub log_line_bytes: usize,
    /// See [`COMPILED_CACHE_ENTRIES_DEFAULT`].
    pub compiled_cache_entries: usize,
    /// See [`UPLOAD_BYTES_MAX_DEFAULT`].
    pub upload_bytes_max: usize,
    /// Directory of precompiled artifacts (`<digest>-<engine>.cwasm`); `None` keeps
    /// compiled code in memory only. The directory must be the host's own: its
    /// files are loaded as native code.
    pub disk_cache_dir: Option<PathBuf>,
    /// Instance allocation strategy; see `PERFORMANCE-notes.md` for the trade-off.
    pub allocation: Allocation,
}

impl Default for SandboxConfig {
    fn default() -> SandboxConfig {
        SandboxConfig {
            decision_wall_clock: DECISION_WALL_CLOCK_DEFAULT,
            epoch_tick: EPOCH_TICK_DEFAULT,
            fuel_per_decision: FUEL_PER_DECISION_DEFAULT,
            memory_bytes_max: MEMORY_BYTES_MAX_DEFAULT,
            table_elements_max: TABLE_ELEMENTS_MAX_DEFAULT,
            instances_max: INSTANCES_MAX_DEFAULT,
            tables_max: TABLES_MAX_DEFAULT,
            memories_max: MEMORIES_MAX_DEFAULT,
            log_bytes_per_match: LOG_BYTES_PER_MATCH_DEFAULT,
            log_bytes_per_decision: LOG_BYTES_PER_DECISION_DEFAULT,
            log_lines_per_decision: LOG_LINES_PER_DECISION_DEFAULT,
            log_line_bytes: LOG_LINE_BYTES_DEFAULT,
            compiled_cache_entries: COMPILED_CACHE_ENTRIES_DEFAULT,
            upload_bytes_max: UPLOAD_BYTES_MAX_DEFAULT,
            disk_cache_dir: None,
            allocation: Allocation::OnDemand,
        }
    }
}

impl SandboxConfig {
    /// Rejects configurations that cannot work, with the reason.
    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.decision_wall_clock.is_zero() {
            return Err("decision wall clock must be positive".into());
        }
        if self.epoch_tick.is_zero() || self.epoch_tick > self.decision_wall_clock {
            return Err("epoch tick must be positive and shorter than the wall clock".into());
        }
        if self.fuel_per_decision == 0 {
            return Err("fuel per decision must be positive".into());
        }
        if self.log_line_bytes < '…'.len_utf8() + 1 {
            return Err("a log line must keep at least one byte besides the cut mark".into());
        }
        if self.compiled_cache_entries == 0 {
            return Err("the compiled-component cache needs at least one entry".into());
        }
        if let Allocation::Pooling { instances: 0 } = self.allocation {
            return Err("a pooling allocator needs at least one instance slot".into());
        }
        Ok(())
    }
}
