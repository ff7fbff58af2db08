//! Glicko-2 ratings per class per season (through the `skillratings` crate),
//! the provisional flag, the conservative rating standings rank by, and the soft
//! reset between seasons. Pure functions over plain numbers.

use skillratings::Outcomes;
use skillratings::glicko2::{Glicko2Config, Glicko2Rating, glicko2, glicko2_rating_period};

use crate::limits::{
    CONSERVATIVE_DEVIATIONS, GLICKO2_TAU, PROVISIONAL_DEVIATION, SOFT_RESET_KEEP,
    SOFT_RESET_MIN_DEVIATION,
};

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
