//! The replay parser and everything that reads untrusted replay bytes (the
//! signature check, the rules verifier, decompression) never panic, on any bytes
//! and on mutations of a real replay.

use duel_replays::{Replay, canonical_bytes, check_signature};
use proptest::prelude::*;

const FIXTURE: &[u8] = include_bytes!("fixtures/random-vs-counter.json");

fn exercise(bytes: &[u8]) {
    if let Ok(replay) = Replay::from_slice(bytes) {
        let _ = duel_replays::verify(&replay);
    }
    let _ = canonical_bytes(bytes);
    let _ = check_signature(bytes, None);
    let _ = duel_replays::store::decompress(bytes);
}

/// Replaces the `index`-th number in the JSON text by `replacement`.
fn replace_number(text: &str, index: usize, replacement: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut seen = 0usize;
    let mut chars = text.char_indices().peekable();
    while let Some((_, c)) = chars.next() {
        if c.is_ascii_digit() {
            let mut number = String::from(c);
            while let Some(&(_, next)) = chars.peek() {
                if !next.is_ascii_digit() {
                    break;
                }
                number.push(next);
                chars.next();
            }
            if seen == index {
                out.push_str(replacement);
            } else {
                out.push_str(&number);
            }
            seen += 1;
        } else {
            out.push(c);
        }
    }
    out
}

#[test]
fn the_fixture_parses_and_verifies() {
    let replay = Replay::from_slice(FIXTURE).expect("fixture parses");
    let verdict = duel_replays::verify(&replay).expect("known ruleset");
    assert!(verdict.is_ok(), "{verdict:?}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
        exercise(&bytes);
    }

    #[test]
    fn byte_mutations_of_a_replay_never_panic(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut bytes = FIXTURE.to_vec();
        for (at, byte) in edits {
            let index = at.index(bytes.len());
            bytes[index] = byte;
        }
        exercise(&bytes);
        exercise(&bytes[..cut.index(bytes.len())]);
    }

}

// Each case below parses a whole replay several times (slow in debug builds).
proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn number_mutations_of_a_replay_never_panic(
        at in 0usize..400,
        replacement in prop_oneof![
            Just("-1".to_owned()),
            Just("18446744073709551616".to_owned()),
            Just("99999999999999999999999".to_owned()),
            Just("1e308".to_owned()),
            Just("-9223372036854775809".to_owned()),
            Just("0.5".to_owned()),
            Just("null".to_owned()),
            Just("\"x\"".to_owned()),
            (0u64..1000).prop_map(|n| n.to_string()),
        ],
    ) {
        let text = std::str::from_utf8(FIXTURE).expect("utf-8");
        exercise(replace_number(text, at, &replacement).as_bytes());
    }

}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn structural_mutations_of_a_replay_never_panic(
        remove in any::<prop::sample::Index>(),
        duplicate in any::<prop::sample::Index>(),
    ) {
        let mut value: serde_json::Value = serde_json::from_slice(FIXTURE).expect("json");
        let rounds = value["rounds"].as_array_mut().expect("rounds");
        let round_count = rounds.len();
        if round_count > 0 {
            let round = &mut rounds[remove.index(round_count)];
            let exchanges = round["exchanges"].as_array_mut().expect("exchanges");
            if !exchanges.is_empty() {
                let index = remove.index(exchanges.len());
                exchanges.remove(index);
            }
            let copy = rounds[duplicate.index(round_count)].clone();
            rounds.push(copy);
        }
        exercise(&serde_json::to_vec(&value).expect("json"));
        for field in ["rounds", "result", "fighters", "class", "budget"] {
            let mut without = value.clone();
            if let Some(object) = without.as_object_mut() {
                object.remove(field);
            }
            exercise(&serde_json::to_vec(&without).expect("json"));
        }
    }
}
