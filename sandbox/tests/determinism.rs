//! Same match seed and side, same behaviour: WASI randomness is seeded and clocks
//! are virtual, so a bot re-plays from its replay.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use duel_rules::{Action, Side, Source};
use duel_sandbox::{BotInstance, LoadedBot, SandboxConfig};

async fn run(bot: &LoadedBot, seed: u64, side: Side, decisions: usize) -> (Vec<Action>, String) {
    let mut instance: BotInstance = instance(bot, "det", seed, side);
    let mut bout = Bout::new("det");
    let mut actions = Vec::new();
    for _ in 0..decisions {
        let (action, source) = ask(&mut instance, &bout, side).await;
        assert_eq!(source, Source::Bot);
        actions.push(action);
        let other = (Action::Block, Source::Bot);
        match side {
            Side::A => bout.play([(action, source), other]),
            Side::B => bout.play([other, (action, source)]),
        }
    }
    (actions, instance.log_text())
}

#[tokio::test]
async fn the_same_seed_gives_identical_behaviour() {
    let sandbox = sandbox(SandboxConfig::default());
    let dice = load(&sandbox, "dice");
    let first = run(&dice, 42, Side::A, 12).await;
    let again = run(&dice, 42, Side::A, 12).await;
    assert_eq!(first, again);
    assert!(
        first.1.contains("wall=946684800"),
        "virtual wall clock: {}",
        first.1
    );
    let other_seed = run(&dice, 43, Side::A, 12).await;
    assert_ne!(first.1, other_seed.1, "another seed draws otherwise");
    let other_side = run(&dice, 42, Side::B, 12).await;
    assert_ne!(first.1, other_side.1, "the two fighters draw otherwise");
}
