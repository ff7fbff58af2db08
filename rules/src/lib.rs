//! Ruleset 1.0.0 of the duel as pure functions over plain data.
//!
//! Architecture invariant: this crate does no I/O, reads no clock, spawns nothing
//! and draws no random numbers. Identical choices give identical results, so every
//! replay re-verifies forever. Types here are deliberately not `Serialize`: the
//! boundary crates (`duel-replays`, the proto and WIT layers) own the wire formats.
//!
//! Start reading at [`Ruleset::resolve_exchange`] (one exchange, step by step as the
//! rules document lists them) and [`MatchState`] (rounds, judging, clinching and the
//! match result).

mod action;
mod exchange;
mod match_state;
mod observation;
mod ruleset;

pub use action::{Action, ParseActionError, Side, Source};
pub use exchange::{ExchangeOutcome, FighterState, SideOutcome};
pub use match_state::{
    ExchangeStep, MatchDecision, MatchOver, MatchResult, MatchState, RoundEnd, RoundResult, Winner,
};
pub use observation::{Observation, PublicExchange, PublicSide, TapeEntry, TapeSide};
pub use ruleset::{ParseClassError, Ruleset, UnknownRuleset, WeightClass};
