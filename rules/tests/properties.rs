//! Invariants of the engine over arbitrary choices (proptest, replayable by seed).

use duel_rules::{Action, FighterState, MatchState, RoundEnd, Ruleset};
use proptest::prelude::*;

fn action() -> impl Strategy<Value = Action> {
    prop::sample::select(Action::ALL.to_vec())
}

fn fighter() -> impl Strategy<Value = FighterState> {
    (-30..=160i32, 0..=100i32, any::<bool>()).prop_map(|(hp, stamina, staggered)| FighterState {
        hp,
        stamina,
        staggered,
    })
}

proptest! {
    #[test]
    fn one_exchange_keeps_stamina_in_range_and_takes_at_most_27(
        a in fighter(), b in fighter(), act_a in action(), act_b in action()
    ) {
        let outcome = Ruleset::V1_0_0.resolve_exchange([a, b], [act_a, act_b]);
        for (side, pre) in outcome.sides.iter().zip([a, b]) {
            prop_assert!((0..=100).contains(&side.after.stamina));
            prop_assert!((0..=27).contains(&side.damage_taken));
            prop_assert_eq!(side.after.hp, pre.hp - side.damage_taken);
        }
    }

    #[test]
    fn a_match_always_ends_within_36_exchanges(
        choices in prop::collection::vec((action(), action()), 36)
    ) {
        let mut state = MatchState::new(Ruleset::V1_0_0);
        let mut played = 0;
        for (a, b) in choices {
            let step = state.play_exchange([a, b]).expect("not over before the last");
            played += 1;
            for side in step.outcome.sides {
                prop_assert!((0..=100).contains(&side.after.stamina));
            }
            if let Some(round) = step.round_result {
                // HP equal means equal damage in the round, so D-5 never decides.
                prop_assert_ne!(round.by, RoundEnd::Damage);
            }
            if step.match_result.is_some() {
                break;
            }
        }
        prop_assert!(state.is_over(), "still running after {played} exchanges");
        prop_assert!(played <= 36);
    }

    #[test]
    fn identical_choices_give_identical_matches(
        choices in prop::collection::vec((action(), action()), 36)
    ) {
        let run = || {
            let mut state = MatchState::new(Ruleset::V1_0_0);
            let mut steps = Vec::new();
            for &(a, b) in &choices {
                match state.play_exchange([a, b]) {
                    Ok(step) => steps.push(step),
                    Err(_) => break,
                }
            }
            (steps, state)
        };
        prop_assert_eq!(run(), run());
    }
}
