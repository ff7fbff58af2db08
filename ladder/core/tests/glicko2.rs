//! Glicko-2 pinned by Glickman's worked example, and the season rules built on it.

use duel_ladder_core::rating::{self, Rating, Score};

#[test]
fn glickmans_worked_example() {
    let player = Rating {
        rating: 1500.0,
        deviation: 200.0,
        volatility: 0.06,
    };
    let opponent = |rating, deviation| Rating {
        rating,
        deviation,
        volatility: 0.06,
    };
    let after = rating::rating_period(
        player,
        &[
            (opponent(1400.0, 30.0), Score::Win),
            (opponent(1550.0, 100.0), Score::Loss),
            (opponent(1700.0, 300.0), Score::Loss),
        ],
    );
    assert!(
        (after.rating - 1464.05).abs() < 0.01,
        "rating {}",
        after.rating
    );
    assert!(
        (after.deviation - 151.52).abs() < 0.01,
        "deviation {}",
        after.deviation
    );
    assert!(
        (after.volatility - 0.059996).abs() < 1e-5,
        "volatility {}",
        after.volatility
    );
}

#[test]
fn one_match_moves_both_ratings_in_opposite_directions() {
    let (winner, loser) = rating::update(rating::INITIAL, rating::INITIAL, Score::Win);
    assert!(winner.rating > 1500.0 && loser.rating < 1500.0);
    assert!(
        (winner.rating - 1500.0 + loser.rating - 1500.0).abs() < 1e-9,
        "symmetric"
    );
    assert!(winner.deviation < 350.0);
    let (drawn, _) = rating::update(rating::INITIAL, rating::INITIAL, Score::Draw);
    assert!((drawn.rating - 1500.0).abs() < 1e-9);
}

#[test]
fn provisional_until_the_deviation_drops_and_soft_reset() {
    assert!(rating::INITIAL.is_provisional());
    let settled = Rating {
        rating: 1900.0,
        deviation: 60.0,
        volatility: 0.05,
    };
    assert!(!settled.is_provisional());
    assert_eq!(settled.conservative(), 1780.0);
    let reset = settled.soft_reset();
    assert_eq!(
        (reset.rating, reset.deviation, reset.volatility),
        (1700.0, 150.0, 0.05)
    );
    assert!(reset.is_provisional());
}
