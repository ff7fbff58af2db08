//! Plays from WASI randomness and reads both clocks, and logs what it drew: under
//! the sandbox the same match seed must give byte-identical logs and actions.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use duel_bot_sdk::{Action, Bot, Observation};

#[derive(Default)]
struct Dice {
    started: Option<Instant>,
}

impl Bot for Dice {
    fn decide(&mut self, obs: &Observation) -> Action {
        let started = *self.started.get_or_insert_with(Instant::now);
        // RandomState draws its keys from the WASI random source.
        let draw = RandomState::new().hash_one(obs.exchange);
        let wall = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
        let elapsed = started.elapsed().as_nanos();
        println!("draw={draw:016x} wall={wall} elapsed={elapsed}");
        let action = Action::ALL[(draw % 6) as usize];
        if obs.can_pay(action) { action } else { Action::Block }
    }
}

duel_bot_sdk::export_bot!(Dice);
