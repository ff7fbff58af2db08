//! A whole match: rounds, knockouts, judging after the last exchange, clinching and
//! the match result with its total-damage tie-break.

use std::fmt;

use crate::action::{Action, Side};
use crate::exchange::{ExchangeOutcome, FighterState};
use crate::ruleset::Ruleset;

/// Who took a round or a match.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Winner {
    A,
    B,
    Draw,
}

impl Winner {
    pub const fn name(self) -> &'static str {
        match self {
            Winner::A => "a",
            Winner::B => "b",
            Winner::Draw => "draw",
        }
    }

    pub fn from_name(name: &str) -> Option<Winner> {
        [Winner::A, Winner::B, Winner::Draw]
            .into_iter()
            .find(|winner| winner.name() == name)
    }

    pub const fn side(self) -> Option<Side> {
        match self {
            Winner::A => Some(Side::A),
            Winner::B => Some(Side::B),
            Winner::Draw => None,
        }
    }

    const fn of(side: Side) -> Winner {
        match side {
            Side::A => Winner::A,
            Side::B => Winner::B,
        }
    }

    /// The larger value wins; equal values are a draw.
    fn by_larger<T: Ord>(a: T, b: T) -> Winner {
        match a.cmp(&b) {
            std::cmp::Ordering::Greater => Winner::A,
            std::cmp::Ordering::Less => Winner::B,
            std::cmp::Ordering::Equal => Winner::Draw,
        }
    }
}

impl fmt::Display for Winner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// How a round ended. A double knockout is `Ko` with a drawn winner; `Draw` is a
/// round judged level on HP, stamina and damage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RoundEnd {
    Ko,
    Hp,
    Stamina,
    Damage,
    Draw,
}

impl RoundEnd {
    pub const ALL: [RoundEnd; 5] = [
        RoundEnd::Ko,
        RoundEnd::Hp,
        RoundEnd::Stamina,
        RoundEnd::Damage,
        RoundEnd::Draw,
    ];

    pub const fn name(self) -> &'static str {
        match self {
            RoundEnd::Ko => "ko",
            RoundEnd::Hp => "hp",
            RoundEnd::Stamina => "stamina",
            RoundEnd::Damage => "damage",
            RoundEnd::Draw => "draw",
        }
    }

    pub fn from_name(name: &str) -> Option<RoundEnd> {
        RoundEnd::ALL.into_iter().find(|end| end.name() == name)
    }
}

impl fmt::Display for RoundEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RoundResult {
    pub winner: Winner,
    pub by: RoundEnd,
}

/// What decided a match.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MatchDecision {
    /// More rounds won.
    Rounds,
    /// Round wins level; more total damage dealt across all rounds.
    Damage,
    /// Level on both: stakes returned in full, no rake.
    Draw,
}

impl MatchDecision {
    pub const fn name(self) -> &'static str {
        match self {
            MatchDecision::Rounds => "rounds",
            MatchDecision::Damage => "damage",
            MatchDecision::Draw => "draw",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MatchResult {
    pub winner: Winner,
    pub decided_by: MatchDecision,
    pub round_wins: [u8; 2],
    /// Total damage each fighter dealt across all rounds.
    pub damage: [u32; 2],
}

/// Everything one call of [`MatchState::play_exchange`] resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExchangeStep {
    /// The round this exchange belonged to (1-based).
    pub round: u8,
    /// Its number within the round (1-based).
    pub exchange: u8,
    pub outcome: ExchangeOutcome,
    /// Set when this exchange ended its round.
    pub round_result: Option<RoundResult>,
    /// Set when this exchange ended the match.
    pub match_result: Option<MatchResult>,
}

/// The match has already ended; no more exchanges can be played.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatchOver;

impl fmt::Display for MatchOver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the match has already ended")
    }
}

impl std::error::Error for MatchOver {}

/// The state of a match between exchanges: a pure state machine fed with both
/// fighters' actions (after substitution), one exchange at a time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatchState {
    ruleset: Ruleset,
    /// The current round, 1-based.
    round: u8,
    /// Exchanges already played in the current round.
    exchanges_played: u8,
    fighters: [FighterState; 2],
    round_damage: [u32; 2],
    match_damage: [u32; 2],
    round_wins: [u8; 2],
    result: Option<MatchResult>,
}

impl MatchState {
    pub fn new(ruleset: Ruleset) -> MatchState {
        MatchState {
            ruleset,
            round: 1,
            exchanges_played: 0,
            fighters: [ruleset.fresh_fighter(); 2],
            round_damage: [0; 2],
            match_damage: [0; 2],
            round_wins: [0; 2],
            result: None,
        }
    }

    pub fn ruleset(&self) -> Ruleset {
        self.ruleset
    }

    /// The round the next exchange belongs to.
    pub fn round(&self) -> u8 {
        self.round
    }

    /// The number (1-based) of the next exchange within its round.
    pub fn next_exchange(&self) -> u8 {
        self.exchanges_played + 1
    }

    pub fn fighter(&self, side: Side) -> FighterState {
        self.fighters[side.index()]
    }

    pub fn fighters(&self) -> [FighterState; 2] {
        self.fighters
    }

    pub fn round_wins(&self) -> [u8; 2] {
        self.round_wins
    }

    /// Damage dealt so far in the current round.
    pub fn round_damage(&self) -> [u32; 2] {
        self.round_damage
    }

    /// Damage dealt so far in the match.
    pub fn match_damage(&self) -> [u32; 2] {
        self.match_damage
    }

    /// The match result once the match has ended.
    pub fn result(&self) -> Option<MatchResult> {
        self.result
    }

    pub fn is_over(&self) -> bool {
        self.result.is_some()
    }

    /// Plays one exchange with the actions attempted (after substitution).
    pub fn play_exchange(&mut self, chosen: [Action; 2]) -> Result<ExchangeStep, MatchOver> {
        if self.result.is_some() {
            return Err(MatchOver);
        }
        let outcome = self.ruleset.resolve_exchange(self.fighters, chosen);
        let round = self.round;
        self.exchanges_played += 1;
        let exchange = self.exchanges_played;
        for index in 0..2 {
            self.fighters[index] = outcome.sides[index].after;
            // Damage taken is never negative: the table has no healing.
            let dealt = outcome.damage_dealt(index).unsigned_abs();
            self.round_damage[index] += dealt;
            self.match_damage[index] += dealt;
        }
        let round_result = self.round_result_if_over();
        let mut match_result = None;
        if let Some(result) = round_result {
            if let Some(side) = result.winner.side() {
                self.round_wins[side.index()] += 1;
            }
            match_result = self.match_result_if_over();
            self.result = match_result;
            if match_result.is_none() {
                self.start_next_round();
            }
        }
        Ok(ExchangeStep {
            round,
            exchange,
            outcome,
            round_result,
            match_result,
        })
    }

    fn round_result_if_over(&self) -> Option<RoundResult> {
        let [a, b] = self.fighters;
        match (a.hp <= 0, b.hp <= 0) {
            (true, true) => {
                return Some(RoundResult {
                    winner: Winner::Draw,
                    by: RoundEnd::Ko,
                });
            }
            (true, false) => return Some(knockout(Side::B)),
            (false, true) => return Some(knockout(Side::A)),
            (false, false) => {}
        }
        if self.exchanges_played < self.ruleset.exchanges_per_round() {
            return None;
        }
        // Judged in strict order (D-5: damage dealt in this round).
        let judged = [
            (Winner::by_larger(a.hp, b.hp), RoundEnd::Hp),
            (Winner::by_larger(a.stamina, b.stamina), RoundEnd::Stamina),
            (
                Winner::by_larger(self.round_damage[0], self.round_damage[1]),
                RoundEnd::Damage,
            ),
        ];
        let decided = judged
            .into_iter()
            .find(|(winner, _)| *winner != Winner::Draw)
            .map(|(winner, by)| RoundResult { winner, by });
        Some(decided.unwrap_or(RoundResult {
            winner: Winner::Draw,
            by: RoundEnd::Draw,
        }))
    }

    /// D-6: the match ends once a fighter has more round wins than the opponent's
    /// wins plus the rounds left, or when every round has been played.
    fn match_result_if_over(&self) -> Option<MatchResult> {
        let rounds_left = self.ruleset.rounds_per_match() - self.round;
        let [wins_a, wins_b] = self.round_wins;
        let clinched = wins_a > wins_b + rounds_left || wins_b > wins_a + rounds_left;
        if !clinched && rounds_left > 0 {
            return None;
        }
        let (winner, decided_by) = match Winner::by_larger(wins_a, wins_b) {
            Winner::Draw => match Winner::by_larger(self.match_damage[0], self.match_damage[1]) {
                Winner::Draw => (Winner::Draw, MatchDecision::Draw),
                winner => (winner, MatchDecision::Damage),
            },
            winner => (winner, MatchDecision::Rounds),
        };
        Some(MatchResult {
            winner,
            decided_by,
            round_wins: self.round_wins,
            damage: self.match_damage,
        })
    }

    /// D-2: status and vulnerabilities are cleared; only round results, cumulative
    /// damage and the token budget carry over.
    fn start_next_round(&mut self) {
        self.round += 1;
        self.exchanges_played = 0;
        self.fighters = [self.ruleset.fresh_fighter(); 2];
        self.round_damage = [0; 2];
    }
}

fn knockout(winner: Side) -> RoundResult {
    RoundResult {
        winner: Winner::of(winner),
        by: RoundEnd::Ko,
    }
}
