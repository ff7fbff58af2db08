//! `builtin:counter`: reads the tape, predicts the opponent's next action from its
//! habits, and plays the best answer to that prediction under the rules.

use duel_rules::{Action, Observation};

use super::Strategy;
use crate::COUNTER_MEMORY_EXCHANGES;

/// Predicts from two habits, in integer arithmetic so it re-runs bit for bit:
/// how often the opponent plays each action (recent exchanges weigh more), and
/// what it played after its last action the previous times (catches cycles and
/// scripts). Then it scores each of its affordable actions by the rules' own
/// outcome against every predicted answer and plays the best.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counter;

/// Weight of the flat prior per action, so an empty tape predicts uniformly.
const PRIOR_WEIGHT: i64 = 1;
/// How much more a follow-up of the opponent's last action counts than a plain
/// occurrence.
const FOLLOW_UP_FACTOR: i64 = 3;

impl Counter {
    fn predict(&self, observation: &Observation<'_>) -> [i64; 6] {
        let mut weights = [PRIOR_WEIGHT; 6];
        // The tape is walked in place (no copy per decision): oldest first is
        // `history()`, newest first its reverse.
        let last = observation
            .history()
            .next_back()
            .map(|entry| entry.opponent.action);
        for (age, entry) in observation.history().rev().enumerate() {
            let recency = (COUNTER_MEMORY_EXCHANGES - age as i64).max(1);
            weights[index(entry.opponent.action)] += recency;
        }
        if let Some(last) = last {
            let pairs = observation.history().zip(observation.history().skip(1));
            for (before, after) in pairs {
                if before.opponent.action == last {
                    weights[index(after.opponent.action)] +=
                        FOLLOW_UP_FACTOR * COUNTER_MEMORY_EXCHANGES;
                }
            }
        }
        weights
    }

    /// The value of one exchange to us, in tenths of HP: damage dealt minus taken,
    /// a knockout either way dominates, stamina and stagger count a little.
    fn value(observation: &Observation<'_>, mine: Action, theirs: Action) -> i64 {
        let outcome = observation
            .ruleset
            .resolve_exchange([observation.you, observation.opponent], [mine, theirs]);
        let [us, them] = outcome.sides;
        let mut value = 10 * i64::from(them.damage_taken - us.damage_taken);
        value += i64::from(us.after.stamina - them.after.stamina);
        if them.after.hp <= 0 {
            value += 10_000;
        }
        if us.after.hp <= 0 {
            value -= 10_000;
        }
        if us.after.staggered {
            value -= 60;
        }
        if us.exhausted {
            value -= 40;
        }
        value
    }
}

fn index(action: Action) -> usize {
    Action::ALL
        .iter()
        .position(|candidate| *candidate == action)
        .unwrap_or(0)
}

impl Strategy for Counter {
    fn decide(&mut self, observation: &Observation<'_>) -> Action {
        let weights = self.predict(observation);
        let mut best = (i64::MIN, observation.ruleset.fallback_action());
        for mine in Action::ALL {
            if !observation.can_pay(mine) {
                continue;
            }
            let expected: i64 = Action::ALL
                .iter()
                .zip(weights)
                .map(|(&theirs, weight)| weight * Self::value(observation, mine, theirs))
                .sum();
            // Strictly greater: ties keep the earlier action, deterministically.
            if expected > best.0 {
                best = (expected, mine);
            }
        }
        best.1
    }
}
