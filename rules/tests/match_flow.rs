//! Rounds, judging, clinching and the match result, driven exchange by exchange.

use Action::*;
use duel_rules::{
    Action, MatchDecision, MatchOver, MatchState, RoundEnd, RoundResult, Ruleset, Winner,
};

/// Plays `pairs` in order and returns the round results seen, with the exchange
/// number each round ended on.
fn play(state: &mut MatchState, pairs: &[[Action; 2]]) -> Vec<(u8, u8, RoundResult)> {
    let mut ends = Vec::new();
    for &pair in pairs {
        let step = state.play_exchange(pair).expect("match still running");
        if let Some(result) = step.round_result {
            ends.push((step.round, step.exchange, result));
        }
    }
    ends
}

fn repeat(pair: [Action; 2], times: usize) -> Vec<[Action; 2]> {
    vec![pair; times]
}

fn result(winner: Winner, by: RoundEnd) -> RoundResult {
    RoundResult { winner, by }
}

#[test]
fn knockout_ends_the_round_and_two_nil_ends_the_match() {
    let mut state = MatchState::new(Ruleset::V1_0_0);
    // B takes 27 a time while recovering: 6 × 27 = 162 > 160.
    let ends = play(&mut state, &repeat([Heavy, Recover], 12));
    assert_eq!(
        ends,
        vec![
            (1, 6, result(Winner::A, RoundEnd::Ko)),
            (2, 6, result(Winner::A, RoundEnd::Ko))
        ]
    );
    let final_result = state.result().expect("over after 2–0");
    assert_eq!(final_result.winner, Winner::A);
    assert_eq!(final_result.decided_by, MatchDecision::Rounds);
    assert_eq!(final_result.round_wins, [2, 0]);
    assert_eq!(final_result.damage, [324, 0]);
    assert_eq!(state.play_exchange([Jab, Jab]), Err(MatchOver));
}

#[test]
fn both_down_on_one_exchange_is_a_drawn_round() {
    let mut state = MatchState::new(Ruleset::V1_0_0);
    let mut pairs = repeat([Heavy, Heavy], 7); // 34 HP, 2 stamina each
    pairs.extend(repeat([Block, Block], 2)); // 14 stamina
    pairs.push([Heavy, Heavy]); // 16 HP, 0 stamina
    pairs.push([Recover, Recover]); // 22 stamina
    pairs.push([Heavy, Heavy]); // −2 HP each on exchange 12
    let ends = play(&mut state, &pairs);
    assert_eq!(ends, vec![(1, 12, result(Winner::Draw, RoundEnd::Ko))]);
    assert_eq!(state.round(), 2);
    assert_eq!(state.round_wins(), [0, 0]);
    assert_eq!(
        state.fighter(duel_rules::Side::A).hp,
        160,
        "fresh fighters in round 2"
    );
}

#[test]
fn judged_rounds_go_hp_then_stamina_then_draw() {
    let mut state = MatchState::new(Ruleset::V1_0_0);
    // Round 1: B jabs into A's blocks: A lower HP.
    let mut pairs = repeat([Block, Jab], 12);
    // Round 2: no damage, B pays for dodging: A more stamina.
    pairs.extend(repeat([Block, Dodge], 12));
    let ends = play(&mut state, &pairs);
    assert_eq!(
        ends,
        vec![
            (1, 12, result(Winner::B, RoundEnd::Hp)),
            (2, 12, result(Winner::A, RoundEnd::Stamina))
        ]
    );
    // Round 3: both jab, symmetrical to the end: a judged draw.
    let ends = play(&mut state, &repeat([Jab, Jab], 12));
    assert_eq!(ends, vec![(3, 12, result(Winner::Draw, RoundEnd::Draw))]);
    let final_result = state.result().expect("three rounds played");
    assert_eq!(final_result.round_wins, [1, 1]);
    // Level on rounds; B dealt 72 in round 1, both the same in round 3.
    assert_eq!(final_result.winner, Winner::B);
    assert_eq!(final_result.decided_by, MatchDecision::Damage);
    assert_eq!(final_result.damage[1] - final_result.damage[0], 72);
}

#[test]
fn one_nil_with_a_drawn_second_round_goes_to_round_three() {
    let mut state = MatchState::new(Ruleset::V1_0_0);
    let mut pairs = repeat([Heavy, Recover], 6); // A by KO
    pairs.extend(repeat([Jab, Jab], 12)); // judged draw
    let ends = play(&mut state, &pairs);
    assert_eq!(ends.len(), 2);
    assert_eq!(ends[1].2, result(Winner::Draw, RoundEnd::Draw));
    assert!(!state.is_over(), "1–0 with one round left is not clinched");
    assert_eq!(state.round(), 3);
    // Round 3 mirrors round 1: rounds 1–1, damage level: a drawn match.
    play(&mut state, &repeat([Recover, Heavy], 6));
    let final_result = state.result().expect("three rounds played");
    assert_eq!(final_result.winner, Winner::Draw);
    assert_eq!(final_result.decided_by, MatchDecision::Draw);
    assert_eq!(final_result.round_wins, [1, 1]);
    assert_eq!(final_result.damage[0], final_result.damage[1]);
}

#[test]
fn a_first_round_win_is_not_a_clinch() {
    let mut state = MatchState::new(Ruleset::V1_0_0);
    play(&mut state, &repeat([Heavy, Recover], 6));
    assert!(!state.is_over());
    assert_eq!((state.round(), state.next_exchange()), (2, 1));
    assert_eq!(state.round_wins(), [1, 0]);
    assert_eq!(state.round_damage(), [0, 0], "round damage resets");
    assert_eq!(state.match_damage(), [162, 0], "match damage carries");
}

#[test]
fn stagger_is_cleared_between_rounds() {
    let mut state = MatchState::new(Ruleset::V1_0_0);
    // A whiffs a HEAVY into a DODGE on the last exchange of a judged round.
    let mut pairs = repeat([Block, Block], 11);
    pairs.push([Heavy, Dodge]);
    play(&mut state, &pairs);
    assert_eq!(state.round(), 2);
    assert!(!state.fighter(duel_rules::Side::A).staggered);
}
