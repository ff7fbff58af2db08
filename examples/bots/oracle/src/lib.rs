//! Asks the model only at turning points (a round's first exchange, or when
//! either fighter is low), and plays a simple policy by itself otherwise — and
//! for the rest of the match once the model was refused.

use duel_bot_sdk::model::{self, Message};
use duel_bot_sdk::{Action, Bot, Observation};

#[derive(Default)]
struct Oracle {
    model_refused: bool,
}

impl Oracle {
    fn turning_point(obs: &Observation) -> bool {
        obs.exchange == 1 || obs.you.hp < 50 || obs.opponent.hp < 50
    }

    fn ask(&mut self, obs: &Observation) -> Option<Action> {
        let prompt = format!(
            "Duel, round {} exchange {}. You: hp {} stamina {}. Opponent: hp {} stamina {}. \
             Answer with one of JAB HEAVY BLOCK DODGE FEINT RECOVER.",
            obs.round, obs.exchange, obs.you.hp, obs.you.stamina, obs.opponent.hp, obs.opponent.stamina
        );
        match model::complete(&[Message::user(prompt)], 8) {
            Ok(text) => text.split_whitespace().find_map(|word| word.parse::<Action>().ok()),
            Err(_) => {
                duel_bot_sdk::log("model refused; playing on without it");
                self.model_refused = true;
                None
            }
        }
    }
}

impl Bot for Oracle {
    fn decide(&mut self, obs: &Observation) -> Action {
        if !self.model_refused && Self::turning_point(obs) {
            if let Some(action) = self.ask(obs) {
                if obs.can_pay(action) {
                    return action;
                }
            }
        }
        match obs.history().last() {
            Some(last) if last.opponent.action == Action::Block => Action::Feint,
            Some(last) if last.opponent.action == Action::Heavy => Action::Dodge,
            _ if obs.can_pay(Action::Jab) => Action::Jab,
            _ => Action::Recover,
        }
    }
}

duel_bot_sdk::export_bot!(Oracle);
