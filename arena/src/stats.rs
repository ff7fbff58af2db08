//! Match statistics for testing bots against each other: Elo from a score with its
//! 95% interval, and the pentanomial sequential probability ratio test (SPRT).
//!
//! The formulas are the ones chess engine testers use:
//! - Elo and its interval from the per-game score variance, as cutechess-cli and
//!   fastchess print them (`elo = -400·log10(1/s − 1)`, interval from
//!   `s ± 1.96·σ/√n`).
//! - The SPRT log-likelihood ratio over match pairs in the pentanomial model with
//!   logistic Elo bounds, as fastchess computes it (`src/matchmaking/sprt/sprt.cpp`,
//!   `getLLR_logistic`): the maximum-likelihood distribution with a given expected
//!   score, from M. Van den Bergh, "Comments on Normalized Elo", proposition 1.1;
//!   empty outcome cells are regularised to 1e-3 as fastchess does; bounds
//!   ln(β/(1−α)) and ln((1−β)/α) (Wald).

/// Expected score of a player `elo` points stronger (logistic model).
pub fn score_of_elo(elo: f64) -> f64 {
    1.0 / (1.0 + 10f64.powf(-elo / 400.0))
}

/// Elo difference giving an expected score `score` (infinite at 0 and 1).
pub fn elo_of_score(score: f64) -> f64 {
    -400.0 * (1.0 / score - 1.0).log10()
}

/// Wins, draws and losses of one player (or one side of a pairing).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Wdl {
    pub wins: u64,
    pub draws: u64,
    pub losses: u64,
}

/// An Elo estimate with its 95% interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EloEstimate {
    pub elo: f64,
    /// Lower and upper ends of the 95% interval.
    pub low: f64,
    pub high: f64,
}

impl EloEstimate {
    /// Half the interval's width, the usual "±" figure.
    pub fn margin(&self) -> f64 {
        (self.high - self.low) / 2.0
    }
}

/// z for a two-sided 95% interval.
const Z_95: f64 = 1.959_963_984_540_054;

impl Wdl {
    /// One game's record from its points doubled: 2 a win, 1 a draw, else a loss.
    pub fn of_points_doubled(points_doubled: usize) -> Wdl {
        match points_doubled {
            2 => Wdl {
                wins: 1,
                draws: 0,
                losses: 0,
            },
            1 => Wdl {
                wins: 0,
                draws: 1,
                losses: 0,
            },
            _ => Wdl {
                wins: 0,
                draws: 0,
                losses: 1,
            },
        }
    }

    pub fn games(&self) -> u64 {
        self.wins + self.draws + self.losses
    }

    /// Points per game in [0, 1] (a draw is half a point).
    pub fn score(&self) -> Option<f64> {
        let games = self.games();
        (games > 0).then(|| (self.wins as f64 + 0.5 * self.draws as f64) / games as f64)
    }

    /// The Elo difference this record implies, with its 95% interval (trinomial
    /// per-game variance). `None` without games; infinite ends when the score or
    /// an interval end reaches 0 or 1.
    pub fn elo(&self) -> Option<EloEstimate> {
        let games = self.games() as f64;
        let score = self.score()?;
        let variance = (self.wins as f64 * (1.0 - score).powi(2)
            + self.draws as f64 * (0.5 - score).powi(2)
            + self.losses as f64 * score.powi(2))
            / games;
        let margin = Z_95 * (variance / games).sqrt();
        Some(EloEstimate {
            elo: elo_of_score(score),
            low: elo_of_score((score - margin).max(0.0)),
            high: elo_of_score((score + margin).min(1.0)),
        })
    }

    pub fn add(&mut self, other: Wdl) {
        self.wins += other.wins;
        self.draws += other.draws;
        self.losses += other.losses;
    }
}

/// Outcomes of match pairs (same seed, sides swapped) counted by the pair's score
/// for the player under test: 0, ½, 1, 1½, 2 points out of 2.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pentanomial {
    pub counts: [u64; 5],
}

impl Pentanomial {
    /// Records one pair; `points_doubled` is the pair's points × 2 (0..=4).
    pub fn add_pair(&mut self, points_doubled: usize) {
        self.counts[points_doubled.min(4)] += 1;
    }

    pub fn pairs(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Elo and its 95% interval from the pair scores (pentanomial variance, which
    /// accounts for the correlation within a pair).
    pub fn elo(&self) -> Option<EloEstimate> {
        let pairs = self.pairs() as f64;
        if pairs == 0.0 {
            return None;
        }
        let (mean, variance) = mean_and_variance(&PAIR_SCORES, &self.frequencies(false));
        let margin = Z_95 * (variance / pairs).sqrt();
        Some(EloEstimate {
            elo: elo_of_score(mean),
            low: elo_of_score((mean - margin).max(0.0)),
            high: elo_of_score((mean + margin).min(1.0)),
        })
    }

    fn frequencies(&self, regularise: bool) -> [f64; 5] {
        let counts = self.counts.map(|count| {
            if regularise && count == 0 {
                EMPTY_CELL_WEIGHT
            } else {
                count as f64
            }
        });
        let total: f64 = counts.iter().sum();
        counts.map(|count| count / total)
    }

    /// The log-likelihood ratio of H1 (`elo1`) against H0 (`elo0`), logistic Elo.
    pub fn llr(&self, elo0: f64, elo1: f64) -> f64 {
        if self.pairs() == 0 {
            return 0.0;
        }
        let frequencies = self.frequencies(true);
        let total: f64 = self
            .counts
            .map(|count| {
                if count == 0 {
                    EMPTY_CELL_WEIGHT
                } else {
                    count as f64
                }
            })
            .iter()
            .sum();
        let p0 = most_likely_with_mean(&PAIR_SCORES, &frequencies, score_of_elo(elo0));
        let p1 = most_likely_with_mean(&PAIR_SCORES, &frequencies, score_of_elo(elo1));
        let mean_log_ratio: f64 = (0..5)
            .map(|index| frequencies[index] * (p1[index].ln() - p0[index].ln()))
            .sum();
        total * mean_log_ratio
    }
}

/// A pair's score per outcome cell, as a fraction of the two games.
const PAIR_SCORES: [f64; 5] = [0.0, 0.25, 0.5, 0.75, 1.0];
/// What an empty cell counts for in the LLR (fastchess's `regularize`).
const EMPTY_CELL_WEIGHT: f64 = 1e-3;

fn mean_and_variance(scores: &[f64; 5], probabilities: &[f64; 5]) -> (f64, f64) {
    let mean: f64 = scores.iter().zip(probabilities).map(|(a, p)| a * p).sum();
    let variance = scores
        .iter()
        .zip(probabilities)
        .map(|(a, p)| p * (a - mean).powi(2))
        .sum();
    (mean, variance)
}

/// The distribution closest (maximum likelihood) to the empirical `observed` whose
/// expected score is `target`: p_i = p̂_i / (1 + θ(a_i − s)) with θ the root of
/// Σ p̂_i (a_i − s) / (1 + θ(a_i − s)) = 0, found by bisection (the sum falls
/// strictly as θ grows, on the interval where every denominator is positive).
fn most_likely_with_mean(scores: &[f64; 5], observed: &[f64; 5], target: f64) -> [f64; 5] {
    let equation = |theta: f64| -> f64 {
        scores
            .iter()
            .zip(observed)
            .map(|(a, p)| p * (a - target) / (1.0 + theta * (a - target)))
            .sum()
    };
    let mut low = -1.0 / (scores[4] - target);
    let mut high = -1.0 / (scores[0] - target);
    for _ in 0..200 {
        let middle = low + (high - low) / 2.0;
        if middle <= low || middle >= high {
            break;
        }
        if equation(middle) > 0.0 {
            low = middle;
        } else {
            high = middle;
        }
    }
    let theta = low + (high - low) / 2.0;
    let mut probabilities = [0.0; 5];
    for index in 0..5 {
        probabilities[index] = observed[index] / (1.0 + theta * (scores[index] - target));
    }
    probabilities
}

/// The SPRT's decision so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// H1: the new bot is at least `elo1` stronger.
    AcceptH1,
    /// H0: the new bot is at most `elo0` stronger.
    AcceptH0,
    Continue,
}

/// A sequential probability ratio test set-up.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sprt {
    pub elo0: f64,
    pub elo1: f64,
    pub alpha: f64,
    pub beta: f64,
}

impl Sprt {
    /// Validates the set-up; the message says what is wrong.
    pub fn new(elo0: f64, elo1: f64, alpha: f64, beta: f64) -> Result<Sprt, String> {
        if !(elo0.is_finite() && elo1.is_finite()) || elo0 >= elo1 {
            return Err(format!("--elo0 ({elo0}) must be less than --elo1 ({elo1})"));
        }
        for (name, value) in [("--alpha", alpha), ("--beta", beta)] {
            if !(value > 0.0 && value < 1.0) {
                return Err(format!("{name} must be between 0 and 1, not {value}"));
            }
        }
        if alpha + beta >= 1.0 {
            return Err(format!(
                "--alpha + --beta must be below 1, not {}",
                alpha + beta
            ));
        }
        Ok(Sprt {
            elo0,
            elo1,
            alpha,
            beta,
        })
    }

    /// Wald's bounds (lower, upper) on the LLR.
    pub fn bounds(&self) -> (f64, f64) {
        (
            (self.beta / (1.0 - self.alpha)).ln(),
            ((1.0 - self.beta) / self.alpha).ln(),
        )
    }

    pub fn verdict(&self, llr: f64) -> Verdict {
        let (lower, upper) = self.bounds();
        if llr >= upper {
            Verdict::AcceptH1
        } else if llr <= lower {
            Verdict::AcceptH0
        } else {
            Verdict::Continue
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use duel_match::builtin::SplitMix64;

    fn close(actual: f64, expected: f64, tolerance: f64) -> bool {
        (actual - expected).abs() <= tolerance
    }

    #[test]
    fn elo_and_score_are_inverse() {
        assert_eq!(elo_of_score(0.5), 0.0);
        assert!(close(elo_of_score(0.75), 190.848_501_887_864_9, 1e-9));
        assert!(close(score_of_elo(190.848_501_887_864_9), 0.75, 1e-12));
        assert!(close(score_of_elo(-100.0), 0.359_935_000_197_114_94, 1e-12));
    }

    /// Hand-computed: 60 wins, 20 draws, 20 losses → score 0.7; per-game variance
    /// (60·0.09 + 20·0.04 + 20·0.49)/100 = 0.16; σ/√n = 0.04; margin
    /// 1.96·0.04 = 0.0784; Elo(0.7) = −400·log10(1/0.7 − 1) = 147.19,
    /// Elo(0.6216) = 86.23, Elo(0.7784) = 218.25.
    #[test]
    fn elo_interval_matches_hand_computation() {
        let estimate = Wdl {
            wins: 60,
            draws: 20,
            losses: 20,
        }
        .elo()
        .expect("games");
        assert!(close(estimate.elo, 147.19, 0.01), "{estimate:?}");
        assert!(close(estimate.low, 86.23, 0.01), "{estimate:?}");
        assert!(close(estimate.high, 218.25, 0.01), "{estimate:?}");
        let even = Wdl {
            wins: 10,
            draws: 0,
            losses: 10,
        }
        .elo()
        .expect("games");
        assert_eq!(even.elo, 0.0);
        assert!(close(even.low, -even.high, 1e-9));
        assert_eq!(Wdl::default().elo(), None);
        let all_wins = Wdl {
            wins: 5,
            draws: 0,
            losses: 0,
        }
        .elo()
        .expect("games");
        assert!(all_wins.elo.is_infinite());
    }

    #[test]
    fn sprt_bounds_are_walds() {
        let sprt = Sprt::new(0.0, 10.0, 0.05, 0.05).expect("valid");
        let (lower, upper) = sprt.bounds();
        assert!(close(lower, -2.944_438_979_166_44, 1e-12));
        assert!(close(upper, 2.944_438_979_166_44, 1e-12));
        assert!(Sprt::new(10.0, 0.0, 0.05, 0.05).is_err());
        assert!(Sprt::new(0.0, 10.0, 0.0, 0.05).is_err());
        assert!(Sprt::new(0.0, 10.0, 0.6, 0.5).is_err());
    }

    /// Reference values from an independent implementation of the same formulas
    /// (`scripts/reference/sprt_llr.py`: exact root of the MLE equation by
    /// bisection), in the model fastchess's `getLLR_logistic` uses.
    #[test]
    fn llr_matches_reference_values() {
        let cases = [
            ([10, 50, 200, 60, 12], 0.0, 5.0, REFERENCE_LLR_A),
            ([0, 0, 2, 0, 37], 0.0, 20.0, REFERENCE_LLR_B),
            ([40, 60, 100, 60, 40], 0.0, 10.0, REFERENCE_LLR_C),
        ];
        for (counts, elo0, elo1, expected) in cases {
            let llr = Pentanomial { counts }.llr(elo0, elo1);
            assert!(
                close(llr, expected, 1e-6),
                "{counts:?}: {llr} vs {expected}"
            );
        }
    }

    // `python3 scripts/reference/sprt_llr.py ELO0 ELO1 LL LD DD WD WW`
    const REFERENCE_LLR_A: f64 = 0.445_092_574_010_521_2;
    const REFERENCE_LLR_B: f64 = 2.180_485_205_913_216_7;
    const REFERENCE_LLR_C: f64 = -0.338_648_192_331_332_86;

    /// Near the null and for many pairs, the exact LLR approaches the normal
    /// approximation N·(s1 − s0)(2ŝ − s0 − s1) / (2σ̂²) used by older testers.
    #[test]
    fn llr_agrees_with_the_normal_approximation() {
        let penta = Pentanomial {
            counts: [800, 2_400, 4_000, 2_500, 900],
        };
        let pairs = penta.pairs() as f64;
        let (mean, variance) = mean_and_variance(&PAIR_SCORES, &penta.frequencies(false));
        let (s0, s1) = (score_of_elo(0.0), score_of_elo(5.0));
        let approximate = pairs * (s1 - s0) * (2.0 * mean - s0 - s1) / (2.0 * variance);
        let exact = penta.llr(0.0, 5.0);
        assert!(
            close(exact, approximate, 0.02 * approximate.abs().max(1.0)),
            "{exact} vs {approximate}"
        );
    }

    /// Pair outcome probabilities of a player `elo` stronger, with a draw rate per
    /// game: games in a pair are independent here.
    fn pair_distribution(elo: f64, draw_rate: f64) -> [f64; 5] {
        let score = score_of_elo(elo);
        let win = (score - draw_rate / 2.0).max(0.0);
        let loss = 1.0 - win - draw_rate;
        let game = [loss, draw_rate, win];
        let mut pair = [0.0; 5];
        for (first, p_first) in game.iter().enumerate() {
            for (second, p_second) in game.iter().enumerate() {
                pair[first + second] += p_first * p_second;
            }
        }
        pair
    }

    fn run_sprt(rng: &mut SplitMix64, sprt: &Sprt, elo: f64, max_pairs: u64) -> Verdict {
        let distribution = pair_distribution(elo, 0.3);
        let mut penta = Pentanomial::default();
        for _ in 0..max_pairs {
            let draw = rng.next_u64() as f64 / u64::MAX as f64;
            let mut cumulative = 0.0;
            let mut cell = 4;
            for (index, p) in distribution.iter().enumerate() {
                cumulative += p;
                if draw < cumulative {
                    cell = index;
                    break;
                }
            }
            penta.add_pair(cell);
            match sprt.verdict(penta.llr(sprt.elo0, sprt.elo1)) {
                Verdict::Continue => {}
                verdict => return verdict,
            }
        }
        Verdict::Continue
    }

    /// Simulated bots of known strength: at elo0 the test accepts H1 at most about
    /// α of the time, at elo1 it accepts H0 at most about β of the time, and far
    /// from both it is almost always right.
    #[test]
    fn error_rates_hold_for_simulated_bots() {
        let sprt = Sprt::new(0.0, 20.0, 0.05, 0.05).expect("valid");
        let mut rng = SplitMix64::new(2026);
        let runs = 100;
        let count = |rng: &mut SplitMix64, elo: f64, wanted: Verdict| {
            (0..runs)
                .filter(|_| run_sprt(rng, &sprt, elo, 20_000) == wanted)
                .count()
        };
        let false_h1 = count(&mut rng, 0.0, Verdict::AcceptH1);
        let false_h0 = count(&mut rng, 20.0, Verdict::AcceptH0);
        // 5% of 100 is 5; allow for sampling noise (3σ ≈ 6.5).
        assert!(
            false_h1 <= 12,
            "H1 accepted {false_h1} times out of {runs} at elo0"
        );
        assert!(
            false_h0 <= 12,
            "H0 accepted {false_h0} times out of {runs} at elo1"
        );
        assert!(count(&mut rng, 60.0, Verdict::AcceptH1) >= runs - 2);
        assert!(count(&mut rng, -40.0, Verdict::AcceptH0) >= runs - 2);
    }
}
