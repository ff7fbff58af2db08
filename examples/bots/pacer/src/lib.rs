//! A stamina pacer: keeps stamina above a reserve, trades HEAVY for damage when it
//! can afford it, and simulates each candidate against the opponent's likely
//! replies (worst case over them) before choosing.

use duel_bot_sdk::rules::Action;
use duel_bot_sdk::{Bot, Observation};

#[derive(Default)]
struct Pacer;

const RESERVE: i32 = 30;

impl Bot for Pacer {
    fn decide(&mut self, obs: &Observation) -> Action {
        if obs.you.stamina < RESERVE {
            return if obs.opponent.stamina >= 14 { Action::Block } else { Action::Recover };
        }
        let mut best = (i32::MIN, Action::Block);
        for mine in Action::ALL {
            if !obs.can_pay(mine) || mine == Action::Recover {
                continue;
            }
            // Worst case over the opponent's affordable replies.
            let worst = Action::ALL
                .iter()
                .filter(|theirs| obs.ruleset.can_pay(**theirs, obs.opponent.stamina))
                .map(|theirs| {
                    let out = obs.ruleset.resolve_exchange([obs.you, obs.opponent], [mine, *theirs]);
                    out.damage_dealt(0) - out.sides[0].damage_taken
                })
                .min()
                .unwrap_or(0);
            if worst > best.0 {
                best = (worst, mine);
            }
        }
        best.1
    }
}

duel_bot_sdk::export_bot!(Pacer);
