//! A bot that explains itself, for the bot author's loop (`referee local --logs`)
//! and the log tests: every decision it writes one line with
//! `duel_bot_sdk::log`, one with `println!` and one with `eprintln!`, then plays
//! JAB while it can pay and RECOVER otherwise.
//!
//! At its 2nd decision it also writes a line of 1000 bytes and 40 short lines (the
//! referee keeps 300 bytes of a line and 32 lines per decision, and marks the
//! cut). At its 3rd decision it indexes out of bounds: a panic, so a fault, and
//! the referee starts it afresh (its decision count starts again).

use duel_bot_sdk::{Action, Bot, Observation};

#[derive(Default)]
struct Chatter {
    decisions: usize,
}

impl Bot for Chatter {
    fn decide(&mut self, obs: &Observation) -> Action {
        self.decisions += 1;
        let n = self.decisions;
        duel_bot_sdk::log(&format!(
            "log: decision {n}, round {} exchange {}",
            obs.round, obs.exchange
        ));
        println!("stdout: hp {} stamina {}", obs.you.hp, obs.you.stamina);
        eprintln!("stderr: opponent hp {}", obs.opponent.hp);
        if n == 2 {
            duel_bot_sdk::log(&"x".repeat(1000));
            for i in 0..40 {
                println!("line {i}");
            }
        }
        if n == 3 {
            let picks = [Action::Jab, Action::Block, Action::Dodge];
            let at = std::hint::black_box(n + 4);
            return picks[at];
        }
        if obs.can_pay(Action::Jab) {
            Action::Jab
        } else {
            Action::Recover
        }
    }
}

duel_bot_sdk::export_bot!(Chatter);
