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

mod season_fit {
    use duel_ladder_core::rating::{self, FitGame, Rating, Score, season_fit};
    use proptest::prelude::*;

    fn game(a: usize, b: usize, score_a: Score) -> FitGame {
        FitGame { a, b, score_a }
    }

    /// Each bot's points over the games, from its own side.
    fn points(bots: usize, games: &[FitGame]) -> Vec<f64> {
        let mut points = vec![0.0; bots];
        for game in games {
            points[game.a] += game.score_a.points();
            points[game.b] += 1.0 - game.score_a.points();
        }
        points
    }

    #[test]
    fn bots_without_games_keep_their_start() {
        let start = Rating {
            rating: 1620.0,
            deviation: 180.0,
            volatility: 0.058,
        };
        let fitted = season_fit(
            &[start, rating::INITIAL, rating::INITIAL],
            &[
                game(1, 2, Score::Win),
                // Ignored: the same bot twice, and an index past the slice.
                game(0, 0, Score::Win),
                game(0, 7, Score::Loss),
            ],
        );
        assert_eq!(fitted[0], start);
        assert!(fitted[1].rating > 1500.0 && fitted[2].rating < 1500.0);
        assert!(
            (fitted[1].rating - 1500.0 + fitted[2].rating - 1500.0).abs() < 1e-6,
            "one game between equal starts moves both by the same amount: {fitted:?}"
        );
        assert!((fitted[1].deviation - fitted[2].deviation).abs() < 1e-9);
        assert!(fitted[1].deviation < 350.0);
        assert_eq!(fitted[1].volatility, rating::INITIAL.volatility);
    }

    #[test]
    fn a_double_round_robin_is_ranked_by_its_scores() {
        // 5 bots, every pair twice; bot 0 wins everything, the rest mixed,
        // with draws. The fit of a complete, balanced schedule from equal
        // starts orders the bots by their points.
        use Score::{Draw, Loss, Win};
        let results = [
            (0, 1, Win, Win),
            (0, 2, Win, Win),
            (0, 3, Win, Win),
            (0, 4, Win, Win),
            (1, 2, Win, Draw),
            (1, 3, Loss, Win),
            (1, 4, Win, Win),
            (2, 3, Draw, Draw),
            (2, 4, Win, Loss),
            (3, 4, Win, Draw),
        ];
        let games: Vec<FitGame> = results
            .iter()
            .flat_map(|&(a, b, first, second)| [game(a, b, first), game(b, a, flip(second))])
            .collect();
        let fitted = season_fit(&[rating::INITIAL; 5], &games);
        let points = points(5, &games);
        for x in 0..5 {
            for y in 0..5 {
                if points[x] > points[y] {
                    assert!(
                        fitted[x].rating > fitted[y].rating,
                        "bot {x} ({} points) above bot {y} ({} points): {fitted:?}",
                        points[x],
                        points[y]
                    );
                }
            }
        }
        // The undefeated bot stays finite (the prior holds it) and is sure of
        // less than the others: its games told less.
        assert!(fitted[0].rating.is_finite() && fitted[0].rating < 2500.0);
        assert!(
            fitted
                .iter()
                .all(|r| r.deviation > 0.0 && r.deviation < 350.0)
        );
    }

    #[test]
    fn every_pair_weighs_the_same_however_often_it_was_rated() {
        // The double round robin above, played four times over, and the same
        // number of games spread unevenly over its pairs at the same means (a
        // random bot's pair is rated at every meeting, a deterministic pair
        // once): the fit is the same, so the standings rank by the mean score
        // against each opponent, as a round robin does, not by how often a
        // pair met.
        use Score::{Draw, Loss, Win};
        let results = [
            (0, 1, Win, Win),
            (0, 2, Win, Loss),
            (1, 2, Win, Draw),
            (1, 3, Loss, Win),
            (2, 3, Draw, Draw),
            (0, 3, Win, Draw),
        ];
        let pair = |&(a, b, first, second): &(usize, usize, Score, Score)| {
            [game(a, b, first), game(b, a, flip(second))]
        };
        let repeated = |times: &[usize]| -> Vec<FitGame> {
            results
                .iter()
                .zip(times)
                .flat_map(|(result, &times)| std::iter::repeat_n(pair(result), times).flatten())
                .collect()
        };
        let balanced = repeated(&[4; 6]);
        let uneven = repeated(&[1, 2, 3, 4, 6, 8]);
        assert_eq!(uneven.len(), balanced.len());
        let (even, skewed) = (
            season_fit(&[rating::INITIAL; 4], &balanced),
            season_fit(&[rating::INITIAL; 4], &uneven),
        );
        for (x, y) in even.iter().zip(&skewed) {
            assert!(
                (x.rating - y.rating).abs() < 1e-6 && (x.deviation - y.deviation).abs() < 1e-6,
                "{even:?} vs {skewed:?}"
            );
        }
    }

    #[test]
    fn a_longer_season_pins_ratings_down_further() {
        // The same pairs at the same means, each played once and each played
        // four times: four times the evidence narrows every deviation and
        // moves the ratings further from the priors, in the same order.
        use Score::{Draw, Loss, Win};
        let once = [
            game(0, 1, Win),
            game(0, 2, Win),
            game(1, 2, Draw),
            game(1, 3, Loss),
            game(2, 3, Win),
            game(0, 3, Win),
        ];
        let four_times: Vec<FitGame> = once.iter().flat_map(|g| [*g; 4]).collect();
        let (short, long) = (
            season_fit(&[rating::INITIAL; 4], &once),
            season_fit(&[rating::INITIAL; 4], &four_times),
        );
        for (x, y) in short.iter().zip(&long) {
            assert!(y.deviation < x.deviation, "{short:?} vs {long:?}");
            assert!(
                (y.rating - 1500.0).abs() > (x.rating - 1500.0).abs(),
                "{short:?} vs {long:?}"
            );
        }
        let order = |fit: &[Rating]| {
            let mut bots: Vec<usize> = (0..fit.len()).collect();
            bots.sort_by(|&x, &y| fit[y].rating.total_cmp(&fit[x].rating));
            bots
        };
        assert_eq!(order(&short), order(&long));
    }

    fn flip(score: Score) -> Score {
        match score {
            Score::Win => Score::Loss,
            Score::Loss => Score::Win,
            Score::Draw => Score::Draw,
        }
    }

    #[test]
    fn the_order_of_the_games_no_longer_decides_the_table() {
        // Three bots: 0 beats 1 twice, 1 beats 2 twice, 2 beats 0 once and
        // loses once. Played in two orders, sequential Glicko-2 (one rating
        // period per match, as settlement does) ends with different ratings;
        // the fit gives the same in both.
        use Score::{Loss, Win};
        let early = [
            game(2, 0, Win),
            game(0, 1, Win),
            game(1, 2, Win),
            game(0, 1, Win),
            game(1, 2, Win),
            game(2, 0, Loss),
        ];
        let late: Vec<FitGame> = early.iter().rev().copied().collect();
        let sequential = |games: &[FitGame]| {
            let mut ratings = [rating::INITIAL; 3];
            for game in games {
                let (a, b) = rating::update(ratings[game.a], ratings[game.b], game.score_a);
                ratings[game.a] = a;
                ratings[game.b] = b;
            }
            ratings
        };
        let (first, second) = (sequential(&early), sequential(&late));
        assert!(
            (first[0].rating - second[0].rating).abs() > 10.0,
            "sequential Glicko-2 depends on the order: {first:?} vs {second:?}"
        );
        let (first, second) = (
            season_fit(&[rating::INITIAL; 3], &early),
            season_fit(&[rating::INITIAL; 3], &late),
        );
        for (x, y) in first.iter().zip(&second) {
            assert!(
                (x.rating - y.rating).abs() < 1e-6,
                "{first:?} vs {second:?}"
            );
            assert!((x.deviation - y.deviation).abs() < 1e-6);
        }
    }

    /// A busy class: 24 bots, 5,000 games. Only the weak priors pin down the
    /// class's common level, so at the top the priors' pulls cancel
    /// (Σ (rating − start) / deviation² = 0: the games' terms cancel in
    /// pairs), and naming the bots in another order or replaying the games
    /// backwards gives the same table. Coordinate steps, one bot at a time,
    /// stopped 0.1 points short here after 500 sweeps.
    #[test]
    fn a_busy_class_reaches_the_top() {
        const BOTS: usize = 24;
        let mut state: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move |below: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % below as u64) as usize
        };
        let strength: Vec<usize> = (0..BOTS).map(|bot| bot % 7).collect();
        let mut games = Vec::new();
        while games.len() < 5_000 {
            let (a, b) = (next(BOTS), next(BOTS));
            if a == b {
                continue;
            }
            let roll = next(10) + strength[a];
            let score = if roll > 6 + strength[b] {
                Score::Win
            } else if roll == 6 + strength[b] {
                Score::Draw
            } else {
                Score::Loss
            };
            games.push(game(a, b, score));
        }
        let starts = vec![rating::INITIAL; BOTS];
        let fitted = season_fit(&starts, &games);
        let pull: f64 = fitted
            .iter()
            .map(|fit| (fit.rating - 1500.0) / (350.0f64 * 350.0))
            .sum();
        assert!(pull.abs() < 1e-9, "the priors pull {pull} at the fit");
        let renamed: Vec<FitGame> = games
            .iter()
            .rev()
            .map(|g| game(BOTS - 1 - g.a, BOTS - 1 - g.b, g.score_a))
            .collect();
        let again = season_fit(&starts, &renamed);
        for (bot, fit) in fitted.iter().enumerate() {
            let other = again[BOTS - 1 - bot];
            assert!(
                (fit.rating - other.rating).abs() < 1e-7
                    && (fit.deviation - other.deviation).abs() < 1e-7,
                "bot {bot}: {fit:?} vs {other:?}"
            );
        }
        // And the fit orders the bots by their hidden strength.
        let strongest = (0..BOTS).filter(|bot| strength[*bot] == 6);
        let weakest = (0..BOTS).filter(|bot| strength[*bot] == 0);
        let low = strongest
            .map(|bot| fitted[bot].rating)
            .fold(f64::MAX, f64::min);
        let high = weakest
            .map(|bot| fitted[bot].rating)
            .fold(f64::MIN, f64::max);
        assert!(low > high, "{fitted:?}");
    }

    fn any_score() -> impl Strategy<Value = Score> {
        prop_oneof![Just(Score::Win), Just(Score::Draw), Just(Score::Loss)]
    }

    fn any_start() -> impl Strategy<Value = Rating> {
        (800.0..2400.0f64, 60.0..350.0f64).prop_map(|(rating, deviation)| Rating {
            rating,
            deviation,
            volatility: 0.06,
        })
    }

    proptest! {
        /// Whatever the starts and results, the fit is finite, each deviation
        /// is at most its start, and shuffling the games changes nothing.
        #[test]
        fn the_fit_is_finite_and_ignores_the_order_of_games(
            starts in prop::collection::vec(any_start(), 2..12),
            picks in prop::collection::vec((0usize..12, 0usize..12, any_score()), 0..80),
            rotate in 0usize..80,
        ) {
            let bots = starts.len();
            let games: Vec<FitGame> = picks
                .iter()
                .map(|&(a, b, score)| game(a % bots, b % bots, score))
                .collect();
            let fitted = season_fit(&starts, &games);
            prop_assert_eq!(fitted.len(), bots);
            for (fit, start) in fitted.iter().zip(&starts) {
                prop_assert!(fit.rating.is_finite() && fit.deviation.is_finite());
                prop_assert!(fit.deviation > 0.0 && fit.deviation <= start.deviation);
            }
            let mut shuffled = games.clone();
            shuffled.reverse();
            if !shuffled.is_empty() {
                let len = shuffled.len();
                shuffled.rotate_left(rotate % len);
            }
            let again = season_fit(&starts, &shuffled);
            for (x, y) in fitted.iter().zip(&again) {
                prop_assert!((x.rating - y.rating).abs() < 1e-5, "{:?} vs {:?}", fitted, again);
            }
        }
    }
}
