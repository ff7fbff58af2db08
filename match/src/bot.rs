//! The seam between the runner and a fighter: one trait, implemented by built-in,
//! WASM and endpoint bots alike.

use std::future::Future;
use std::pin::Pin;

use duel_replays::FighterInfo;
use duel_rules::{Action, Observation, Source};

use duel_gateway::meter::{ModelCall, Spent};

/// Why a bot's answer could not be used for this exchange (the fallback plays).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureCause {
    /// Answered after the wall clock, or not at all.
    Timeout,
    /// Crashed, trapped, hit a limit, answered something illegal, lost the line.
    Fault,
}

impl FailureCause {
    pub fn source(self) -> Source {
        match self {
            FailureCause::Timeout => Source::Timeout,
            FailureCause::Fault => Source::Fault,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BotFailure {
    pub cause: FailureCause,
    /// A few words for the replay ("trap: out of fuel", "connection refused").
    pub reason: String,
}

impl BotFailure {
    pub fn fault(reason: impl Into<String>) -> BotFailure {
        BotFailure {
            cause: FailureCause::Fault,
            reason: reason.into(),
        }
    }

    pub fn timeout(reason: impl Into<String>) -> BotFailure {
        BotFailure {
            cause: FailureCause::Timeout,
            reason: reason.into(),
        }
    }
}

/// A bot's answer to one observation, with what it spent getting there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub answer: Result<Action, BotFailure>,
    /// Model tokens (prompt + completion) metered during this decision.
    pub tokens: u64,
    /// The meter refused a call or the budget reached zero during this decision:
    /// this answer still counts, the fallback plays the rest of the match.
    pub gassed_out: bool,
    /// The bot answered from a fresh start after an earlier decision failed: its
    /// memory of the match is lost (WASM bots, whose instance a trap poisons).
    pub restarted: bool,
    /// What the bot logged while deciding, one entry per line (bounded again
    /// by the recorder, per decision and per match).
    pub log: Vec<String>,
    /// The bot logged more than its own bounds kept.
    pub log_truncated: bool,
    /// The model calls made while deciding, in order (the meter's record).
    pub calls: Vec<ModelCall>,
}

impl Decision {
    /// An answer that cost no tokens.
    pub fn action(action: Action) -> Decision {
        Decision {
            answer: Ok(action),
            tokens: 0,
            gassed_out: false,
            restarted: false,
            log: Vec::new(),
            log_truncated: false,
            calls: Vec::new(),
        }
    }

    /// An answer, with what the decision spent as the meter settled it.
    pub fn metered(answer: Result<Action, BotFailure>, spent: Spent) -> Decision {
        Decision {
            answer,
            tokens: spent.tokens,
            gassed_out: spent.gassed_out,
            restarted: false,
            log: Vec::new(),
            log_truncated: false,
            calls: spent.calls,
        }
    }

    pub fn failed(failure: BotFailure) -> Decision {
        Decision {
            answer: Err(failure),
            tokens: 0,
            gassed_out: false,
            restarted: false,
            log: Vec::new(),
            log_truncated: false,
            calls: Vec::new(),
        }
    }
}

/// The boxed future a [`Bot`] returns; boxed so bots of different kinds can sit
/// behind one `dyn Bot`.
pub type DecisionFuture<'a> = Pin<Box<dyn Future<Output = Decision> + Send + 'a>>;

/// One fighter, asked once per exchange. The runner owns the wall clock: a bot
/// need not enforce it, but it must not block the async runtime (WASM bots run
/// on blocking threads, endpoint bots await the network).
pub trait Bot: Send {
    /// Who this fighter is, for the replay header.
    fn info(&self) -> FighterInfo;

    /// Decides the next exchange. Never panics on any bot behaviour: failures are
    /// returned as [`BotFailure`]s.
    fn decide<'a>(&'a mut self, observation: Observation<'a>) -> DecisionFuture<'a>;

    /// Decides the next exchange at once, when this bot never waits for
    /// anything (built-in bots): the runner then skips [`Bot::decide`]'s boxed
    /// future and the wall-clock timer, and records the same answer (a timer
    /// is never consulted for a future that is ready when first polled).
    /// `None`, the default, means ask through [`Bot::decide`].
    fn decide_now(&mut self, observation: Observation<'_>) -> Option<Decision> {
        let _ = observation;
        None
    }

    /// The runner gave up on the decision at the wall clock (its future was
    /// dropped): what it spent until then, so its tokens and a gas-out are
    /// recorded with that decision, not the next, and a model call in flight is
    /// cut now. Required, so no wrapper can forget to pass it on; bots without a
    /// meter return `Spent::default()`.
    fn abandoned(&mut self) -> Spent;
}
