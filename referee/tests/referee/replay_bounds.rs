//! A replay's size and a transcript's are bounded by construction (issue
//! 47): the worst match the limits allow, built through the recorder as
//! the runner feeds it, fits `MAX_REPLAY_BYTES` and `MAX_TRANSCRIPT_BYTES`
//! with room to spare. Every decision of both fighters is the largest the
//! bounds let through: a fault with a long reason, the most log lines of
//! control characters (each escaped to six bytes in JSON), the most model
//! calls a decision may make, each naming a megabyte-long model of quote
//! marks (escaped to two bytes) with the longest messages and completion
//! the transcript keeps; both fighters have the longest names and specs,
//! and the header lists a whole catalogue of the longest model names.

// Tests: a failed unwrap is a failed assertion.
#![allow(clippy::unwrap_used)]

use duel_referee::bot::{BotFailure, Decision};
use duel_referee::limits::{
    MAX_CATALOGUE_MODELS, MAX_LOG_LINES_PER_DECISION, MAX_MODEL_CALLS_PER_DECISION,
    MAX_MODEL_NAME_BYTES, MAX_PROMPT_MESSAGES, MAX_SPEC_BYTES,
};
use duel_referee::meter::{CallText, ChatMessage, ModelCall};
use duel_referee::models::recorded_name;
use duel_referee::record::{Answer, MatchConfig, MatchRecorder};
use duel_replays::{
    CallOutcome, FighterInfo, FighterKind, MAX_REPLAY_BYTES, MAX_TRANSCRIPT_BYTES, ModelPrice,
};
use duel_rules::WeightClass;

/// Above what the worst match measured when this test was written
/// (1,072,296 bytes: 15.6x under `MAX_REPLAY_BYTES`; its transcript
/// 51,284,980 bytes, 1.3x under `MAX_TRANSCRIPT_BYTES`): a change that makes
/// the worst replay grow shows here first.
const REPLAY_BYTES_SEEN: usize = 1_300_000;

fn fighter(side: &str) -> FighterInfo {
    FighterInfo {
        name: "\"".repeat(64).into(),
        kind: FighterKind::Endpoint,
        digest: format!("sha256:{side}").into(),
        spec: Some("\"".repeat(MAX_SPEC_BYTES).into()),
    }
}

/// The largest call a decision can record: a megabyte-long model name of
/// quote marks, 256 messages of control characters and a completion of the
/// same (the transcript keeps what its bounds allow).
fn worst_call(catalogue_entry: Option<usize>) -> ModelCall {
    let text = "\u{1}".repeat(64 * 1024);
    let (model, price) = match catalogue_entry {
        Some(entry) => {
            let name = format!("{entry:0>width$}", width = MAX_MODEL_NAME_BYTES);
            (
                name.clone(),
                Some(ModelPrice {
                    name,
                    input_usd_per_mtok: serde_json::Number::from_f64(123_456.789),
                    output_usd_per_mtok: serde_json::Number::from_f64(987_654.321),
                }),
            )
        }
        None => (recorded_name(&"\"".repeat(1_000_000)), None),
    };
    ModelCall {
        model: model.into(),
        price,
        prompt_tokens: 0,
        completion_tokens: 0,
        outcome: CallOutcome::Unavailable,
        latency_us: u64::MAX,
        note: Some("x".repeat(10_000)),
        text: Some(CallText {
            messages: vec![ChatMessage::new("assistant", text.clone()); MAX_PROMPT_MESSAGES],
            completion: text,
        }),
    }
}

#[test]
fn the_worst_match_the_limits_allow_fits_its_bounds() {
    let mut config = MatchConfig::new(
        "m".repeat(128),
        "2026-12-07T00:00:00Z".to_owned(),
        WeightClass::Heavy,
        duel_replays::JSON_INTEGER_MAX,
    );
    config.keep_transcript = true;
    let mut recorder = MatchRecorder::new(config, [fighter("a"), fighter("b")]);
    let mut catalogue_entries = (0..MAX_CATALOGUE_MODELS).map(Some);
    let mut decisions = 0;
    while !recorder.is_over() {
        let answers = [0, 1].map(|_| {
            let mut calls: Vec<ModelCall> = (0..MAX_MODEL_CALLS_PER_DECISION)
                .map(|_| worst_call(None))
                .collect();
            calls[0] = worst_call(catalogue_entries.next().flatten());
            let decision = Decision {
                answer: Err(BotFailure::fault("\u{1}".repeat(100_000))),
                tokens: 0,
                gassed_out: false,
                restarted: true,
                log: vec!["\u{1}".repeat(10_000); MAX_LOG_LINES_PER_DECISION * 4],
                log_truncated: true,
                calls,
            };
            Answer::timed(decision, std::time::Duration::from_secs(3_600))
        });
        recorder.commit(answers);
        decisions += 2;
    }
    assert_eq!(
        decisions, 72,
        "every fighter answered BLOCK's fallback for 36 exchanges"
    );
    let (replay, transcript) = recorder.finish_with_transcript();
    assert_eq!(replay.models.len(), MAX_CATALOGUE_MODELS);
    let replay_bytes = serde_json::to_vec(&replay).unwrap().len();
    let transcript_bytes = serde_json::to_vec(&transcript.unwrap()).unwrap().len();
    eprintln!("worst replay {replay_bytes} bytes, worst transcript {transcript_bytes} bytes");
    assert!(
        replay_bytes as u64 <= MAX_REPLAY_BYTES,
        "{replay_bytes} > {MAX_REPLAY_BYTES}"
    );
    assert!(
        replay_bytes <= REPLAY_BYTES_SEEN,
        "the worst replay grew to {replay_bytes} bytes"
    );
    assert!(
        transcript_bytes as u64 <= MAX_TRANSCRIPT_BYTES,
        "{transcript_bytes} > {MAX_TRANSCRIPT_BYTES}"
    );
    // Signed and parsed back as any reader would.
    let key = duel_replays::generate_signing_key().unwrap();
    let mut signed = replay.clone();
    duel_replays::sign(&mut signed, &key).unwrap();
    let json = serde_json::to_vec(&signed).unwrap();
    assert!(duel_replays::Replay::from_slice(&json).is_ok());
}
