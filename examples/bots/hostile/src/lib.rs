//! A deliberately hostile bot for the sandbox and referee tests. Its behaviour is
//! chosen by the match id (`obs.match_id`), e.g. `loop`, `alloc`, `recurse`,
//! `panic`, `panic-first`, `sleep`, `spam`, `log-spam`, `exit`, `model-twice`,
//! `model-choice` (names every catalogue model, then one that is not there),
//! `spin:N`, `count`. Anything else: plays JAB.
//!
//! `MODE@N,M,…` misbehaves as MODE only at the match's exchanges N, M, … (1-based,
//! counted across rounds) and plays `count` at the others: the count restarts
//! from JAB on a fresh instance, so a replay shows when the bot lost its memory.

use std::hint::black_box;

use duel_bot_sdk::model::{self, Message};
use duel_bot_sdk::{Action, Bot, Observation};

#[derive(Default)]
struct Hostile {
    decisions: u64,
    hoard: Vec<Vec<u8>>,
}

fn recurse(depth: u64, pad: [u64; 16]) -> u64 {
    let pad = black_box(pad);
    if black_box(depth) == u64::MAX { return pad[0]; }
    recurse(depth + 1, pad) + pad[(depth % 16) as usize]
}

impl Bot for Hostile {
    fn decide(&mut self, obs: &Observation) -> Action {
        self.decisions += 1;
        let mode = match obs.match_id.split_once('@') {
            None => obs.match_id,
            Some((mode, at)) => {
                let now = obs.tape.len() + 1;
                if at.split(',').any(|n| n.parse::<usize>() == Ok(now)) {
                    mode
                } else {
                    "count"
                }
            }
        };
        match mode {
            "loop" => {
                let mut x = 0u64;
                loop {
                    x = black_box(x.wrapping_add(1));
                }
            }
            "alloc" => loop {
                let mut chunk = vec![0u8; 1 << 20];
                chunk[0] = 1;
                self.hoard.push(black_box(chunk));
            },
            "recurse" => {
                let v = recurse(0, [1; 16]);
                if v == 0 { Action::Block } else { Action::Jab }
            }
            "panic" => panic!("hostile bot panics on purpose"),
            "panic-first" => {
                if obs.round == 1 && obs.exchange == 1 {
                    panic!("hostile bot panics on purpose");
                }
                Action::Jab
            }
            "sleep" => {
                std::thread::sleep(std::time::Duration::from_secs(30));
                Action::Jab
            }
            "spam" => {
                let line = "spam ".repeat(200);
                for _ in 0..20_000 {
                    println!("{line}");
                    eprintln!("{line}");
                }
                Action::Jab
            }
            "log-spam" => {
                let line = "log ".repeat(250);
                for _ in 0..20_000 {
                    duel_bot_sdk::log(&line);
                }
                Action::Jab
            }
            "exit" => std::process::exit(3),
            "model-twice" => {
                let first = model::complete(&[Message::user("hi")], 4);
                let second = model::complete(&[Message::user("hi again")], 4);
                duel_bot_sdk::log(&format!("first={first:?} second={second:?}"));
                Action::Block
            }
            "model-choice" => {
                let models = model::models();
                for name in &models {
                    let answer = model::complete_with(name, &[Message::user("hi")], 4);
                    duel_bot_sdk::log(&format!("{name}={answer:?}"));
                }
                let missing = model::complete_with("no-such-model", &[Message::user("hi")], 4);
                duel_bot_sdk::log(&format!("models={models:?} missing={missing:?}"));
                Action::Block
            }
            "count" => Action::ALL[((self.decisions - 1) % 6) as usize],
            _ => {
                if let Some(n) = mode.strip_prefix("spin:").and_then(|n| n.parse::<u64>().ok()) {
                    let mut x = 0u64;
                    for i in 0..n {
                        x = black_box(x.wrapping_add(i));
                    }
                    return if black_box(x) == 1 { Action::Block } else { Action::Jab };
                }
                Action::Jab
            }
        }
    }
}

duel_bot_sdk::export_bot!(Hostile);
