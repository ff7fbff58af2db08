//! The `duel-transcript/1` format: what each fighter's model calls sent and
//! received, decision by decision, kept apart from the public replay. The
//! replay carries, per decision, only the SHA-256 of the RFC 8785 form of
//! that decision's `calls` array as it appears here (`transcript_sha256`,
//! signed with the rest), so a transcript revealed later can be checked
//! against the signed replay: [`verify_transcript`].
//!
//! Integers only (tokens, microseconds): the canonical form of a number is
//! then unambiguous, and every integer is at most [`JSON_INTEGER_MAX`].

use std::borrow::Cow;
use std::path::Path;

use duel_rules::Side;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::ReplayError;
use crate::format::{CallOutcome, CallRecord, Replay};
use crate::integers::check_integers;
use crate::limits::{JSON_INTEGER_MAX, MAX_TRANSCRIPT_BYTES};
use crate::verify::{Disagreement, Location};

/// The format tag of every transcript.
pub const TRANSCRIPT_FORMAT: &str = "duel-transcript/1";

/// A match's transcript: every decision in which a fighter called a model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transcript {
    pub format: Cow<'static, str>,
    pub match_id: String,
    /// In the order of the match: by round, exchange, then fighter `a`
    /// before `b`.
    pub decisions: Vec<TranscriptDecision>,
}

/// One fighter's model calls in one decision.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TranscriptDecision {
    pub round: u8,
    pub exchange: u8,
    pub fighter: FighterName,
    pub calls: Vec<TranscriptCall>,
}

/// `"a"` or `"b"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FighterName {
    #[serde(rename = "a")]
    A,
    #[serde(rename = "b")]
    B,
}

impl From<Side> for FighterName {
    fn from(side: Side) -> FighterName {
        match side {
            Side::A => FighterName::A,
            Side::B => FighterName::B,
        }
    }
}

impl From<FighterName> for Side {
    fn from(name: FighterName) -> Side {
        match name {
            FighterName::A => Side::A,
            FighterName::B => Side::B,
        }
    }
}

/// One model call: what was sent, what came back, what it cost.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TranscriptCall {
    pub model: String,
    pub messages: Vec<TranscriptMessage>,
    /// The completion as the bot received it (empty unless `ok`).
    pub completion: String,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// From the call's arrival at the gateway to its answer.
    pub latency_us: u64,
    pub outcome: CallOutcome,
    /// Texts were cut to the transcript's bounds (the tokens are the call's
    /// own, counted over everything that was sent and received).
    #[serde(default, skip_serializing_if = "is_false")]
    pub truncated: bool,
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// One message as it was sent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TranscriptMessage {
    pub role: String,
    pub content: String,
}

impl TranscriptCall {
    /// The public part of the call, as the replay records it.
    pub fn record(&self) -> CallRecord {
        CallRecord {
            model: self.model.clone(),
            prompt_tokens: self.prompt_tokens,
            completion_tokens: self.completion_tokens,
            outcome: self.outcome,
        }
    }
}

/// The digest a replay records for one decision: lowercase hex SHA-256 of
/// the RFC 8785 (JCS) form of `calls`.
pub fn calls_sha256(calls: &[TranscriptCall]) -> String {
    hex_sha256(&canonical_calls(calls))
}

/// The RFC 8785 form of `calls`, written straight from the structs (every
/// ranked decision with a model call computes it): for these types it is
/// serde_json's compact form with each object's members in sorted order,
/// which the view structs below declare. Their keys are ASCII (sorted by
/// UTF-16 code units is byte order), their numbers integers below 2^53 (a
/// double prints them as integers), and serde_json escapes strings as
/// ECMAScript does (`"`, `\`, the short forms of \b \f \n \r \t, other
/// controls as `\u00xx`, nothing else): the same bytes as a general JCS
/// writer, checked against one by property test.
pub fn canonical_calls(calls: &[TranscriptCall]) -> Vec<u8> {
    #[derive(Serialize)]
    struct CanonicalMessage<'a> {
        content: &'a str,
        role: &'a str,
    }
    #[derive(Serialize)]
    struct CanonicalCall<'a> {
        completion: &'a str,
        completion_tokens: u64,
        latency_us: u64,
        messages: Vec<CanonicalMessage<'a>>,
        model: &'a str,
        outcome: CallOutcome,
        prompt_tokens: u64,
        #[serde(skip_serializing_if = "is_false")]
        truncated: bool,
    }
    let view: Vec<CanonicalCall<'_>> = calls
        .iter()
        .map(|call| CanonicalCall {
            completion: &call.completion,
            completion_tokens: call.completion_tokens,
            latency_us: call.latency_us,
            messages: call
                .messages
                .iter()
                .map(|message| CanonicalMessage {
                    content: &message.content,
                    role: &message.role,
                })
                .collect(),
            model: &call.model,
            outcome: call.outcome,
            prompt_tokens: call.prompt_tokens,
            truncated: call.truncated,
        })
        .collect();
    serde_json::to_vec(&view).expect("plain structs of strings and integers always serialize")
}

fn hex_sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

impl Transcript {
    /// An empty transcript of one match.
    pub fn new(match_id: String) -> Transcript {
        Transcript {
            format: TRANSCRIPT_FORMAT.into(),
            match_id,
            decisions: Vec::new(),
        }
    }

    /// Parses a transcript, checking its format tag, size and integers.
    pub fn from_slice(bytes: &[u8]) -> Result<Transcript, ReplayError> {
        Ok(ParsedTranscript::from_slice(bytes)?.transcript)
    }

    /// Reads a transcript file (a regular file, bounded).
    pub fn read(path: &Path) -> Result<Transcript, ReplayError> {
        Ok(ParsedTranscript::read(path)?.transcript)
    }

    /// Pretty JSON with a final newline.
    pub fn to_json_pretty(&self) -> String {
        let mut text = serde_json::to_string_pretty(self)
            .expect("a Transcript is plain structs with string keys, which always serialize");
        text.push('\n');
        text
    }

    /// The decisions of one fighter.
    pub fn of(&self, side: Side) -> impl Iterator<Item = &TranscriptDecision> {
        let name = FighterName::from(side);
        self.decisions
            .iter()
            .filter(move |decision| decision.fighter == name)
    }

    /// Keeps only one fighter's decisions (what its owner may read before
    /// the reveal).
    pub fn only(mut self, side: Side) -> Transcript {
        let name = FighterName::from(side);
        self.decisions.retain(|decision| decision.fighter == name);
        self
    }
}

/// A transcript as read from bytes, with each decision's digest computed
/// from the JSON as it was received, so fields a newer writer added are
/// covered too (as signatures cover them in replays).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParsedTranscript {
    pub transcript: Transcript,
    /// [`calls_sha256`] of each decision, in order.
    pub digests: Vec<String>,
}

impl ParsedTranscript {
    pub fn from_slice(bytes: &[u8]) -> Result<ParsedTranscript, ReplayError> {
        if bytes.len() as u64 > MAX_TRANSCRIPT_BYTES {
            return Err(ReplayError::Malformed(format!(
                "transcript is {} bytes, more than the {MAX_TRANSCRIPT_BYTES}-byte limit",
                bytes.len()
            )));
        }
        let value: serde_json::Value = serde_json::from_slice(bytes)
            .map_err(|error| ReplayError::Malformed(format!("transcript: {error}")))?;
        match value.get("format").and_then(serde_json::Value::as_str) {
            Some(TRANSCRIPT_FORMAT) => {}
            Some(other) => {
                return Err(ReplayError::UnknownFormat {
                    found: other.to_owned(),
                    expected: TRANSCRIPT_FORMAT,
                });
            }
            None => {
                return Err(ReplayError::Malformed(
                    "transcript: missing string field `format`".to_owned(),
                ));
            }
        }
        check_integers(&value)?;
        let digests = value
            .get("decisions")
            .and_then(serde_json::Value::as_array)
            .map(|decisions| {
                decisions
                    .iter()
                    .map(|decision| {
                        let calls = decision.get("calls").unwrap_or(&serde_json::Value::Null);
                        serde_json_canonicalizer::to_vec(calls)
                            .map(|canonical| hex_sha256(&canonical))
                            .map_err(|error| {
                                ReplayError::Malformed(format!(
                                    "transcript: cannot canonicalise: {error}"
                                ))
                            })
                    })
                    .collect::<Result<Vec<_>, _>>()
            })
            .transpose()?
            .unwrap_or_default();
        let transcript: Transcript = serde_path_to_error::deserialize(value).map_err(|error| {
            let path = error.path().to_string();
            ReplayError::Malformed(format!("transcript at {path}: {}", error.into_inner()))
        })?;
        Ok(ParsedTranscript {
            transcript,
            digests,
        })
    }

    pub fn read(path: &Path) -> Result<ParsedTranscript, ReplayError> {
        let bytes =
            duel_files::read_regular_within(path, MAX_TRANSCRIPT_BYTES, duel_files::READ_DEADLINE)
                .map_err(|error| ReplayError::File(error.to_string()))?;
        ParsedTranscript::from_slice(&bytes)
    }
}

/// Checks a transcript against the replay it belongs to: the same match;
/// every decision the replay says has a transcript is in it, with the
/// digest the replay signed; nothing more; and each call's model, tokens
/// and outcome are the replay's. The first difference is named the way
/// replay verification names one.
pub fn verify_transcript(replay: &Replay, parsed: &ParsedTranscript) -> Result<(), Disagreement> {
    let transcript = &parsed.transcript;
    if transcript.match_id != replay.match_id {
        return Err(Disagreement {
            location: Location::Header,
            detail: format!(
                "the transcript is of match {:?}, the replay of {:?}",
                transcript.match_id, replay.match_id
            ),
        });
    }
    let mut listed = parsed
        .transcript
        .decisions
        .iter()
        .zip(&parsed.digests)
        .peekable();
    for (round, exchange) in replay.exchanges() {
        for side in Side::BOTH {
            let record = exchange.sides()[side.index()];
            let here = Location::Exchange {
                round,
                exchange: exchange.number,
                side: Some(side),
            };
            let next = listed.next_if(|(decision, _)| {
                decision.round == round
                    && decision.exchange == exchange.number
                    && Side::from(decision.fighter) == side
            });
            match (record.transcript_sha256(), next) {
                (None, None) => {}
                (Some(_), None) => {
                    return Err(Disagreement {
                        location: here,
                        detail: "the replay records a transcript digest, the transcript has no such decision".to_owned(),
                    });
                }
                (None, Some(_)) => {
                    return Err(Disagreement {
                        location: here,
                        detail:
                            "the transcript has this decision, the replay records no digest for it"
                                .to_owned(),
                    });
                }
                (Some(signed), Some((decision, digest))) => {
                    if signed != digest {
                        return Err(Disagreement {
                            location: here,
                            detail: format!(
                                "the transcript's calls hash to {digest}, the replay signed {signed}"
                            ),
                        });
                    }
                    let transcribed: Vec<CallRecord> =
                        decision.calls.iter().map(TranscriptCall::record).collect();
                    if transcribed != record.calls() {
                        return Err(Disagreement {
                            location: here,
                            detail: "the transcript's calls (model, tokens, outcome) differ from the replay's".to_owned(),
                        });
                    }
                }
            }
        }
    }
    if let Some((decision, _)) = listed.next() {
        return Err(Disagreement {
            location: Location::Exchange {
                round: decision.round,
                exchange: decision.exchange,
                side: Some(decision.fighter.into()),
            },
            detail: "the transcript has a decision the replay does not (or out of order)"
                .to_owned(),
        });
    }
    Ok(())
}

const _: () = assert!(JSON_INTEGER_MAX == (1 << 53) - 1);

#[cfg(test)]
mod tests {
    use super::*;

    fn call(text: &str) -> TranscriptCall {
        TranscriptCall {
            model: "alpha".to_owned(),
            messages: vec![TranscriptMessage {
                role: "user".to_owned(),
                content: text.to_owned(),
            }],
            completion: "JAB".to_owned(),
            prompt_tokens: 12,
            completion_tokens: 3,
            latency_us: 4120,
            outcome: CallOutcome::Ok,
            truncated: false,
        }
    }

    /// The digest is of the canonical form: key order and whitespace of the
    /// file do not matter, and the struct and the parsed file agree.
    #[test]
    fn digests_are_of_the_canonical_form() {
        let calls = vec![call("hi")];
        let digest = calls_sha256(&calls);
        assert_eq!(digest.len(), 64);
        let text = r#"{"decisions": [{"calls": [{"outcome": "ok", "model": "alpha",
            "messages": [{"content": "hi", "role": "user"}], "completion": "JAB",
            "latency_us": 4120, "completion_tokens": 3, "prompt_tokens": 12}],
            "fighter": "a", "exchange": 3, "round": 1}],
            "match_id": "m", "format": "duel-transcript/1"}"#;
        let parsed = ParsedTranscript::from_slice(text.as_bytes()).expect("parses");
        assert_eq!(parsed.digests, vec![digest.clone()]);
        assert_eq!(parsed.transcript.decisions[0].calls, calls);
        assert_ne!(calls_sha256(&[call("hi!")]), digest);
    }

    proptest::proptest! {
        /// The canonical form written from the structs is a general JCS
        /// writer's, byte for byte, for any strings and integers in range.
        #[test]
        fn canonical_calls_are_jcs(
            calls in proptest::collection::vec(
                (
                    "\\PC{0,12}|[\\x00-\\x1f\"\\\\/\\x7f\\u{2028}\\u{fffd}é😀]{0,12}",
                    proptest::collection::vec(("[a-z]{0,8}", "\\PC{0,20}|[\\x00-\\x1f\"\\\\]{0,8}"), 0..3),
                    "\\PC{0,20}",
                    0u64..=crate::limits::JSON_INTEGER_MAX,
                    0u64..=crate::limits::JSON_INTEGER_MAX,
                    0u64..=crate::limits::JSON_INTEGER_MAX,
                    proptest::sample::select(CallOutcome::ALL.to_vec()),
                    proptest::bool::ANY,
                ),
                0..4,
            ),
        ) {
            let calls: Vec<TranscriptCall> = calls
                .into_iter()
                .map(|(model, messages, completion, prompt_tokens, completion_tokens, latency_us, outcome, truncated)| TranscriptCall {
                    model,
                    messages: messages
                        .into_iter()
                        .map(|(role, content)| TranscriptMessage { role, content })
                        .collect(),
                    completion,
                    prompt_tokens,
                    completion_tokens,
                    latency_us,
                    outcome,
                    truncated,
                })
                .collect();
            let general = serde_json_canonicalizer::to_vec(&calls).expect("canonicalises");
            proptest::prop_assert_eq!(canonical_calls(&calls), general);
        }
    }

    #[test]
    fn refuses_other_formats_and_large_integers() {
        let other = br#"{"format": "duel-transcript/9", "match_id": "m", "decisions": []}"#;
        assert!(matches!(
            Transcript::from_slice(other),
            Err(ReplayError::UnknownFormat { .. })
        ));
        let large = br#"{"format": "duel-transcript/1", "match_id": "m", "decisions": [
            {"round": 1, "exchange": 1, "fighter": "a", "calls": [{"model": "m", "messages": [],
             "completion": "", "prompt_tokens": 9007199254740992, "completion_tokens": 0,
             "latency_us": 0, "outcome": "ok"}]}]}"#;
        let error = Transcript::from_slice(large).expect_err("too large");
        assert!(error.to_string().contains("prompt_tokens"), "{error}");
    }
}
