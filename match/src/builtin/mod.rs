//! Native bots shipped in the referee. Each sees exactly the observation a real bot
//! would see, and each is a pure function of that observation, the match seed and
//! its side, so a replay can re-run it (see [`crate::verify`]).

mod counter;
mod rng;

use std::sync::Arc;

use duel_replays::{FighterInfo, FighterKind};
use duel_rules::{Action, Observation, Side};

pub use counter::Counter;
pub use rng::SplitMix64;

use crate::bot::{Bot, Decision, DecisionFuture};
use crate::spec::BuiltinSpec;

/// A synchronous built-in decision procedure. The bare runner calls it directly;
/// [`BuiltinBot`] puts it behind the async [`Bot`] seam.
pub trait Strategy: Send {
    fn decide(&mut self, observation: &Observation<'_>) -> Action;
}

/// `builtin:block`: the fallback policy, always BLOCK.
#[derive(Clone, Copy, Debug, Default)]
pub struct AlwaysBlock;

impl Strategy for AlwaysBlock {
    fn decide(&mut self, observation: &Observation<'_>) -> Action {
        observation.ruleset.fallback_action()
    }
}

/// `builtin:random`: uniform over the actions it can pay for, seeded.
#[derive(Clone, Debug)]
pub struct Random {
    rng: SplitMix64,
}

impl Random {
    pub fn new(seed: u64, side: Side) -> Random {
        Random {
            rng: SplitMix64::for_fighter(seed, side),
        }
    }
}

impl Strategy for Random {
    fn decide(&mut self, observation: &Observation<'_>) -> Action {
        let mut affordable = [Action::Block; 6];
        let mut count = 0;
        for action in Action::ALL {
            if observation.can_pay(action) {
                affordable[count] = action;
                count += 1;
            }
        }
        // BLOCK and RECOVER are always payable, so count >= 2.
        affordable[self.rng.below(count as u64) as usize]
    }
}

/// `builtin:script:A,B,…`: the i-th decision of the match (from 0, across rounds)
/// plays item i mod len.
#[derive(Clone, Debug)]
pub struct Script {
    actions: Arc<[Action]>,
}

impl Script {
    /// `actions` must not be empty (the spec parser guarantees it).
    pub fn new(actions: Arc<[Action]>) -> Script {
        assert!(!actions.is_empty(), "a script needs at least one action");
        Script { actions }
    }
}

impl Strategy for Script {
    fn decide(&mut self, observation: &Observation<'_>) -> Action {
        self.actions[observation.decision_index() % self.actions.len()]
    }
}

/// Any built-in strategy, dispatched without boxing (the tournament hot path).
#[derive(Clone, Debug)]
pub enum BuiltinStrategy {
    Block(AlwaysBlock),
    Random(Random),
    Script(Script),
    Counter(Counter),
}

impl Strategy for BuiltinStrategy {
    fn decide(&mut self, observation: &Observation<'_>) -> Action {
        match self {
            BuiltinStrategy::Block(strategy) => strategy.decide(observation),
            BuiltinStrategy::Random(strategy) => strategy.decide(observation),
            BuiltinStrategy::Script(strategy) => strategy.decide(observation),
            BuiltinStrategy::Counter(strategy) => strategy.decide(observation),
        }
    }
}

/// Builds the strategy a built-in spec names, for fighter `side` of a match
/// played with `seed`.
pub fn strategy(spec: &BuiltinSpec, seed: u64, side: Side) -> BuiltinStrategy {
    match spec {
        BuiltinSpec::Block => BuiltinStrategy::Block(AlwaysBlock),
        BuiltinSpec::Random => BuiltinStrategy::Random(Random::new(seed, side)),
        BuiltinSpec::Script(actions) => BuiltinStrategy::Script(Script::new(Arc::clone(actions))),
        BuiltinSpec::Counter => BuiltinStrategy::Counter(Counter),
    }
}

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
    let text: std::sync::Arc<str> = spec.to_string().into();
    FighterInfo {
        name: text.clone(),
        kind: FighterKind::Builtin,
        digest: crate::spec::sha256_digest(text.as_bytes()).into(),
        spec: Some(text),
    }
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
