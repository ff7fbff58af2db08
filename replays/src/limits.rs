//! Every bound this crate enforces, in one place.

/// The largest replay file accepted. The longest match (36 exchanges) is ~25 KiB
/// of pretty JSON; fault reasons and names are bounded by their writers. 16 MiB
/// leaves room for later additions while keeping a hostile file from exhausting
/// memory.
pub const MAX_REPLAY_BYTES: u64 = 16 * 1024 * 1024;

/// The largest signing-key file read. A key file holds 45 bytes of base64.
pub const MAX_KEY_FILE_BYTES: u64 = 4 * 1024;

/// The longest replay id (a match id) a store accepts, in bytes. Ids are UUIDs
/// (36 bytes) in practice; the bound keeps object keys and file names short.
pub const MAX_REPLAY_ID_BYTES: usize = 128;

/// The most replays one listing page returns.
pub const MAX_PAGE_REPLAYS: usize = 100;

/// The most index entries one listing request reads before it returns a shorter
/// page with a cursor, so a filter matching little cannot make one request scan
/// the whole store.
pub const MAX_LISTING_SCAN: usize = 2_000;

/// The longest filter value (bot, season) a listing accepts, in bytes.
pub const MAX_FILTER_BYTES: usize = 256;

/// The longest listing cursor accepted, in bytes.
pub const MAX_CURSOR_BYTES: usize = 256;

/// The zstd level replays are stored at: level 19 takes ~10 ms per replay and
/// saves little over 9 on 3-30 KiB of JSON; 9 keeps writes cheap.
pub const ZSTD_LEVEL: i32 = 9;

/// The longest opening a replay may record, in exchanges: the start of a match
/// (tournament and SPRT openings), never a whole round.
pub const MAX_OPENING_EXCHANGES: usize = 8;

/// The largest integer a replay or a transcript may hold: 2^53 − 1, the
/// largest that RFC 8785 (which writes numbers as IEEE doubles) writes
/// exactly, so a signature binds every value up to it. Seeds are drawn and
/// accepted within it; tokens, latencies and counts stay far below.
pub const JSON_INTEGER_MAX: u64 = (1 << 53) - 1;

/// The largest transcript file accepted. A transcript is bounded by its
/// writer per decision and per match (the referee's limits), well under this.
pub const MAX_TRANSCRIPT_BYTES: u64 = 64 * 1024 * 1024;
