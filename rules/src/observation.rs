//! What a bot sees when asked for a decision: the rules' "What the bots see", from
//! the asking fighter's point of view ("you" and "opponent").

use crate::action::{Action, Side, Source};
use crate::exchange::FighterState;
use crate::match_state::MatchState;
use crate::ruleset::{Ruleset, WeightClass};

/// One fighter's half of a public tape entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TapeSide {
    /// The action attempted after any substitution.
    pub action: Action,
    /// It could not be paid and EXHAUSTED was performed instead.
    pub exhausted: bool,
    /// Whether the bot chose it or the fallback was substituted, and why.
    pub source: Source,
    pub damage_taken: i32,
}

/// One earlier exchange of the match as the public tape records it, fighter `a`
/// first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TapeEntry {
    pub round: u8,
    pub exchange: u8,
    pub sides: [TapeSide; 2],
}

/// One earlier exchange seen from one fighter's side.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PublicExchange {
    pub round: u8,
    pub exchange: u8,
    pub you: TapeSide,
    pub opponent: TapeSide,
}

/// The public state of one fighter.
pub type PublicSide = FighterState;

/// A decision request. It borrows the tape so that asking a bot costs nothing
/// per earlier exchange; transports that need an owned copy convert it.
#[derive(Clone, Copy, Debug)]
pub struct Observation<'a> {
    pub ruleset: Ruleset,
    pub match_id: &'a str,
    pub class: WeightClass,
    /// The asking fighter's own remaining token budget (the opponent's is hidden).
    pub budget_left_tokens: u64,
    /// 1-based round of the exchange to decide.
    pub round: u8,
    /// 1-based number of the exchange to decide within its round.
    pub exchange: u8,
    pub you: FighterState,
    pub opponent: FighterState,
    pub your_round_wins: u8,
    pub opponent_round_wins: u8,
    /// Which fighter is asking: tells how to read `tape`.
    pub side: Side,
    /// Every earlier exchange of the match, fighter `a` first.
    pub tape: &'a [TapeEntry],
}

impl<'a> Observation<'a> {
    /// Builds the observation of `side` from the match state and the public tape.
    pub fn new(
        state: &MatchState,
        side: Side,
        match_id: &'a str,
        class: WeightClass,
        budget_left_tokens: u64,
        tape: &'a [TapeEntry],
    ) -> Observation<'a> {
        let wins = state.round_wins();
        Observation {
            ruleset: state.ruleset(),
            match_id,
            class,
            budget_left_tokens,
            round: state.round(),
            exchange: state.next_exchange(),
            you: state.fighter(side),
            opponent: state.fighter(side.other()),
            your_round_wins: wins[side.index()],
            opponent_round_wins: wins[side.other().index()],
            side,
            tape,
        }
    }

    /// The tape seen from this fighter's side, oldest first.
    pub fn history(
        &self,
    ) -> impl DoubleEndedIterator<Item = PublicExchange> + ExactSizeIterator + 'a {
        let you = self.side.index();
        self.tape.iter().map(move |entry| PublicExchange {
            round: entry.round,
            exchange: entry.exchange,
            you: entry.sides[you],
            opponent: entry.sides[1 - you],
        })
    }

    /// Number of decisions this fighter has made so far in the match (0-based index
    /// of the decision being asked for), counted across rounds.
    pub fn decision_index(&self) -> usize {
        self.tape.len()
    }

    /// Whether `action` can be paid from the current stamina (else it would be
    /// exhausted).
    pub fn can_pay(&self, action: Action) -> bool {
        self.ruleset.can_pay(action, self.you.stamina)
    }
}
