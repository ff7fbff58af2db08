//! A tape reader: predicts the opponent's next action from its recent habits and
//! plays the best answer to it, simulated with the rules engine. A fighter that
//! blocks a lot (the fallback policy covers up with BLOCK) gets FEINTed.

use duel_bot_sdk::rules::{Action, FighterState, Ruleset};
use duel_bot_sdk::{Bot, Observation};

#[derive(Default)]
struct Counter {
    decisions: u32,
}

/// How many of the opponent's latest actions form its "habit".
const WINDOW: usize = 6;

impl Bot for Counter {
    fn decide(&mut self, obs: &Observation) -> Action {
        self.decisions += 1;
        let mut counts = [0u32; 6];
        for entry in obs.history().rev().take(WINDOW) {
            let index = Action::ALL.iter().position(|a| *a == entry.opponent.action).unwrap_or(2);
            counts[index] += 1;
        }
        let predicted = if counts.iter().all(|c| *c == 0) {
            Action::Block
        } else {
            let best = (0..6).max_by_key(|i| counts[*i]).unwrap_or(2);
            Action::ALL[best]
        };
        best_answer(obs.ruleset, obs.you, obs.opponent, predicted)
    }
}

/// The affordable action with the best damage difference against `predicted`.
fn best_answer(ruleset: Ruleset, you: FighterState, them: FighterState, predicted: Action) -> Action {
    let mut best = (i32::MIN, Action::Block);
    for action in Action::ALL {
        if !ruleset.can_pay(action, you.stamina) {
            continue;
        }
        let outcome = ruleset.resolve_exchange([you, them], [action, predicted]);
        let score = outcome.damage_dealt(0) * 2 - outcome.sides[0].damage_taken * 2
            + (outcome.sides[0].after.stamina - outcome.sides[1].after.stamina) / 4;
        if score > best.0 {
            best = (score, action);
        }
    }
    best.1
}

duel_bot_sdk::export_bot!(Counter);
