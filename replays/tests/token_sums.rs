//! Token totals are summed in checked arithmetic: a replay whose exchanges spend
//! 2^64−1 and 2 tokens must not wrap to a recorded total of 1 and verify. Such
//! a file is refused when read (its integers are past what a signature
//! binds); a replay built in memory is still checked.

use duel_replays::{Location, Replay};
use duel_rules::Side;

const FIXTURE: &[u8] = include_bytes!("fixtures/random-vs-counter.json");

/// The fixture with fighter a's tokens set to `first` in exchange 1 and `second`
/// in exchange 2 of round 1, and its recorded total set to `total`.
fn with_tokens(first: u64, second: u64, total: u64) -> Replay {
    let mut replay = Replay::from_slice(FIXTURE).expect("fixture parses");
    replay.rounds[0].exchanges[0].a.tokens = first;
    replay.rounds[0].exchanges[1].a.tokens = second;
    replay.result.tokens_used[0] = total;
    replay
}

#[test]
fn a_file_with_such_totals_is_refused_naming_the_field() {
    let mut value: serde_json::Value = serde_json::from_slice(FIXTURE).expect("fixture json");
    value["rounds"][0]["exchanges"][0]["a"]["tokens"] = u64::MAX.into();
    let bytes = serde_json::to_vec(&value).expect("json");
    let error = Replay::from_slice(&bytes).expect_err("refused");
    assert!(
        error
            .to_string()
            .starts_with("rounds[0].exchanges[0].a.tokens is 18446744073709551615"),
        "{error}"
    );
}

#[test]
fn a_sum_that_wraps_is_a_disagreement_at_the_exchange_that_overflows() {
    let wrapped = u64::MAX.wrapping_add(2);
    assert_eq!(wrapped, 1);
    let replay = with_tokens(u64::MAX, 2, wrapped);
    let disagreement = duel_replays::verify(&replay)
        .expect("known ruleset")
        .expect_err("a wrapped token sum must not verify");
    assert_eq!(
        disagreement.location,
        Location::Exchange {
            round: 1,
            exchange: 2,
            side: Some(Side::A)
        }
    );
    assert!(
        disagreement.detail.contains("18446744073709551615"),
        "{disagreement}"
    );
}

#[test]
fn an_honest_total_still_verifies_and_an_over_budget_one_does_not() {
    let replay = with_tokens(300, 200, 500);
    let verdict = duel_replays::verify(&replay).expect("known ruleset");
    assert!(verdict.is_ok(), "{verdict:?}");

    // One exchange alone at u64::MAX does not overflow, but is over budget.
    let replay = with_tokens(u64::MAX, 0, u64::MAX);
    let disagreement = duel_replays::verify(&replay)
        .expect("known ruleset")
        .expect_err("over budget");
    assert_eq!(disagreement.location, Location::Match);
    assert!(
        disagreement.detail.contains("over its budget"),
        "{disagreement}"
    );
}
