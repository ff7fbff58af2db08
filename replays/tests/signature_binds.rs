//! A signature binds every number of the replay it signs: changing any one
//! number, by any amount, breaks the signature (or the replay is refused as
//! holding an integer no signature can bind). Regression for RFC 8785's
//! doubles: seed 2^53 + 1 once signed the same bytes as 2^53.

use duel_replays::{
    CallOutcome, CallRecord, ModelPrice, Replay, SignatureStatus, SigningKey, check_signature, sign,
};
use proptest::prelude::*;

const FIXTURE: &[u8] = include_bytes!("fixtures/random-vs-counter.json");

/// The fixture, with model calls and prices so that every kind of number
/// appears, signed.
fn signed() -> (serde_json::Value, SigningKey) {
    let mut replay = Replay::from_slice(FIXTURE).expect("fixture parses");
    replay.seed = duel_replays::JSON_INTEGER_MAX - 3;
    let side = &mut replay.rounds[0].exchanges[0].a;
    side.tokens = 42;
    side.latency_us = Some(1_234);
    side.set_calls(
        vec![CallRecord {
            model: "alpha".to_owned(),
            prompt_tokens: 40,
            completion_tokens: 2,
            outcome: CallOutcome::Ok,
        }],
        Some("0".repeat(64)),
    );
    replay.result.tokens_used[0] += 42;
    replay.models = vec![ModelPrice {
        name: "alpha".to_owned(),
        input_usd_per_mtok: serde_json::Number::from_f64(0.15),
        output_usd_per_mtok: serde_json::Number::from_f64(0.6),
    }];
    let key = SigningKey::from_bytes(&[9; 32]);
    sign(&mut replay, &key).expect("signs");
    let value = serde_json::to_value(&replay).expect("json");
    (value, key)
}

/// JSON pointers to every number outside the signature.
fn numbers(value: &serde_json::Value, at: String, found: &mut Vec<String>) {
    match value {
        serde_json::Value::Number(_) => found.push(at),
        serde_json::Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                numbers(item, format!("{at}/{index}"), found);
            }
        }
        serde_json::Value::Object(members) => {
            for (key, member) in members {
                if at.is_empty() && key == "signature" {
                    continue;
                }
                numbers(member, format!("{at}/{key}"), found);
            }
        }
        _ => {}
    }
}

fn verdict(value: &serde_json::Value, key: &SigningKey) -> Option<SignatureStatus> {
    let bytes = serde_json::to_vec(value).expect("json");
    check_signature(&bytes, Some(&key.verifying_key()))
        .ok()
        .and_then(Result::ok)
}

#[test]
fn the_signed_replay_verifies_and_has_numbers_of_every_kind() {
    let (value, key) = signed();
    assert!(verdict(&value, &key).is_some());
    let mut found = Vec::new();
    numbers(&value, String::new(), &mut found);
    for expected in [
        "/seed",
        "/budget",
        "/models/0/input_usd_per_mtok",
        "/rounds/0/exchanges/0/a/calls/0/prompt_tokens",
    ] {
        assert!(
            found.iter().any(|at| at == expected),
            "{expected} in {found:?}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn changing_any_number_by_any_amount_breaks_the_signature(
        pick in any::<prop::sample::Index>(),
        delta in prop_oneof![
            -3i64..=3,
            any::<i64>(),
            Just(1i64 << 53),
        ].prop_filter("a change", |delta| *delta != 0),
        scale in prop_oneof![Just(1.0f64), 1e-12f64..1e6],
    ) {
        let (mut value, key) = signed();
        let mut found = Vec::new();
        numbers(&value, String::new(), &mut found);
        let at = &found[pick.index(found.len())];
        let slot = value.pointer_mut(at).expect("the number is there");
        let changed = match (slot.as_u64(), slot.as_i64(), slot.as_f64()) {
            (Some(old), _, _) => match i128::from(old) + i128::from(delta) {
                new if new >= 0 && new <= i128::from(u64::MAX) => serde_json::json!(new as u64),
                new => serde_json::json!(new as i64),
            },
            (None, Some(old), _) => serde_json::json!(old.saturating_add(delta)),
            (None, None, Some(old)) => {
                let new = old + delta as f64 * scale;
                prop_assume!(new != old && new.is_finite());
                serde_json::json!(new)
            }
            _ => unreachable!("a number"),
        };
        prop_assume!(*slot != changed);
        *slot = changed;
        prop_assert!(verdict(&value, &key).is_none(), "{at} changed and still verifies");
    }
}
