//! The `duel-replay/1` JSON shape (DESIGN.md "Replay format") and its reading and
//! writing. Field names are a contract; fields may be added, never renamed.

use std::borrow::Cow;
use std::path::Path;
use std::sync::Arc;

use duel_rules::{Action, Ruleset, Source, WeightClass, Winner};
use serde::{Deserialize, Serialize};

use crate::error::ReplayError;
use crate::limits::MAX_REPLAY_BYTES;

/// The format tag of every replay this crate writes.
pub const FORMAT: &str = "duel-replay/1";

/// The `signature` member of a signed replay (made and checked in `sign.rs`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplaySignature {
    pub alg: String,
    /// The signer's public key, standard base64 of its 32 bytes.
    pub key: String,
    /// Standard base64 of the 64-byte signature over the canonical bytes.
    pub sig: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Replay {
    /// [`FORMAT`] in every replay written here; borrowed, since a replay is
    /// built per match and these two are constants.
    pub format: Cow<'static, str>,
    /// The ruleset's version (`Ruleset::version`).
    pub ruleset: Cow<'static, str>,
    pub match_id: String,
    /// RFC 3339 time the match was accepted (pins the ruleset in force).
    pub accepted_at: String,
    pub class: ClassName,
    /// Token budget per fighter for the whole match.
    pub budget: u64,
    pub seed: u64,
    /// The wall clock per decision in force, in milliseconds (10,000 under the
    /// rules; shorter in tests). Absent in replays written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_clock_ms: Option<u64>,
    /// The ladder season of a ranked match (its name); absent for other matches.
    /// Replay listings filter on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub season: Option<String>,
    /// The match this one was forked from, and where (`referee local
    /// --from`); absent for every match that is not a fork. A fork is never
    /// ranked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fork: Option<crate::fork::ForkRecord>,
    /// Exchanges forced for both fighters at the start of the match (a
    /// tournament's or an SPRT run's opening): per exchange, the actions of `a`
    /// and `b`. The fighters were not asked for them. Absent when there was none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub opening: Vec<[ActionName; 2]>,
    /// Fighter `a` (the first bot spec given), then `b`.
    pub fighters: [FighterInfo; 2],
    /// Each catalogue model that some call of the match named, with its
    /// prices when the catalogue gave them. Absent when no call named one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<ModelPrice>,
    pub rounds: Vec<RoundRecord>,
    pub result: MatchResultRecord,
    /// The referee's signature over the rest (see `sign.rs` for the exact bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<ReplaySignature>,
}

/// A fighter's header. Its strings are shared (`Arc<str>`): a tournament or a
/// worker heads every match of a bot with the same header, and cloning it
/// into each replay then allocates nothing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FighterInfo {
    pub name: Arc<str>,
    pub kind: FighterKind,
    /// `sha256:` of the WASM component, or of the spec for built-in and endpoint bots.
    pub digest: Arc<str>,
    /// The bot spec the fighter was started from (`builtin:random`, a path, a URL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<Arc<str>>,
}

impl FighterInfo {
    /// A built-in fighter's header: named and digested by its canonical spec
    /// (`builtin:random`, `builtin:script:JAB,HEAVY`), which is all it takes
    /// to re-run it. The referee's built-ins and the training env's learners
    /// (recorded as the script of what they played) are headed this way.
    pub fn builtin(canonical_spec: &str) -> FighterInfo {
        let text: Arc<str> = canonical_spec.into();
        FighterInfo {
            name: text.clone(),
            kind: FighterKind::Builtin,
            digest: sha256_digest(text.as_bytes()).into(),
            spec: Some(text),
        }
    }
}

/// `sha256:` and the lowercase hex digest of `bytes`: how a fighter's
/// component or spec is named in a replay (`FighterInfo::digest`).
pub fn sha256_digest(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digest = Sha256::digest(bytes);
    let mut text = String::with_capacity(7 + 64);
    text.push_str("sha256:");
    for byte in digest {
        text.push(char::from(HEX[usize::from(byte >> 4)]));
        text.push(char::from(HEX[usize::from(byte & 0xf)]));
    }
    text
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FighterKind {
    Wasm,
    Endpoint,
    Builtin,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoundRecord {
    pub number: u8,
    pub exchanges: Vec<ExchangeRecord>,
    pub result: RoundResultRecord,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExchangeRecord {
    pub number: u8,
    pub a: SideRecord,
    pub b: SideRecord,
}

impl ExchangeRecord {
    pub fn sides(&self) -> [&SideRecord; 2] {
        [&self.a, &self.b]
    }
}

/// One fighter's half of an exchange. `hp`, `stamina` and `staggered` are the
/// state after the exchange (`staggered` = vulnerable in the next one).
///
/// A substitution's reason and the bot's log lines are rare (most decisions
/// answer in time and log nothing), so they live behind one pointer
/// ([`SideNotes`]) rather than inline, which keeps a record at 64 bytes: a
/// match copies and drops dozens of them (docs/perf/runner.md). In the JSON
/// `reason` and `log` are members of the side, left out when empty.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(from = "OwnedSideRecordFields")]
pub struct SideRecord {
    /// The action attempted after any substitution.
    pub action: ActionName,
    pub source: SourceName,
    pub exhausted: bool,
    pub damage_taken: i32,
    pub hp: i32,
    pub stamina: i32,
    pub staggered: bool,
    /// Model tokens (prompt + completion) the bot spent on this decision.
    pub tokens: u64,
    /// Time from sending the observation to the answer (0 when not asked).
    pub latency_ms: u64,
    /// The bot was started afresh for this decision because an earlier one ended
    /// in a fault or timeout (a trap poisons a WASM instance): whatever it
    /// remembered of the match is lost. Written only when true; older replays
    /// lack it.
    pub restarted: bool,
    /// `latency_ms` at microsecond resolution (a WASM decision takes a few µs).
    /// Optional: older replays lack it, and `verify` ignores it.
    pub latency_us: Option<u64>,
    /// The bot logged more than the bounds keep: lines or bytes were dropped.
    pub log_truncated: bool,
    /// `reason` and `log`; `None` when both are empty, so that equal records
    /// compare equal however they were built.
    notes: Option<Box<SideNotes>>,
}

/// The rarely-set parts of a [`SideRecord`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct SideNotes {
    reason: Option<String>,
    log: Vec<String>,
    calls: Vec<CallRecord>,
    transcript_sha256: Option<String>,
}

impl SideNotes {
    fn is_empty(&self) -> bool {
        self.reason.is_none()
            && self.log.is_empty()
            && self.calls.is_empty()
            && self.transcript_sha256.is_none()
    }
}

/// One model call a fighter made while deciding, as the public replay
/// records it: what it cost, never what was said (that is the transcript's).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallRecord {
    /// The catalogue name of the model called (as the bot named it, for a
    /// model the catalogue does not have).
    pub model: String,
    /// Prompt tokens charged: 0 unless the call was `ok` or `cut`.
    pub prompt_tokens: u64,
    /// Completion tokens charged: 0 unless the call was `ok`.
    pub completion_tokens: u64,
    pub outcome: CallOutcome,
}

impl CallRecord {
    /// What the call cost the fighter's budget.
    pub fn tokens(&self) -> u64 {
        self.prompt_tokens.saturating_add(self.completion_tokens)
    }
}

/// How a model call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CallOutcome {
    /// Answered: prompt and completion charged.
    Ok,
    /// The decision ended first: no completion; the prompt charged if it
    /// had been forwarded (a call whose request was still arriving, or
    /// whose prompt was still waiting to be counted, is charged nothing).
    Cut,
    /// Refused on the budget (the fighter is gassed out): nothing charged.
    Refused,
    /// No model configured, or the upstream failed: nothing charged.
    Unavailable,
    /// A request the gateway could not take (400), or an unknown model
    /// (404): nothing charged.
    Invalid,
}

impl CallOutcome {
    pub const ALL: [CallOutcome; 5] = [
        CallOutcome::Ok,
        CallOutcome::Cut,
        CallOutcome::Refused,
        CallOutcome::Unavailable,
        CallOutcome::Invalid,
    ];

    /// As replays and transcripts spell it.
    pub fn name(self) -> &'static str {
        match self {
            CallOutcome::Ok => "ok",
            CallOutcome::Cut => "cut",
            CallOutcome::Refused => "refused",
            CallOutcome::Unavailable => "unavailable",
            CallOutcome::Invalid => "invalid",
        }
    }

    /// Whether the call reached a catalogue model (and may be charged).
    pub fn reached_model(self) -> bool {
        matches!(self, CallOutcome::Ok | CallOutcome::Cut)
    }
}

impl std::fmt::Display for CallOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What one fighter spent on one model over a match: the calls that reached
/// it (`ok` or `cut`), their tokens, and their cost in US dollars at the
/// prices the replay's header recorded (`None` when it gave no price for a
/// part used).
#[derive(Clone, Debug, PartialEq)]
pub struct ModelSpend {
    pub model: String,
    pub calls: u64,
    pub tokens: u64,
    pub cost_usd: Option<f64>,
}

/// A catalogue model named by some call of a match, and its prices in US
/// dollars per million tokens when the catalogue gave them. JSON numbers
/// (`serde_json::Number` is always finite), so a replay compares equal to
/// itself read back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelPrice {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_usd_per_mtok: Option<serde_json::Number>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_usd_per_mtok: Option<serde_json::Number>,
}

impl ModelPrice {
    /// What `prompt_tokens` and `completion_tokens` of this model cost, in
    /// US dollars; `None` when the catalogue gave no price for a part used.
    pub fn cost_usd(&self, prompt_tokens: u64, completion_tokens: u64) -> Option<f64> {
        let part = |price: &Option<serde_json::Number>, tokens: u64| -> Option<f64> {
            if tokens == 0 {
                return Some(0.0);
            }
            Some(price.as_ref()?.as_f64()? * tokens as f64 / 1_000_000.0)
        };
        Some(
            part(&self.input_usd_per_mtok, prompt_tokens)?
                + part(&self.output_usd_per_mtok, completion_tokens)?,
        )
    }
}

/// A [`SideRecord`] as its JSON is, every field inline, in the contract's
/// order with its omissions (DESIGN.md "Replay format"). Replays are parsed
/// into it owning the rare parts (`Option<String>`, `Vec<String>`) and
/// written from it borrowing them (`Option<&str>`, `&[String]`).
#[derive(Serialize, Deserialize)]
struct SideRecordFields<Reason, Log: AsRef<[String]>, Calls: AsRef<[CallRecord]>> {
    action: ActionName,
    source: SourceName,
    exhausted: bool,
    damage_taken: i32,
    hp: i32,
    stamina: i32,
    staggered: bool,
    tokens: u64,
    latency_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reason: Option<Reason>,
    #[serde(default, skip_serializing_if = "is_false")]
    restarted: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    latency_us: Option<u64>,
    #[serde(default, skip_serializing_if = "no_lines")]
    log: Log,
    #[serde(default, skip_serializing_if = "is_false")]
    log_truncated: bool,
    #[serde(default, skip_serializing_if = "no_calls")]
    calls: Calls,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    transcript_sha256: Option<Reason>,
}

/// What a parsed side record is read into.
type OwnedSideRecordFields = SideRecordFields<String, Vec<String>, Vec<CallRecord>>;

fn no_lines<Log: AsRef<[String]>>(log: &Log) -> bool {
    log.as_ref().is_empty()
}

fn no_calls<Calls: AsRef<[CallRecord]>>(calls: &Calls) -> bool {
    calls.as_ref().is_empty()
}

impl From<OwnedSideRecordFields> for SideRecord {
    fn from(fields: OwnedSideRecordFields) -> SideRecord {
        let mut record = SideRecord::new(fields.action.into(), fields.source.into());
        record.exhausted = fields.exhausted;
        record.damage_taken = fields.damage_taken;
        record.hp = fields.hp;
        record.stamina = fields.stamina;
        record.staggered = fields.staggered;
        record.tokens = fields.tokens;
        record.latency_ms = fields.latency_ms;
        record.restarted = fields.restarted;
        record.latency_us = fields.latency_us;
        record.log_truncated = fields.log_truncated;
        record.set_notes(fields.reason, fields.log);
        record.set_calls(fields.calls, fields.transcript_sha256);
        record
    }
}

impl Serialize for SideRecord {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        SideRecordFields::<&str, &[String], &[CallRecord]> {
            action: self.action,
            source: self.source,
            exhausted: self.exhausted,
            damage_taken: self.damage_taken,
            hp: self.hp,
            stamina: self.stamina,
            staggered: self.staggered,
            tokens: self.tokens,
            latency_ms: self.latency_ms,
            reason: self.reason(),
            restarted: self.restarted,
            latency_us: self.latency_us,
            log: self.log(),
            log_truncated: self.log_truncated,
            calls: self.calls(),
            transcript_sha256: self.transcript_sha256(),
        }
        .serialize(serializer)
    }
}

/// Replays over [`MAX_REPLAY_BYTES`] are refused, read or written.
fn check_size(bytes: usize) -> Result<(), ReplayError> {
    if bytes as u64 > MAX_REPLAY_BYTES {
        return Err(ReplayError::TooLarge {
            size_bytes: bytes as u64,
            limit_bytes: MAX_REPLAY_BYTES,
        });
    }
    Ok(())
}

/// The `format` and `ruleset` a replay must name for this reader.
fn check_versions(format: Option<&str>, ruleset: Option<&str>) -> Result<(), ReplayError> {
    match format {
        Some(FORMAT) => {}
        Some(other) => {
            return Err(ReplayError::UnknownFormat {
                found: other.to_owned(),
                expected: FORMAT,
            });
        }
        None => {
            return Err(ReplayError::Malformed(
                "missing string field `format`".to_owned(),
            ));
        }
    }
    match ruleset {
        Some(version) => {
            Ruleset::from_version(version)?;
            Ok(())
        }
        None => Err(ReplayError::Malformed(
            "missing string field `ruleset`".to_owned(),
        )),
    }
}

fn is_false(value: &bool) -> bool {
    !*value
}

impl SideRecord {
    /// A fighter's half of an exchange that played `action` from `source`,
    /// spending nothing, logging nothing and untimed, with the outcome fields
    /// zero (the runner fills them in from the rules).
    pub fn new(action: Action, source: Source) -> SideRecord {
        SideRecord {
            action: action.into(),
            source: source.into(),
            exhausted: false,
            damage_taken: 0,
            hp: 0,
            stamina: 0,
            staggered: false,
            tokens: 0,
            latency_ms: 0,
            restarted: false,
            latency_us: None,
            log_truncated: false,
            notes: None,
        }
    }

    /// This record with the rules' `outcome` of the exchange written in (the
    /// action attempted, EXHAUSTED, damage and the state after). Inline: the
    /// bare runner calls it twice per exchange (docs/perf/runner.md).
    #[inline]
    pub fn with_outcome(mut self, outcome: &duel_rules::SideOutcome) -> SideRecord {
        self.action = outcome.action.into();
        self.exhausted = outcome.exhausted;
        self.damage_taken = outcome.damage_taken;
        self.hp = outcome.after.hp;
        self.stamina = outcome.after.stamina;
        self.staggered = outcome.after.staggered;
        self
    }

    /// Why a substitution happened, in a few words (faults and timeouts).
    pub fn reason(&self) -> Option<&str> {
        self.notes.as_ref()?.reason.as_deref()
    }

    /// What the bot logged during this decision (its `log` import, WASI stdout
    /// and stderr, an endpoint's reply note), one line per entry, bounded per
    /// decision and per match. Private by default: the ladder publishes ranked
    /// replays without it (see [`Replay::strip_logs`]). `verify` ignores it.
    pub fn log(&self) -> &[String] {
        self.notes
            .as_ref()
            .map_or(&[], |notes| notes.log.as_slice())
    }

    /// The model calls the fighter made while deciding, in the order they
    /// were made (empty for bots without a model, and in older replays).
    pub fn calls(&self) -> &[CallRecord] {
        self.notes
            .as_ref()
            .map_or(&[], |notes| notes.calls.as_slice())
    }

    /// The lowercase hex SHA-256 of the RFC 8785 form of this decision's
    /// `calls` in the match's transcript (see `transcript.rs`), when the
    /// referee kept one and the fighter called a model.
    pub fn transcript_sha256(&self) -> Option<&str> {
        self.notes.as_ref()?.transcript_sha256.as_deref()
    }

    fn notes_mut(&mut self) -> &mut SideNotes {
        self.notes.get_or_insert_with(Box::default)
    }

    /// Drops the box when nothing is left in it, so that equal records
    /// compare equal however they were built.
    fn tidy_notes(&mut self) {
        if self.notes.as_ref().is_some_and(|notes| notes.is_empty()) {
            self.notes = None;
        }
    }

    /// Sets the substitution's reason (`None`: no substitution, or none given).
    pub fn set_reason(&mut self, reason: Option<String>) {
        self.notes_mut().reason = reason;
        self.tidy_notes();
    }

    /// Sets the decision's log lines.
    pub fn set_log(&mut self, log: Vec<String>) {
        self.notes_mut().log = log;
        self.tidy_notes();
    }

    /// Takes the decision's log lines out, leaving none.
    pub fn take_log(&mut self) -> Vec<String> {
        let Some(notes) = self.notes.as_mut() else {
            return Vec::new();
        };
        let log = std::mem::take(&mut notes.log);
        self.tidy_notes();
        log
    }

    /// Sets both the reason and the log at once.
    pub fn set_notes(&mut self, reason: Option<String>, log: Vec<String>) {
        if reason.is_none() && log.is_empty() && self.notes.is_none() {
            return;
        }
        let notes = self.notes_mut();
        notes.reason = reason;
        notes.log = log;
        self.tidy_notes();
    }

    /// Sets the decision's model calls and its transcript digest.
    pub fn set_calls(&mut self, calls: Vec<CallRecord>, transcript_sha256: Option<String>) {
        if calls.is_empty() && transcript_sha256.is_none() && self.notes.is_none() {
            return;
        }
        let notes = self.notes_mut();
        notes.calls = calls;
        notes.transcript_sha256 = transcript_sha256;
        self.tidy_notes();
    }

    /// The decision's latency in microseconds: `latency_us` when the replay
    /// has it, else `latency_ms` scaled (older replays, untimed runners).
    pub fn latency_micros(&self) -> u64 {
        self.latency_us
            .unwrap_or_else(|| self.latency_ms.saturating_mul(1_000))
    }

    /// This half of the exchange as the public tape shows it to bots.
    pub fn tape_side(&self) -> duel_rules::TapeSide {
        duel_rules::TapeSide {
            action: self.action.into(),
            exhausted: self.exhausted,
            source: self.source.into(),
            damage_taken: self.damage_taken,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoundResultRecord {
    pub winner: WinnerName,
    pub by: RoundEndName,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MatchResultRecord {
    pub winner: WinnerName,
    pub round_wins: [u8; 2],
    pub damage: [u32; 2],
    pub tokens_used: [u64; 2],
}

/// Generates a wire enum mirroring a rules enum, with both conversions.
macro_rules! wire_enum {
    ($(#[$meta:meta])* $name:ident <=> $rules:ty { $($variant:ident = $text:literal <=> $rules_variant:path),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name {
            $(#[serde(rename = $text)] $variant),+
        }

        impl From<$name> for $rules {
            fn from(value: $name) -> $rules {
                match value {
                    $($name::$variant => $rules_variant),+
                }
            }
        }

        impl From<$rules> for $name {
            fn from(value: $rules) -> $name {
                match value {
                    $($rules_variant => $name::$variant),+
                }
            }
        }
    };
}

wire_enum!(
    /// An action as replays spell it.
    ActionName <=> Action {
        Jab = "JAB" <=> Action::Jab,
        Heavy = "HEAVY" <=> Action::Heavy,
        Block = "BLOCK" <=> Action::Block,
        Dodge = "DODGE" <=> Action::Dodge,
        Feint = "FEINT" <=> Action::Feint,
        Recover = "RECOVER" <=> Action::Recover,
    }
);

wire_enum!(
    /// Who chose an action, as replays spell it.
    SourceName <=> Source {
        Bot = "bot" <=> Source::Bot,
        Timeout = "timeout" <=> Source::Timeout,
        Budget = "budget" <=> Source::Budget,
        Fault = "fault" <=> Source::Fault,
    }
);

wire_enum!(
    /// A weight class as replays spell it.
    ClassName <=> WeightClass {
        Light = "light" <=> WeightClass::Light,
        Middle = "middle" <=> WeightClass::Middle,
        Heavy = "heavy" <=> WeightClass::Heavy,
    }
);

wire_enum!(
    /// A round or match winner as replays spell it.
    WinnerName <=> Winner {
        A = "a" <=> Winner::A,
        B = "b" <=> Winner::B,
        Draw = "draw" <=> Winner::Draw,
    }
);

wire_enum!(
    /// How a round ended, as replays spell it.
    RoundEndName <=> duel_rules::RoundEnd {
        Ko = "ko" <=> duel_rules::RoundEnd::Ko,
        Hp = "hp" <=> duel_rules::RoundEnd::Hp,
        Stamina = "stamina" <=> duel_rules::RoundEnd::Stamina,
        Damage = "damage" <=> duel_rules::RoundEnd::Damage,
        Draw = "draw" <=> duel_rules::RoundEnd::Draw,
    }
);

impl Replay {
    /// Parses a replay, checking the format tag and ruleset version before the
    /// body so that a replay from a newer tool says so instead of failing on a
    /// field it does not know.
    pub fn from_slice(bytes: &[u8]) -> Result<Replay, ReplayError> {
        check_size(bytes.len())?;
        let value: serde_json::Value = serde_json::from_slice(bytes)
            .map_err(|error| ReplayError::Malformed(error.to_string()))?;
        let Some(object) = value.as_object() else {
            return Err(ReplayError::Malformed("expected a JSON object".to_owned()));
        };
        check_versions(
            object.get("format").and_then(serde_json::Value::as_str),
            object.get("ruleset").and_then(serde_json::Value::as_str),
        )?;
        crate::integers::check_integers(&value)?;
        serde_path_to_error::deserialize(value).map_err(|error| {
            let path = error.path().to_string();
            ReplayError::Malformed(format!("at {path}: {}", error.into_inner()))
        })
    }

    /// What [`Replay::from_slice`] checks of bytes, checked of a replay in
    /// hand that is about to be written as `json_bytes` bytes, so that what is
    /// published reads back, without parsing the bytes again.
    pub fn check_writable(&self, json_bytes: usize) -> Result<(), ReplayError> {
        check_size(json_bytes)?;
        check_versions(Some(&self.format), Some(&self.ruleset))
    }

    /// Reads and parses a replay file: a regular file only, refused over the
    /// size limit before it is read whole, never waited on past a deadline.
    pub fn read(path: &Path) -> Result<Replay, ReplayError> {
        let bytes =
            duel_files::read_regular_within(path, MAX_REPLAY_BYTES, duel_files::READ_DEADLINE)
                .map_err(|error| match error {
                    duel_files::FileError::TooLarge { size_bytes, .. } => ReplayError::TooLarge {
                        size_bytes,
                        limit_bytes: MAX_REPLAY_BYTES,
                    },
                    other => ReplayError::File(format!("cannot read replay {other}")),
                })?;
        Replay::from_slice(&bytes)
    }

    /// The replay as pretty JSON, fields in contract order, with a final newline.
    pub fn to_json_pretty(&self) -> String {
        let mut text = serde_json::to_string_pretty(self)
            .expect("a Replay is plain structs with string keys, which always serialize");
        text.push('\n');
        text
    }

    /// Writes the replay atomically through the one writer (`duel-files`):
    /// a fresh temporary file beside `path`, synced, then renamed; never
    /// through a link, never over something that is not a regular file.
    pub fn write(&self, path: &Path) -> Result<(), ReplayError> {
        duel_files::write_atomic(
            path,
            self.to_json_pretty().as_bytes(),
            duel_files::WriteOptions::PUBLIC,
        )
        .map_err(|error| ReplayError::File(format!("cannot write replay {error}")))
    }

    /// Checks every integer a signature covers against
    /// [`JSON_INTEGER_MAX`](crate::limits::JSON_INTEGER_MAX), naming the first
    /// over it: the same verdict as reading the replay's JSON back.
    pub fn check_integers(&self) -> Result<(), ReplayError> {
        use crate::limits::JSON_INTEGER_MAX;
        let over = |field: String, value: u64| -> Result<(), ReplayError> {
            if value > JSON_INTEGER_MAX {
                return Err(ReplayError::IntegerTooLarge {
                    field,
                    value: value.to_string(),
                });
            }
            Ok(())
        };
        over("budget".to_owned(), self.budget)?;
        over("seed".to_owned(), self.seed)?;
        if let Some(clock) = self.wall_clock_ms {
            over("wall_clock_ms".to_owned(), clock)?;
        }
        for (round_index, round) in self.rounds.iter().enumerate() {
            for (exchange_index, exchange) in round.exchanges.iter().enumerate() {
                for (name, side) in [("a", &exchange.a), ("b", &exchange.b)] {
                    let at = |field: &str| {
                        format!("rounds[{round_index}].exchanges[{exchange_index}].{name}.{field}")
                    };
                    over(at("tokens"), side.tokens)?;
                    over(at("latency_ms"), side.latency_ms)?;
                    if let Some(micros) = side.latency_us {
                        over(at("latency_us"), micros)?;
                    }
                    for (call_index, call) in side.calls().iter().enumerate() {
                        over(
                            at(&format!("calls[{call_index}].prompt_tokens")),
                            call.prompt_tokens,
                        )?;
                        over(
                            at(&format!("calls[{call_index}].completion_tokens")),
                            call.completion_tokens,
                        )?;
                    }
                }
            }
        }
        for (index, tokens) in self.result.tokens_used.iter().enumerate() {
            over(format!("result.tokens_used[{index}]"), *tokens)?;
        }
        Ok(())
    }

    /// The ruleset this replay was adjudicated under.
    pub fn ruleset(&self) -> Result<Ruleset, ReplayError> {
        Ok(Ruleset::from_version(&self.ruleset)?)
    }

    /// Every exchange in order with its round number.
    /// Removes every bot's log lines (and their truncation marks), for replays
    /// published to others: logs can reveal a bot's strategy, so they stay
    /// with the bot's owner. Call before signing.
    pub fn strip_logs(&mut self) {
        for round in &mut self.rounds {
            for exchange in &mut round.exchanges {
                for side in [&mut exchange.a, &mut exchange.b] {
                    side.take_log();
                    side.log_truncated = false;
                }
            }
        }
    }

    /// Each model fighter `side` called, in the order first called, with
    /// what it spent there (see [`ModelSpend`]).
    pub fn model_spend(&self, side: duel_rules::Side) -> Vec<ModelSpend> {
        let mut spends: Vec<ModelSpend> = Vec::new();
        for (_, exchange) in self.exchanges() {
            for call in exchange.sides()[side.index()].calls() {
                if !call.outcome.reached_model() {
                    continue;
                }
                let cost = self
                    .models
                    .iter()
                    .find(|model| model.name == call.model)
                    .and_then(|price| price.cost_usd(call.prompt_tokens, call.completion_tokens));
                match spends.iter_mut().find(|known| known.model == call.model) {
                    Some(known) => {
                        known.calls += 1;
                        known.tokens = known.tokens.saturating_add(call.tokens());
                        known.cost_usd = known.cost_usd.zip(cost).map(|(sum, one)| sum + one);
                    }
                    None => spends.push(ModelSpend {
                        model: call.model.clone(),
                        calls: 1,
                        tokens: call.tokens(),
                        cost_usd: cost,
                    }),
                }
            }
        }
        spends
    }

    pub fn exchanges(&self) -> impl Iterator<Item = (u8, &ExchangeRecord)> {
        self.rounds.iter().flat_map(|round| {
            round
                .exchanges
                .iter()
                .map(move |exchange| (round.number, exchange))
        })
    }
}
