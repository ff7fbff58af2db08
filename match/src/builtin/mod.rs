//! Native bots shipped in the referee. Each sees exactly the observation a real bot
//! would see, and each is a pure function of that observation, the match seed and
//! its side, so a replay can re-run it (see [`crate::verify`]).
//!
//! The strategies themselves live in `duel-builtin` (shared with the training
//! env); this module puts them behind the engine's [`Bot`] seam and names them
//! in replays.

use duel_replays::FighterInfo;
use duel_rules::{Observation, Side};

pub use duel_builtin::{
    AlwaysBlock, BuiltinStrategy, Counter, Random, Script, SplitMix64, Strategy, strategy,
};

use crate::bot::{Bot, Decision, DecisionFuture};
use crate::spec::BuiltinSpec;

/// A built-in spec with its replay header computed once, for runners that play
/// it many times.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuiltinFighter {
    pub spec: BuiltinSpec,
    pub info: FighterInfo,
}

impl BuiltinFighter {
    pub fn new(spec: BuiltinSpec) -> BuiltinFighter {
        let info = fighter_info(&spec);
        BuiltinFighter { spec, info }
    }
}

/// A built-in strategy behind the [`Bot`] seam: answers at once, spends nothing.
#[derive(Debug)]
pub struct BuiltinBot {
    info: FighterInfo,
    strategy: BuiltinStrategy,
}

impl BuiltinBot {
    pub fn new(spec: BuiltinSpec, seed: u64, side: Side) -> BuiltinBot {
        let strategy = strategy(&spec, seed, side);
        BuiltinBot {
            info: fighter_info(&spec),
            strategy,
        }
    }
}

/// The replay header of a built-in fighter: named and digested by its canonical
/// spec, which is all it takes to re-run it.
pub fn fighter_info(spec: &BuiltinSpec) -> FighterInfo {
    FighterInfo::builtin(&spec.to_string())
}

impl Bot for BuiltinBot {
    fn info(&self) -> FighterInfo {
        self.info.clone()
    }

    fn decide<'a>(&'a mut self, observation: Observation<'a>) -> DecisionFuture<'a> {
        let action = self.strategy.decide(&observation);
        Box::pin(std::future::ready(Decision::action(action)))
    }

    fn decide_now(&mut self, observation: Observation<'_>) -> Option<Decision> {
        Some(Decision::action(self.strategy.decide(&observation)))
    }

    fn abandoned(&mut self) -> duel_gateway::meter::Spent {
        duel_gateway::meter::Spent::default()
    }
}
