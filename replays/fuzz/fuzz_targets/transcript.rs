//! Fuzzes the `duel-transcript/1` reader (what `replay verify --transcript`
//! and `referee replay fetch` read from outside): it never panics, and a
//! transcript that parses writes back to one with the same decisions and the
//! same digests, and checks against the seed replay without panicking.

#![no_main]

use duel_replays::Replay;
use duel_replays::transcript::ParsedTranscript;
use libfuzzer_sys::fuzz_target;

const REPLAY: &[u8] = include_bytes!("../seeds/random-vs-counter.json");

fuzz_target!(|bytes: &[u8]| {
    let Ok(parsed) = ParsedTranscript::from_slice(bytes) else {
        return;
    };
    let written = parsed.transcript.to_json_pretty();
    let again = ParsedTranscript::from_slice(written.as_bytes())
        .unwrap_or_else(|error| panic!("a parsed transcript writes back unreadable: {error}"));
    assert_eq!(again.transcript, parsed.transcript);
    for (decision, digest) in again.transcript.decisions.iter().zip(&again.digests) {
        assert_eq!(&duel_replays::calls_sha256(&decision.calls), digest);
    }
    if let Ok(replay) = Replay::from_slice(REPLAY) {
        let _ = duel_replays::verify_transcript(&replay, &parsed);
    }
});
