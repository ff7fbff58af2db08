//! Openings: the first exchanges of a match forced for both fighters, so that
//! deterministic bots play varied games in tournaments and SPRT runs. Made at
//! random from a seed (`--openings N`) or read from a book (`--book FILE`), and
//! always legal: each forced action is one its fighter can pay for.

use std::fmt;

use duel_rules::{Action, MatchState, Ruleset, Side};

use crate::builtin::SplitMix64;
use crate::error::MatchError;
use crate::limits::{MAX_BOOK_BYTES, MAX_BOOK_OPENINGS, MAX_OPENING_EXCHANGES};

/// One opening: per exchange, the actions of fighters `a` and `b`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Opening {
    exchanges: Vec<[Action; 2]>,
}

impl Opening {
    /// No forced exchange.
    pub fn none() -> Opening {
        Opening::default()
    }

    pub fn exchanges(&self) -> &[[Action; 2]] {
        &self.exchanges
    }

    /// The opening a replay records (a fork plays its parent's).
    pub fn of_replay(replay: &duel_replays::Replay) -> Opening {
        Opening {
            exchanges: replay
                .opening
                .iter()
                .map(|[a, b]| [Action::from(*a), Action::from(*b)])
                .collect(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.exchanges.is_empty()
    }

    /// `length` exchanges drawn from `seed`, each fighter uniform over the actions
    /// it can pay for at that point. `length` is at most
    /// [`MAX_OPENING_EXCHANGES`] (clap checks it; longer is cut).
    pub fn random(ruleset: Ruleset, seed: u64, length: usize) -> Opening {
        // A stream of its own: the match seed also seeds the fighters.
        let mut rng = SplitMix64::new(seed ^ 0x3c6e_f372_fe94_f82b);
        let mut state = MatchState::new(ruleset);
        let mut exchanges = Vec::with_capacity(length);
        for _ in 0..length.min(MAX_OPENING_EXCHANGES) {
            let chosen = [Side::A, Side::B].map(|side| {
                let stamina = state.fighter(side).stamina;
                let payable: Vec<Action> = Action::ALL
                    .into_iter()
                    .filter(|action| ruleset.can_pay(*action, stamina))
                    .collect();
                // BLOCK and RECOVER cost nothing, so `payable` is never empty.
                payable[rng.below(payable.len() as u64) as usize]
            });
            match state.play_exchange(chosen) {
                Ok(step) if step.round_result.is_none() => exchanges.push(chosen),
                // An opening never decides a round: stop before one would.
                _ => break,
            }
        }
        Opening { exchanges }
    }

    /// Parses one book line: exchanges separated by spaces, each `A:B` with the
    /// two fighters' actions (`JAB:BLOCK FEINT:DODGE`), checked against the rules.
    pub fn parse(ruleset: Ruleset, line: &str) -> Result<Opening, String> {
        let mut state = MatchState::new(ruleset);
        let mut exchanges = Vec::new();
        for (position, token) in line.split_whitespace().enumerate() {
            let number = position + 1;
            if number > MAX_OPENING_EXCHANGES {
                return Err(format!(
                    "more than {MAX_OPENING_EXCHANGES} exchanges (an opening is the start of a match)"
                ));
            }
            let (a, b) = token
                .split_once(':')
                .ok_or_else(|| format!("exchange {number} {token:?} is not ACTION:ACTION"))?;
            let chosen = [a, b].map(|name| name.parse::<Action>());
            let chosen = match chosen {
                [Ok(a), Ok(b)] => [a, b],
                [Err(error), _] | [_, Err(error)] => {
                    return Err(format!("exchange {number}: {error}"));
                }
            };
            for side in [Side::A, Side::B] {
                let stamina = state.fighter(side).stamina;
                if !ruleset.can_pay(chosen[side.index()], stamina) {
                    return Err(format!(
                        "exchange {number}: fighter {} cannot pay for {} with stamina {stamina}",
                        side.name(),
                        chosen[side.index()].name()
                    ));
                }
            }
            match state.play_exchange(chosen) {
                Ok(step) if step.round_result.is_none() => exchanges.push(chosen),
                _ => return Err(format!("exchange {number} ends the round: too long")),
            }
        }
        Ok(Opening { exchanges })
    }

    /// A book: one opening per line; blank lines and `#` comments are skipped.
    pub fn parse_book(ruleset: Ruleset, text: &str) -> Result<Vec<Opening>, MatchError> {
        if text.len() > MAX_BOOK_BYTES {
            return Err(MatchError::Spec(format!(
                "the opening book is {} bytes, more than the {MAX_BOOK_BYTES}-byte limit",
                text.len()
            )));
        }
        let mut book = Vec::new();
        for (index, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            if book.len() == MAX_BOOK_OPENINGS {
                return Err(MatchError::Spec(format!(
                    "the opening book has more than {MAX_BOOK_OPENINGS} openings"
                )));
            }
            let opening = Opening::parse(ruleset, line).map_err(|why| {
                MatchError::Spec(format!("opening book, line {}: {why}", index + 1))
            })?;
            book.push(opening);
        }
        if book.is_empty() {
            return Err(MatchError::Spec(
                "the opening book has no openings (one per line, e.g. `JAB:BLOCK FEINT:DODGE`)"
                    .to_owned(),
            ));
        }
        Ok(book)
    }
}

impl From<Vec<[Action; 2]>> for Opening {
    fn from(exchanges: Vec<[Action; 2]>) -> Opening {
        Opening { exchanges }
    }
}

/// As a book line.
impl fmt::Display for Opening {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (position, [a, b]) in self.exchanges.iter().enumerate() {
            if position > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{}:{}", a.name(), b.name())?;
        }
        Ok(())
    }
}

/// Where a tournament's or an SPRT run's openings come from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum OpeningSource {
    /// Every match starts as usual.
    #[default]
    None,
    /// `N` random exchanges drawn from each match's seed.
    Random(usize),
    /// The book's openings, one per seed.
    Book(Vec<Opening>),
}

impl OpeningSource {
    /// The opening of the match played on `seed`. Both games of a pair share
    /// their seed, so each bot plays the opening from both sides.
    pub fn for_seed(&self, ruleset: Ruleset, seed: u64) -> Opening {
        match self {
            OpeningSource::None => Opening::none(),
            OpeningSource::Random(length) => Opening::random(ruleset, seed, *length),
            OpeningSource::Book(book) if book.is_empty() => Opening::none(),
            OpeningSource::Book(book) => {
                // Mixed first: schedule seeds are often consecutive.
                let mut mixer = SplitMix64::new(seed);
                book[mixer.below(book.len() as u64) as usize].clone()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_openings_are_legal_seeded_and_varied() {
        let ruleset = Ruleset::CURRENT;
        let mut seen = std::collections::BTreeSet::new();
        for seed in 0..200 {
            let opening = Opening::random(ruleset, seed, 4);
            assert_eq!(opening, Opening::random(ruleset, seed, 4));
            let again = Opening::parse(ruleset, &opening.to_string()).expect("legal");
            assert_eq!(again, opening);
            seen.insert(opening.to_string());
        }
        assert!(seen.len() > 150, "only {} distinct openings", seen.len());
    }

    #[test]
    fn book_lines_are_checked_against_the_rules() {
        let ruleset = Ruleset::CURRENT;
        let book = Opening::parse_book(
            ruleset,
            "# two openings\nJAB:BLOCK\n\nFEINT:DODGE JAB:JAB # c\n",
        )
        .expect("book");
        assert_eq!(book.len(), 2);
        assert_eq!(book[1].to_string(), "FEINT:DODGE JAB:JAB");
        for (line, expected) in [
            ("JAB", "not ACTION:ACTION"),
            ("JAB:KICK", "exchange 1"),
            (
                "HEAVY:BLOCK HEAVY:BLOCK HEAVY:BLOCK HEAVY:BLOCK HEAVY:BLOCK HEAVY:BLOCK HEAVY:BLOCK HEAVY:BLOCK",
                "exchange",
            ),
        ] {
            let error = Opening::parse_book(ruleset, line)
                .expect_err(line)
                .to_string();
            assert!(
                error.contains("line 1") && error.contains(expected),
                "{line}: {error}"
            );
        }
        assert!(Opening::parse_book(ruleset, "# nothing\n").is_err());
    }

    #[test]
    fn both_games_of_a_pair_share_the_opening() {
        let ruleset = Ruleset::CURRENT;
        let source = OpeningSource::Random(3);
        assert_eq!(source.for_seed(ruleset, 9), source.for_seed(ruleset, 9));
        assert_eq!(OpeningSource::None.for_seed(ruleset, 9), Opening::none());
    }
}
