//! The simplest bot: JAB while stamina pays for it, RECOVER when it runs low.

use duel_bot_sdk::{Action, Bot, Observation};

#[derive(Default)]
struct Jabber;

impl Bot for Jabber {
    fn decide(&mut self, obs: &Observation) -> Action {
        if obs.you.stamina >= 20 { Action::Jab } else { Action::Recover }
    }
}

duel_bot_sdk::export_bot!(Jabber);
