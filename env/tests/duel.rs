//! The env's engine against the rules crate played directly: same exchanges,
//! rewards that sum as documented, observations inside their bounds and laid out
//! as the field lists say.

mod common;

use common::Lcg;
use duel_env::{
    ACTIONS, Duel, HEADER_FIELDS, HEADER_LEN, OBSERVATION_LEN, Rewards, TAPE_ENTRY_LEN,
    TAPE_FIELDS, TAPE_SLOTS, bounds, max_exchange_damage,
};
use duel_rules::{Action, MatchOver, MatchState, Ruleset, Side, WeightClass, Winner};

const R: Ruleset = Ruleset::V1_0_0;

fn field(name: &str) -> usize {
    HEADER_FIELDS
        .iter()
        .position(|field| *field == name)
        .expect("a header field")
}

fn tape_field(slot: usize, name: &str) -> usize {
    let offset = TAPE_FIELDS
        .iter()
        .position(|field| *field == name)
        .expect("a tape field");
    HEADER_LEN + slot * TAPE_ENTRY_LEN + offset
}

#[test]
fn the_tape_view_holds_a_whole_match_and_bounds_come_from_the_damage_table() {
    assert_eq!(TAPE_SLOTS as u32, R.max_exchanges_per_match());
    // HEAVY (18) on a staggered fighter who RECOVERs: x1.5, 27.
    assert_eq!(max_exchange_damage(R), 27);
    let [low, high] = bounds(R, WeightClass::Light);
    assert_eq!(low[field("you_hp")], -26.0);
    assert_eq!(high[field("you_hp")], 160.0);
    assert_eq!(high[field("exchange")], 13.0);
    assert_eq!(high[field("budget_left_tokens")], 8_000.0);
    assert_eq!(
        high[tape_field(TAPE_SLOTS - 1, "opponent_damage_taken")],
        27.0
    );
    assert_eq!(OBSERVATION_LEN, 11 + 36 * 11);
}

#[test]
fn seeded_random_matches_equal_the_rules_played_directly() {
    let mut rng = Lcg(7);
    let mut duel = Duel::new(R, WeightClass::Middle, Rewards::default());
    let mut out = [0.0; OBSERVATION_LEN];
    let [low, high] = bounds(R, WeightClass::Middle);
    for game in 0..500 {
        duel.reset(&format!("m{game}"));
        let mut direct = MatchState::new(R);
        let mut totals = [0.0_f32; 2];
        let mut exchanges = 0;
        while !duel.is_over() {
            for side in Side::BOTH {
                duel.observe(side, &mut out);
                for (index, value) in out.iter().enumerate() {
                    assert!(
                        low[index] <= *value && *value <= high[index],
                        "field {index} = {value} outside [{}, {}]",
                        low[index],
                        high[index]
                    );
                }
            }
            // Unaffordable actions included: EXHAUSTED must match too.
            let actions = [ACTIONS[rng.below(6)], ACTIONS[rng.below(6)]];
            let step = duel.step(actions).expect("the match is not over");
            let expected = direct
                .play_exchange(actions)
                .expect("the match is not over");
            assert_eq!(step.exchange, expected);
            assert_eq!(step.rewards[0], -step.rewards[1], "zero-sum");
            totals[0] += step.rewards[0];
            totals[1] += step.rewards[1];
            exchanges += 1;
        }
        assert_eq!(duel.state(), &direct);
        assert_eq!(duel.tape().len(), exchanges);
        let result = direct.result().expect("the match ended");
        // Round rewards: wins minus losses; the match reward on top.
        let [wins_a, wins_b] = result.round_wins;
        let mut expected_a = 0.5 * (f32::from(wins_a) - f32::from(wins_b));
        expected_a += match result.winner {
            Winner::A => 1.0,
            Winner::B => -1.0,
            Winner::Draw => 0.0,
        };
        assert_eq!(totals[0], expected_a, "game {game}");
        assert_eq!(duel.step([Action::Block; 2]), Err(MatchOver));
    }
}

#[test]
fn the_tape_is_newest_first_and_seen_from_each_side() {
    let mut duel = Duel::new(R, WeightClass::Heavy, Rewards::default());
    duel.reset("tape");
    duel.step([Action::Jab, Action::Heavy]).expect("first");
    duel.step([Action::Dodge, Action::Heavy]).expect("second");
    let mut a = [0.0; OBSERVATION_LEN];
    let mut b = [0.0; OBSERVATION_LEN];
    duel.observe(Side::A, &mut a);
    duel.observe(Side::B, &mut b);
    // Slot 0 is exchange 2: a dodged b's HEAVY, which staggers b.
    assert_eq!(a[tape_field(0, "exchange")], 2.0);
    assert_eq!(a[tape_field(0, "you_action")], 3.0);
    assert_eq!(a[tape_field(0, "opponent_action")], 1.0);
    assert_eq!(b[tape_field(0, "you_action")], 1.0);
    assert_eq!(b[field("you_staggered")], 1.0);
    assert_eq!(a[field("opponent_staggered")], 1.0);
    // Slot 1 is exchange 1: JAB into HEAVY, a took 18, b took 6.
    assert_eq!(a[tape_field(1, "exchange")], 1.0);
    assert_eq!(a[tape_field(1, "you_damage_taken")], 18.0);
    assert_eq!(b[tape_field(1, "you_damage_taken")], 6.0);
    assert_eq!(a[field("you_hp")], 142.0);
    assert_eq!(a[field("exchange")], 3.0);
    assert_eq!(a[field("budget_left_tokens")], 512_000.0);
    // Unplayed slots are all zero, `present` included.
    assert!(
        a[HEADER_LEN + 2 * TAPE_ENTRY_LEN..]
            .iter()
            .all(|v| *v == 0.0)
    );
}

#[test]
fn affordable_is_what_the_rules_let_a_fighter_pay_for() {
    let mut duel = Duel::new(R, WeightClass::Light, Rewards::default());
    duel.reset("stamina");
    assert_eq!(duel.affordable(Side::A), [true; 6]);
    // Seven HEAVYs into BLOCK: 100 - 7 * 14 = 2 stamina left.
    for _ in 0..7 {
        duel.step([Action::Heavy, Action::Block]).expect("not over");
    }
    assert_eq!(duel.state().fighter(Side::A).stamina, 2);
    assert_eq!(
        duel.affordable(Side::A),
        [false, false, true, false, true, true]
    );
    // Played anyway, HEAVY is EXHAUSTED, as in the referee.
    let step = duel.step([Action::Heavy, Action::Block]).expect("not over");
    assert!(step.exchange.outcome.sides[0].exhausted);
}

/// The batched env's tape-free match writes the same vectors, masks and
/// rewards as `Duel`, exchange after exchange, across resets into a reused
/// array (the batch's), in every class.
#[test]
fn a_lean_duel_observes_as_a_duel_does() {
    let mut rng = Lcg(77);
    let rewards = Rewards::default();
    for class in WeightClass::ALL {
        let mut lean = duel_env::LeanDuel::new(R);
        // One array for all matches, as a batch slot reuses its rows.
        let mut out = vec![f32::NAN; 2 * OBSERVATION_LEN];
        for _ in 0..200 {
            let mut duel = Duel::new(R, class, rewards);
            duel.reset("m");
            lean.reset(class, &mut out);
            loop {
                for side in Side::BOTH {
                    let mut expected = [0.0; OBSERVATION_LEN];
                    duel.observe(side, &mut expected);
                    let half = &out[side.index() * OBSERVATION_LEN..][..OBSERVATION_LEN];
                    assert_eq!(half, &expected[..], "{class:?}, {side:?}");
                    assert_eq!(lean.affordable(side), duel.affordable(side));
                }
                if duel.is_over() {
                    assert!(lean.state().is_over());
                    assert_eq!(lean.state().result(), duel.state().result());
                    break;
                }
                let actions = [ACTIONS[rng.below(6)], ACTIONS[rng.below(6)]];
                let expected = duel.step(actions).expect("not over");
                let step = lean
                    .step(actions, &rewards, class, &mut out)
                    .expect("not over");
                assert_eq!(step, expected);
            }
            assert!(
                lean.step([Action::Jab; 2], &rewards, class, &mut out)
                    .is_err()
            );
        }
    }
}
