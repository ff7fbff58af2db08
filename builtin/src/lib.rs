//! The built-in fighters the referee ships (`builtin:block`, `random`,
//! `script:…`, `counter`) and their specs, as pure strategies over
//! `duel-rules`: each sees exactly the observation a real bot would see and is
//! a pure function of that observation, the match seed and its side, so a
//! replay can re-run it. The match engine (`duel-match`) puts them behind its
//! bot seam; the training env (`duel-env`) plays them as opponents, the same
//! code in both.

mod counter;
mod rng;

use std::fmt;
use std::sync::Arc;

use duel_rules::{Action, Observation, Side};

pub use counter::Counter;
pub use rng::SplitMix64;

/// The longest `builtin:script:` list accepted; a match has at most 36 decisions,
/// so longer scripts only waste memory.
pub const MAX_SCRIPT_ACTIONS: usize = 1_000;

/// How many recent opponent actions `builtin:counter` weighs (older ones count 1).
pub const COUNTER_MEMORY_EXCHANGES: i64 = 12;

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

/// The built-in bots.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BuiltinSpec {
    /// The fallback policy: always BLOCK.
    Block,
    /// Seeded, uniform over the actions it can pay for.
    Random,
    /// Plays the list, cycling over the match's decisions (shared, never empty).
    Script(Arc<[Action]>),
    /// Reads the tape and counters the opponent's habits.
    Counter,
}

/// The built-in bots, as error messages list them.
pub const BUILTIN_HELP: &str = "block, random, script:JAB,HEAVY,…, counter";

impl fmt::Display for BuiltinSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuiltinSpec::Block => f.write_str("builtin:block"),
            BuiltinSpec::Random => f.write_str("builtin:random"),
            BuiltinSpec::Counter => f.write_str("builtin:counter"),
            BuiltinSpec::Script(actions) => {
                f.write_str("builtin:script:")?;
                for (position, action) in actions.iter().enumerate() {
                    if position > 0 {
                        f.write_str(",")?;
                    }
                    f.write_str(action.name())?;
                }
                Ok(())
            }
        }
    }
}

/// Why a text is not a built-in spec, in one line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuiltinSpecError(pub String);

impl fmt::Display for BuiltinSpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BuiltinSpecError {}

fn spec_error(why: impl fmt::Display) -> BuiltinSpecError {
    BuiltinSpecError(why.to_string())
}

impl BuiltinSpec {
    /// Parses `builtin:NAME[:ARGS]`; the error says why in one line, without
    /// repeating the text.
    pub fn parse(text: &str) -> Result<BuiltinSpec, BuiltinSpecError> {
        let rest = text.strip_prefix("builtin:").ok_or_else(|| {
            BuiltinSpecError(format!(
                "not a built-in bot: expected builtin:NAME ({BUILTIN_HELP})"
            ))
        })?;
        let (name, args) = match rest.split_once(':') {
            Some((name, args)) => (name, Some(args)),
            None => (rest, None),
        };
        let no_args = |spec: BuiltinSpec| match args {
            None => Ok(spec),
            Some(_) => Err(spec_error(format!("builtin:{name} takes no arguments"))),
        };
        match name {
            "block" => no_args(BuiltinSpec::Block),
            "random" => no_args(BuiltinSpec::Random),
            "counter" => no_args(BuiltinSpec::Counter),
            "script" => {
                let args = args.unwrap_or("");
                if args.trim().is_empty() {
                    return Err(spec_error(
                        "empty script: list actions, e.g. builtin:script:JAB,HEAVY,FEINT",
                    ));
                }
                let actions = args
                    .split(',')
                    .map(|item| item.parse::<Action>().map_err(spec_error))
                    .collect::<Result<Vec<_>, _>>()?;
                if actions.len() > MAX_SCRIPT_ACTIONS {
                    return Err(spec_error(format!(
                        "script has {} actions, more than {MAX_SCRIPT_ACTIONS}",
                        actions.len()
                    )));
                }
                Ok(BuiltinSpec::Script(actions.into()))
            }
            other => Err(spec_error(format!(
                "unknown built-in bot {other:?} (available: {BUILTIN_HELP})"
            ))),
        }
    }
}
