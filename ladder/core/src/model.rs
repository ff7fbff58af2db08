//! The ladder's records as the library hands them out (plain data; the gRPC
//! layer converts them to `duel.v1` messages).

use duel_rules::WeightClass;

use crate::error::{CoreError, Result};

/// How a bot version is run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BotKind {
    Builtin,
    Wasm,
    Endpoint,
}

impl BotKind {
    pub fn name(self) -> &'static str {
        match self {
            BotKind::Builtin => "builtin",
            BotKind::Wasm => "wasm",
            BotKind::Endpoint => "endpoint",
        }
    }

    pub fn from_name(name: &str) -> Result<BotKind> {
        match name {
            "builtin" => Ok(BotKind::Builtin),
            "wasm" => Ok(BotKind::Wasm),
            "endpoint" => Ok(BotKind::Endpoint),
            other => Err(CoreError::corrupt(format!("unknown bot kind {other:?}"))),
        }
    }
}

/// What a new bot version is made of, after validation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BotSource {
    pub kind: BotKind,
    /// The canonical built-in spec, the endpoint URL, or the WASM digest.
    pub spec: String,
    /// `sha256:` of the component, or of the spec for built-in and endpoint bots.
    pub digest: String,
    pub wasm: Option<Vec<u8>>,
}

impl BotSource {
    /// A built-in bot of the canonical `spec` (`builtin:random`), with its
    /// digest.
    pub fn builtin(spec: String) -> BotSource {
        BotSource {
            kind: BotKind::Builtin,
            digest: sha256_digest(spec.as_bytes()),
            spec,
            wasm: None,
        }
    }
}

/// What one owner may keep and spend (`ladder serve --max-versions-per-owner`,
/// `--max-stored-bytes-per-owner`, `--compile-seconds-per-day`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OwnerQuotas {
    /// Bot versions across all of the owner's bots.
    pub max_bot_versions: u64,
    /// Bytes of the distinct WASM components the owner's versions reference
    /// (one component uploaded twice counts once).
    pub max_stored_bytes: u64,
    /// Seconds the owner's uploads may spend being validated (compiled) per UTC day.
    pub compile_seconds_per_day: u64,
}

impl Default for OwnerQuotas {
    fn default() -> OwnerQuotas {
        OwnerQuotas {
            max_bot_versions: crate::limits::DEFAULT_MAX_BOT_VERSIONS_PER_OWNER,
            max_stored_bytes: crate::limits::DEFAULT_MAX_STORED_BYTES_PER_OWNER,
            compile_seconds_per_day: crate::limits::DEFAULT_COMPILE_SECONDS_PER_DAY_PER_OWNER,
        }
    }
}

/// What one owner uses against its [`OwnerQuotas`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OwnerUsage {
    pub bot_versions: i64,
    pub stored_bytes: i64,
    /// Milliseconds of validation (compiling) today, UTC.
    pub compile_ms_today: i64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BotVersion {
    pub version: i64,
    pub kind: BotKind,
    pub spec: String,
    pub digest: String,
    pub created_ms: i64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bot {
    pub id: String,
    pub name: String,
    pub owner_id: String,
    pub owner_name: String,
    pub class: WeightClass,
    pub current_version: i64,
    /// Oldest first; the last is the current version.
    pub versions: Vec<BotVersion>,
    /// Whether it plays continuously (`ladder bot activate`).
    pub play: Play,
    /// What its owner says about it (`ladder bot edit`).
    pub profile: crate::profile::BotProfile,
}

/// A bot's continuous ranked play.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Play {
    /// Plays only when enqueued.
    #[default]
    Inactive,
    /// In every pairing wave of its class (once its last match settled and the
    /// operator's match interval passed), staking `stake` each match.
    Active { stake: i64, since_ms: i64 },
    /// Activated, but the ladder stopped pairing it; activating again resumes.
    Paused {
        stake: i64,
        since_ms: i64,
        reason: String,
    },
}

impl Play {
    /// `inactive`, `active` or `paused`.
    pub fn state_name(&self) -> &'static str {
        match self {
            Play::Inactive => "inactive",
            Play::Active { .. } => "active",
            Play::Paused { .. } => "paused",
        }
    }

    pub fn stake(&self) -> Option<i64> {
        match self {
            Play::Inactive => None,
            Play::Active { stake, .. } | Play::Paused { stake, .. } => Some(*stake),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueEntry {
    pub bot_id: String,
    pub bot_name: String,
    pub owner_id: String,
    pub class: WeightClass,
    pub stake: i64,
    pub enqueued_ms: i64,
    pub waves_waited: i64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatchState {
    /// Accepted, stakes in escrow, waiting for a worker.
    Queued,
    /// Claimed by a worker holding a lease.
    Running,
    Settled,
    /// Stakes returned without a result.
    Voided,
}

impl MatchState {
    pub fn name(self) -> &'static str {
        match self {
            MatchState::Queued => "queued",
            MatchState::Running => "running",
            MatchState::Settled => "settled",
            MatchState::Voided => "voided",
        }
    }

    pub fn from_name(name: &str) -> Result<MatchState> {
        match name {
            "queued" => Ok(MatchState::Queued),
            "running" => Ok(MatchState::Running),
            "settled" => Ok(MatchState::Settled),
            "voided" => Ok(MatchState::Voided),
            other => Err(CoreError::Invalid(format!(
                "unknown match state {other:?} (queued, running, settled, voided)"
            ))),
        }
    }
}

/// The result a worker reports: the rules' own [`Winner`], stored by its
/// name (`a`, `b`, `draw`).
pub use duel_rules::Winner;

/// A stored winner's name read back; anything else in the database is
/// corrupt.
pub fn winner_from_name(name: &str) -> Result<Winner> {
    Winner::from_name(name).ok_or_else(|| CoreError::corrupt(format!("unknown winner {name:?}")))
}

/// One side of a match: the exact bot version that plays it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatchSide {
    pub bot_id: String,
    pub bot_name: String,
    pub version: i64,
    pub owner_id: String,
    pub stake: i64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Match {
    pub id: String,
    pub season_id: i64,
    pub class: WeightClass,
    pub ruleset: String,
    pub budget: i64,
    /// The rake in force at acceptance, in basis points: a later change of the
    /// setting applies only to matches accepted after it.
    pub rake_bp: i64,
    pub seed: i64,
    /// Exchanges forced at the start, drawn from `seed`
    /// (crate::limits::RANKED_OPENING_EXCHANGES when accepted; 0 for matches
    /// accepted before ranked openings).
    pub opening_exchanges: i64,
    pub sides: [MatchSide; 2],
    pub state: MatchState,
    pub attempts: i64,
    pub accepted_ms: i64,
    pub finished_ms: Option<i64>,
    pub winner: Option<Winner>,
    pub replay_path: Option<String>,
    pub note: Option<String>,
    /// Why its last run failed, as its owners may read it
    /// (crate::failure::public_cause); `None` while no run failed.
    pub last_failure: Option<String>,
    /// The rated match of its season this one repeats move for move: then it
    /// moved no rating (crate::repeat). `None` for a rated or unsettled match.
    pub repeat_of: Option<String>,
    /// Why it moved no rating (crate::repeat::Verdict::not_rated): `repeat`,
    /// `pair_rated`; `None` for a rated or unsettled match.
    pub not_rated: Option<String>,
}

/// What a worker read off a played match's replay and settles with it: the
/// repeat rule's key, and the facts listings and the cost of a win show.
#[derive(Clone, Debug, PartialEq)]
pub struct PlayRecord {
    /// [`crate::repeat::play_key`] of the game played.
    pub play_key: String,
    /// Rounds won and damage dealt by side `a`, then `b`.
    pub round_wins: [i64; 2],
    pub damage: [i64; 2],
    /// Exchanges played in all rounds.
    pub exchanges: i64,
    /// Model tokens each side spent.
    pub tokens: [i64; 2],
    /// What each side's model calls cost in US dollars at the catalogue's
    /// prices the replay recorded; `None` when a model it called had no price.
    pub cost_usd: [Option<f64>; 2],
    /// Decisions each side lost to the fallback, by cause.
    pub fallbacks: [Fallbacks; 2],
    /// Each side's model calls, one entry per side and model called: what the
    /// replay says was called, not what the owner declared.
    pub models: Vec<ModelUse>,
}

/// Decisions a fighter lost to the fallback in one match, by the rules'
/// three causes ("Substitution").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fallbacks {
    /// The answer came after the wall clock ran out.
    pub timeout: i64,
    /// Gassed out: the budget was spent, or a call was refused.
    pub budget: i64,
    /// A crash, trap, malformed or illegal answer, or a lost connection.
    pub fault: i64,
}

impl Fallbacks {
    pub fn total(&self) -> i64 {
        self.timeout
            .saturating_add(self.budget)
            .saturating_add(self.fault)
    }
}

/// One side's calls to one catalogue model in one match, as the replay
/// recorded them (calls that reached the model).
#[derive(Clone, Debug, PartialEq)]
pub struct ModelUse {
    /// 0 for side `a`, 1 for side `b`.
    pub side: usize,
    /// The catalogue name.
    pub model: String,
    pub calls: i64,
    /// Tokens charged for them.
    pub tokens: i64,
    /// At the catalogue prices the replay recorded; `None` without a price.
    pub cost_usd: Option<f64>,
}

/// The facts of a settled match beside its result (all `None` for a match
/// settled without a [`PlayRecord`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PlayFacts {
    pub round_wins: Option<[i64; 2]>,
    pub damage: Option<[i64; 2]>,
    pub exchanges: Option<i64>,
    pub tokens: Option<[i64; 2]>,
    pub cost_usd: [Option<f64>; 2],
}

/// A match a worker holds, with what it needs to run it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claim {
    pub lease_id: String,
    pub lease_expires_ms: i64,
    pub game: Match,
    pub versions: [BotVersion; 2],
    /// The name of the match's season (the replay carries it).
    pub season_name: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Season {
    pub id: i64,
    pub name: String,
    pub started_ms: i64,
    pub ended_ms: Option<i64>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Standing {
    pub rank: i64,
    pub bot_id: String,
    pub bot_name: String,
    pub owner_name: String,
    pub class: WeightClass,
    pub rating: f64,
    pub deviation: f64,
    pub volatility: f64,
    pub conservative: f64,
    pub provisional: bool,
    pub games: i64,
    pub wins: i64,
    pub losses: i64,
    pub draws: i64,
}

/// `sha256:` and the lowercase hex of the SHA-256 of `bytes`: how a bot's
/// bytes or spec are named (the same form as the referee's).
pub fn sha256_digest(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let mut text = String::with_capacity(7 + 64);
    text.push_str("sha256:");
    for byte in Sha256::digest(bytes) {
        text.push_str(&format!("{byte:02x}"));
    }
    text
}

pub fn class_from_name(name: &str) -> Result<WeightClass> {
    WeightClass::from_name(name).ok_or_else(|| {
        CoreError::Invalid(format!(
            "unknown weight class {name:?} (light, middle, heavy)"
        ))
    })
}

/// Names of bots, accounts and seasons: 1–64 ASCII letters, digits, `-`, `_`,
/// `.`, neither starting nor ending with `.` (names are path segments of the
/// site and the replay store: `.` and `..` would walk them, and `bot.` would
/// pass for `bot`). Unique whatever their letter case (the store's indexes).
pub fn check_name(what: &str, name: &str) -> Result<()> {
    if name.starts_with('.') || name.ends_with('.') {
        return Err(CoreError::Invalid(format!(
            "{what} name {name:?} may not start or end with '.'"
        )));
    }
    let ok = !name.is_empty()
        && name.len() <= crate::limits::MAX_NAME_BYTES
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.'));
    if ok {
        Ok(())
    } else {
        Err(CoreError::Invalid(format!(
            "{what} name {name:?} must be 1 to {} characters of letters, digits, '-', '_' or '.'",
            crate::limits::MAX_NAME_BYTES
        )))
    }
}

/// Account names the ledger's own accounts use (`ledger check` and balances
/// show them): an owner or operator named so would read as the house.
pub const RESERVED_ACCOUNT_NAMES: [&str; 3] = ["house", "issuance", "escrow"];

/// An account's name: a [`check_name`] name, and none of
/// [`RESERVED_ACCOUNT_NAMES`] in any letter case.
pub fn check_account_name(name: &str) -> Result<()> {
    check_name("account", name)?;
    if RESERVED_ACCOUNT_NAMES
        .iter()
        .any(|reserved| reserved.eq_ignore_ascii_case(name))
    {
        return Err(CoreError::Invalid(format!(
            "account name {name:?} is reserved for the ledger's own accounts"
        )));
    }
    Ok(())
}

/// How long bots' logs are kept and how much one owner keeps
/// (crate::limits::DEFAULT_LOG_RETENTION_DAYS and its neighbours).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogLimits {
    pub retention_days: u32,
    pub max_bytes_per_owner: u64,
}

impl Default for LogLimits {
    fn default() -> LogLimits {
        LogLimits {
            retention_days: crate::limits::DEFAULT_LOG_RETENTION_DAYS,
            max_bytes_per_owner: crate::limits::DEFAULT_MAX_LOG_BYTES_PER_OWNER,
        }
    }
}

impl LogLimits {
    /// Logs kept before this instant are past their retention at `now_ms`.
    pub fn cutoff_ms(&self, now_ms: i64) -> i64 {
        retention_cutoff_ms(self.retention_days, now_ms)
    }
}

/// How long ranked matches' transcripts are kept and how many bytes of
/// them one owner keeps (crate::limits::DEFAULT_TRANSCRIPT_RETENTION_DAYS and
/// its neighbours).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TranscriptLimits {
    pub retention_days: u32,
    pub max_bytes_per_owner: u64,
}

impl Default for TranscriptLimits {
    fn default() -> TranscriptLimits {
        TranscriptLimits {
            retention_days: crate::limits::DEFAULT_TRANSCRIPT_RETENTION_DAYS,
            max_bytes_per_owner: crate::limits::DEFAULT_MAX_TRANSCRIPT_BYTES_PER_OWNER,
        }
    }
}

impl TranscriptLimits {
    /// Transcripts kept before this instant are past their retention at `now_ms`.
    pub fn cutoff_ms(&self, now_ms: i64) -> i64 {
        retention_cutoff_ms(self.retention_days, now_ms)
    }
}

fn retention_cutoff_ms(retention_days: u32, now_ms: i64) -> i64 {
    now_ms.saturating_sub(i64::from(retention_days).saturating_mul(86_400_000))
}

/// What one bot wrote while deciding one exchange of a ranked match.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ExchangeLog {
    pub round: u8,
    pub exchange: u8,
    pub lines: Vec<String>,
    /// Lines were cut or dropped by the referee's bounds.
    #[serde(default)]
    pub truncated: bool,
}

/// One side's logs of a ranked match, kept for the bot's owner.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SideLogs {
    pub side: duel_rules::Side,
    pub owner_id: String,
    pub exchanges: Vec<ExchangeLog>,
}

/// The last pairing wave of one class.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WaveRecord {
    pub season_id: i64,
    pub at_ms: i64,
    /// Bots in its pool (queued and ready active ones).
    pub pool: i64,
    pub pairs: i64,
    pub duration_ms: i64,
}

/// One class at a glance, for `ladder status`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassStatus {
    pub class: WeightClass,
    /// Registered bots of the class.
    pub bots: i64,
    /// In the one-shot queue.
    pub queued: i64,
    /// Playing continuously (not paused).
    pub active: i64,
    pub paused: i64,
    /// Matches of the season shown, by state: accepted (waiting for a
    /// worker), running (leased), settled and voided.
    pub accepted: i64,
    pub running: i64,
    pub settled: i64,
    pub voided: i64,
    pub last_wave: Option<WaveRecord>,
}

/// The ladder at a glance, for `ladder status`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LadderStatus {
    /// The running season; `None` between seasons.
    pub season: Option<Season>,
    /// The season that ended last, if any.
    pub last_ended: Option<Season>,
    /// Light, middle, heavy.
    pub classes: Vec<ClassStatus>,
}

/// Milliseconds since the epoch as `YYYY-MM-DD HH:MM:SS UTC`, for people
/// (`ladder status`, the site's pages).
pub fn utc_text(ms: i64) -> String {
    match time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000) {
        Ok(at) => format!(
            "{:04}-{:02}-{:02} {:02}:{:02}:{:02} UTC",
            at.year(),
            u8::from(at.month()),
            at.day(),
            at.hour(),
            at.minute(),
            at.second()
        ),
        Err(_) => format!("{ms} ms after the epoch"),
    }
}

/// A stored time (milliseconds since the epoch) in RFC 3339, as replays
/// carry `accepted_at`; corrupt when no date has it.
pub fn rfc3339(ms: i64) -> Result<String> {
    let nanos = i128::from(ms) * 1_000_000;
    time::OffsetDateTime::from_unix_timestamp_nanos(nanos)
        .ok()
        .and_then(|at| {
            at.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .ok_or_else(|| CoreError::corrupt(format!("stored acceptance time {ms} ms")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_as_a_table() {
        for good in ["counter", "v1.2", "a-b_c", "x"] {
            assert!(check_name("bot", good).is_ok(), "{good}");
        }
        for bad in [
            "",
            ".",
            "..",
            ".hidden",
            "trailing.",
            "a/b",
            "ünï",
            "a b",
            &"x".repeat(65),
        ] {
            assert!(check_name("bot", bad).is_err(), "{bad:?}");
        }
        for reserved in ["house", "House", "ISSUANCE", "escrow"] {
            let refused = check_account_name(reserved).expect_err(reserved);
            assert!(refused.to_string().contains("reserved"), "{refused}");
        }
        assert!(check_account_name("alice").is_ok());
        assert!(check_account_name("housekeeper").is_ok());
    }
}
