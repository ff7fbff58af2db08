//! Glicko-2 ratings per class per season (through the `skillratings` crate),
//! the season fit the standings stand on, the provisional flag, the
//! conservative rating standings rank by, and the soft reset between seasons.
//! Pure functions over plain numbers.

use skillratings::Outcomes;
use skillratings::glicko2::{Glicko2Config, Glicko2Rating, glicko2, glicko2_rating_period};

use crate::limits::{
    CONSERVATIVE_DEVIATIONS, GLICKO2_TAU, PROVISIONAL_DEVIATION, SEASON_FIT_MAX_STEP,
    SEASON_FIT_MAX_SWEEPS, SEASON_FIT_TOLERANCE, SOFT_RESET_KEEP, SOFT_RESET_MIN_DEVIATION,
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
/// unique; it is found by coordinate Newton steps in index order.
///
/// Games naming an index outside `starts`, or the same bot twice, are ignored.
pub fn season_fit(starts: &[Rating], games: &[FitGame]) -> Vec<Rating> {
    // Each bot's games as (opponent, points) from its own side.
    let mut played: Vec<Vec<(usize, f64)>> = vec![Vec::new(); starts.len()];
    for game in games {
        if game.a == game.b || game.a >= starts.len() || game.b >= starts.len() {
            continue;
        }
        let points = game.score_a.points();
        played[game.a].push((game.b, points));
        played[game.b].push((game.a, 1.0 - points));
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
    let mut mu: Vec<f64> = prior.iter().map(|(mean, _)| *mean).collect();
    // Gradient and curvature of the objective in one bot's rating.
    let slope = |mu: &[f64], bot: usize| -> (f64, f64) {
        let (mean, precision) = prior[bot];
        let mut gradient = -(mu[bot] - mean) * precision;
        let mut curvature = precision;
        for &(opponent, points) in &played[bot] {
            let expected = 1.0 / (1.0 + (mu[opponent] - mu[bot]).exp());
            gradient += points - expected;
            curvature += expected * (1.0 - expected);
        }
        (gradient, curvature)
    };
    for _ in 0..SEASON_FIT_MAX_SWEEPS {
        let mut largest_step: f64 = 0.0;
        for bot in 0..starts.len() {
            if played[bot].is_empty() {
                continue;
            }
            let (gradient, curvature) = slope(&mu, bot);
            let step = (gradient / curvature).clamp(-SEASON_FIT_MAX_STEP, SEASON_FIT_MAX_STEP);
            mu[bot] += step;
            largest_step = largest_step.max(step.abs());
        }
        if largest_step < SEASON_FIT_TOLERANCE {
            break;
        }
    }
    starts
        .iter()
        .enumerate()
        .map(|(bot, start)| {
            if played[bot].is_empty() {
                return *start;
            }
            let (_, curvature) = slope(&mu, bot);
            Rating {
                rating: INITIAL.rating + GLICKO2_SCALE * mu[bot],
                deviation: (GLICKO2_SCALE / curvature.sqrt()).min(start.deviation),
                volatility: start.volatility,
            }
        })
        .collect()
}
