//! Glicko-2 ratings per class per season (through the `skillratings` crate),
//! the season fit the standings stand on, the provisional flag, the
//! conservative rating standings rank by, and the soft reset between seasons.
//! Pure functions over plain numbers.

use std::collections::HashMap;

use skillratings::Outcomes;
use skillratings::glicko2::{Glicko2Config, Glicko2Rating, glicko2, glicko2_rating_period};

use crate::limits::{
    CONSERVATIVE_DEVIATIONS, GLICKO2_TAU, PROVISIONAL_DEVIATION, SEASON_FIT_FULL_STEP,
    SEASON_FIT_MAX_CG_ITERATIONS, SEASON_FIT_MAX_HALVINGS, SEASON_FIT_MAX_NEWTON_STEPS,
    SEASON_FIT_MAX_STEP, SEASON_FIT_TOLERANCE, SOFT_RESET_KEEP, SOFT_RESET_MIN_DEVIATION,
};

/// Rating points per unit of Glicko-2's internal scale (400 / ln 10).
const GLICKO2_SCALE: f64 = 173.7178;

/// The rating a bot starts a class with in its first season.
pub const INITIAL: Rating = Rating {
    rating: 1500.0,
    deviation: 350.0,
    volatility: 0.06,
};

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rating {
    pub rating: f64,
    pub deviation: f64,
    pub volatility: f64,
}

/// One game's result from the first player's side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Score {
    Win,
    Loss,
    Draw,
}

impl Score {
    /// The first player's points: 1, ½ or 0.
    pub fn points(self) -> f64 {
        match self {
            Score::Win => 1.0,
            Score::Draw => 0.5,
            Score::Loss => 0.0,
        }
    }

    fn outcome(self) -> Outcomes {
        match self {
            Score::Win => Outcomes::WIN,
            Score::Loss => Outcomes::LOSS,
            Score::Draw => Outcomes::DRAW,
        }
    }
}

fn config() -> Glicko2Config {
    Glicko2Config {
        tau: GLICKO2_TAU,
        ..Glicko2Config::new()
    }
}

impl From<Rating> for Glicko2Rating {
    fn from(rating: Rating) -> Glicko2Rating {
        Glicko2Rating {
            rating: rating.rating,
            deviation: rating.deviation,
            volatility: rating.volatility,
        }
    }
}

impl From<Glicko2Rating> for Rating {
    fn from(rating: Glicko2Rating) -> Rating {
        Rating {
            rating: rating.rating,
            deviation: rating.deviation,
            volatility: rating.volatility,
        }
    }
}

impl Rating {
    /// What standings rank by: a rating the bot is very likely above.
    pub fn conservative(self) -> f64 {
        self.rating - CONSERVATIVE_DEVIATIONS * self.deviation
    }

    pub fn is_provisional(self) -> bool {
        self.deviation >= PROVISIONAL_DEVIATION
    }

    /// The start of the next season: halfway back to 1500, with the deviation
    /// raised to at least 150 (never above the initial 350), volatility kept.
    pub fn soft_reset(self) -> Rating {
        Rating {
            rating: INITIAL.rating + SOFT_RESET_KEEP * (self.rating - INITIAL.rating),
            deviation: self
                .deviation
                .clamp(SOFT_RESET_MIN_DEVIATION, INITIAL.deviation),
            volatility: self.volatility,
        }
    }
}

/// Both ratings after one match, each match being its own rating period.
pub fn update(a: Rating, b: Rating, score_a: Score) -> (Rating, Rating) {
    let (a, b) = glicko2(&a.into(), &b.into(), &score_a.outcome(), &config());
    (a.into(), b.into())
}

/// One rating period with several games (Glickman's paper computes this).
pub fn rating_period(player: Rating, games: &[(Rating, Score)]) -> Rating {
    let results: Vec<(Glicko2Rating, Outcomes)> = games
        .iter()
        .map(|(opponent, score)| ((*opponent).into(), score.outcome()))
        .collect();
    glicko2_rating_period(&player.into(), &results, &config()).into()
}

/// One rated game of a season between two bots, by their index in the slice
/// of season-start ratings given to [`season_fit`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FitGame {
    pub a: usize,
    pub b: usize,
    pub score_a: Score,
}

/// Every bot's rating from all the rated games of its season at once, whatever
/// the order they were played in (docs/RULES.md, "Standings: one fit of the
/// season").
///
/// Sequential Glicko-2 rates each match as its own rating period, so with a
/// handful of games per bot the order of the games decides the table: a bot
/// that lost its first games while its deviation was near 350 stays low
/// (docs/perf/ladder.md). The fit is the maximum a posteriori estimate of the
/// Bradley–Terry model that Glicko-2 also rests on: P(a beats b) =
/// 1 / (1 + e^(μ_b − μ_a)) on Glicko-2's scale, a draw counting half a win,
/// with each bot's season-start rating as its Gaussian prior (mean `rating`,
/// standard deviation `deviation`). A bot's deviation is the Laplace
/// approximation at the fit, 1 / √(curvature), never above its start; its
/// volatility is kept. The objective is strictly concave, so the answer is
/// unique. It is found by damped Newton steps, each solved over all bots at
/// once by conjugate gradients (the curvature is the priors' diagonal plus a
/// weighted graph Laplacian of the games), each halved until the objective
/// rises.
///
/// Games naming an index outside `starts`, or the same bot twice, are ignored.
pub fn season_fit(starts: &[Rating], games: &[FitGame]) -> Vec<Rating> {
    let games: Vec<(usize, usize, f64)> = games
        .iter()
        .filter(|game| game.a != game.b && game.a < starts.len() && game.b < starts.len())
        .map(|game| (game.a, game.b, game.score_a.points()))
        .collect();
    // Every pair met weighs the same, the class's rated games shared evenly
    // between its pairs: a pair rated n times counts (games ÷ pairs) / n per
    // game. Equal weights make the fit rank by the mean score against each
    // opponent met, as a round robin does, however often a pair was rated;
    // the share keeps the evidence as heavy as the games rated, so that
    // deviations narrow as a season goes on. Weighed as one game each, a
    // class's pairs told the fit no more than its priors did: in an 8-bot
    // class every deviation stayed above the provisional line all season,
    // and the owner with fewer bots (more possible opponents) ranked higher
    // on the deviation alone (docs/perf/ladder.md).
    let mut per_pair: HashMap<(usize, usize), f64> = HashMap::new();
    for &(a, b, _) in &games {
        *per_pair.entry((a.min(b), a.max(b))).or_default() += 1.0;
    }
    let share = games.len() as f64 / per_pair.len().max(1) as f64;
    let games: Vec<(usize, usize, f64, f64)> = games
        .into_iter()
        .map(|(a, b, points)| (a, b, points, share / per_pair[&(a.min(b), a.max(b))]))
        .collect();
    let mut played = vec![false; starts.len()];
    for &(a, b, _, _) in &games {
        played[a] = true;
        played[b] = true;
    }
    let prior: Vec<(f64, f64)> = starts
        .iter()
        .map(|start| {
            let mean = (start.rating - INITIAL.rating) / GLICKO2_SCALE;
            // A zero or negative deviation would make the prior a wall.
            let deviation = (start.deviation / GLICKO2_SCALE).max(1e-6);
            (mean, 1.0 / (deviation * deviation))
        })
        .collect();
    let fit = Fit {
        prior: &prior,
        games: &games,
    };
    let mut mu: Vec<f64> = prior.iter().map(|(mean, _)| *mean).collect();
    for _ in 0..SEASON_FIT_MAX_NEWTON_STEPS {
        let (gradient, weights, diagonal) = fit.slope(&mu);
        let mut step = fit.newton_step(&gradient, &weights, &diagonal);
        let longest = step.iter().map(|x| x.abs()).fold(0.0, f64::max);
        if longest <= SEASON_FIT_FULL_STEP {
            // Near the top the objective is flat to its last bits, so a
            // search on it stops short, where the order of its sums decides;
            // Newton's step, which converges quadratically there, is taken
            // whole, and it says how far the top still is.
            for (mu, step) in mu.iter_mut().zip(&step) {
                *mu += step;
            }
            if longest < SEASON_FIT_TOLERANCE {
                break;
            }
            continue;
        }
        if longest > SEASON_FIT_MAX_STEP {
            step.iter_mut()
                .for_each(|x| *x *= SEASON_FIT_MAX_STEP / longest);
        }
        // Halve until the objective does not fall: Newton's step on a
        // concave objective rises near the top, but not always far from it.
        let now = fit.objective(&mu);
        let mut scale = 1.0;
        let mut next = mu.clone();
        let mut rose = false;
        for _ in 0..SEASON_FIT_MAX_HALVINGS {
            for ((next, mu), step) in next.iter_mut().zip(&mu).zip(&step) {
                *next = mu + scale * step;
            }
            if fit.objective(&next) >= now {
                rose = true;
                break;
            }
            scale *= 0.5;
        }
        // Nothing representable rises: this is the top, to the last bit.
        if !rose || next == mu {
            break;
        }
        mu = next;
    }
    let (_, _, diagonal) = fit.slope(&mu);
    starts
        .iter()
        .enumerate()
        .map(|(bot, start)| {
            if !played[bot] {
                return *start;
            }
            Rating {
                rating: INITIAL.rating + GLICKO2_SCALE * mu[bot],
                deviation: (GLICKO2_SCALE / diagonal[bot].sqrt()).min(start.deviation),
                volatility: start.volatility,
            }
        })
        .collect()
}

/// The season fit's objective on Glicko-2's scale: the log-likelihood of the
/// games (a, b, a's points) plus each bot's Gaussian prior (mean, precision).
struct Fit<'a> {
    prior: &'a [(f64, f64)],
    games: &'a [(usize, usize, f64, f64)],
}

impl Fit<'_> {
    fn objective(&self, mu: &[f64]) -> f64 {
        // ln σ(x) = −softplus(−x), written so that no exp overflows.
        let log_sigmoid = |x: f64| -> f64 { x.min(0.0) - (-x.abs()).exp().ln_1p() };
        let likelihood: f64 = self
            .games
            .iter()
            .map(|&(a, b, points, weight)| {
                let lead = mu[a] - mu[b];
                weight * (points * log_sigmoid(lead) + (1.0 - points) * log_sigmoid(-lead))
            })
            .sum();
        let prior: f64 = self
            .prior
            .iter()
            .zip(mu)
            .map(|((mean, precision), mu)| 0.5 * precision * (mu - mean).powi(2))
            .sum();
        likelihood - prior
    }

    /// The gradient, each game's weight p·(1 − p) in the curvature, and the
    /// curvature's diagonal (the negative Hessian's).
    fn slope(&self, mu: &[f64]) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let mut gradient: Vec<f64> = self
            .prior
            .iter()
            .zip(mu)
            .map(|((mean, precision), mu)| -(mu - mean) * precision)
            .collect();
        let mut diagonal: Vec<f64> = self.prior.iter().map(|(_, precision)| *precision).collect();
        let mut weights = Vec::with_capacity(self.games.len());
        for &(a, b, points, pair_weight) in self.games {
            let expected = 1.0 / (1.0 + (mu[b] - mu[a]).exp());
            gradient[a] += pair_weight * (points - expected);
            gradient[b] -= pair_weight * (points - expected);
            let weight = pair_weight * expected * (1.0 - expected);
            diagonal[a] += weight;
            diagonal[b] += weight;
            weights.push(weight);
        }
        (gradient, weights, diagonal)
    }

    /// The curvature times `x`: the priors' diagonal plus, per game, its
    /// weight times the difference of its bots' entries.
    fn curvature_times(&self, weights: &[f64], x: &[f64]) -> Vec<f64> {
        let mut out: Vec<f64> = self
            .prior
            .iter()
            .zip(x)
            .map(|((_, precision), x)| precision * x)
            .collect();
        for (&(a, b, _, _), weight) in self.games.iter().zip(weights) {
            let flow = weight * (x[a] - x[b]);
            out[a] += flow;
            out[b] -= flow;
        }
        out
    }

    /// Solves curvature · step = gradient by conjugate gradients with the
    /// diagonal as preconditioner, to a residual 1e-12 of the gradient's.
    fn newton_step(&self, gradient: &[f64], weights: &[f64], diagonal: &[f64]) -> Vec<f64> {
        let dot = |x: &[f64], y: &[f64]| -> f64 { x.iter().zip(y).map(|(x, y)| x * y).sum() };
        let mut step = vec![0.0; gradient.len()];
        let mut residual = gradient.to_vec();
        let mut preconditioned: Vec<f64> =
            residual.iter().zip(diagonal).map(|(r, d)| r / d).collect();
        let mut direction = preconditioned.clone();
        let mut fit = dot(&residual, &preconditioned);
        let goal = dot(gradient, gradient) * 1e-24;
        for _ in 0..SEASON_FIT_MAX_CG_ITERATIONS {
            if dot(&residual, &residual) <= goal {
                break;
            }
            let bent = self.curvature_times(weights, &direction);
            let along = dot(&direction, &bent);
            if along <= 0.0 || !along.is_finite() {
                break;
            }
            let length = fit / along;
            for ((step, residual), (direction, bent)) in step
                .iter_mut()
                .zip(residual.iter_mut())
                .zip(direction.iter().zip(&bent))
            {
                *step += length * direction;
                *residual -= length * bent;
            }
            for ((preconditioned, residual), diagonal) in
                preconditioned.iter_mut().zip(&residual).zip(diagonal)
            {
                *preconditioned = residual / diagonal;
            }
            let next_fit = dot(&residual, &preconditioned);
            let keep = next_fit / fit;
            fit = next_fit;
            for (direction, preconditioned) in direction.iter_mut().zip(&preconditioned) {
                *direction = preconditioned + keep * *direction;
            }
        }
        step
    }
}
