//! The single-agent env against the referee's match runner: a learner's moves
//! replayed as a `builtin:script` in `duel_match::run_bare_match` (the path
//! tournaments take) against the same built-in with the same seed give the
//! same opponent decisions, exchanges and result.

mod common;

use common::Lcg;
use std::sync::Arc;

use duel_builtin::BuiltinSpec;
use duel_env::{ACTIONS, Duel, Rewards, Solo};
use duel_match::builtin::BuiltinFighter;
use duel_match::{MatchConfig, run_bare_match};
use duel_rules::{Action, Side, WeightClass, Winner};

fn opponents() -> Vec<BuiltinSpec> {
    [
        "builtin:counter",
        "builtin:random",
        "builtin:block",
        "builtin:script:JAB,HEAVY,DODGE",
    ]
    .into_iter()
    .map(|text| BuiltinSpec::parse(text).expect("a built-in spec"))
    .collect()
}

#[test]
fn solo_plays_the_referees_built_ins_exchange_for_exchange() {
    let mut rng = Lcg(51);
    for opponent in opponents() {
        for seed in 0..100_u64 {
            let duel = Duel::new(
                duel_rules::Ruleset::V1_0_0,
                WeightClass::Middle,
                Rewards::default(),
            );
            let mut solo = Solo::new(duel, opponent.clone(), Side::A);
            solo.reset("solo", seed);
            let mut learner = Vec::new();
            while !solo.duel().is_over() {
                let action = ACTIONS[rng.below(6)];
                learner.push(action);
                solo.step(action).expect("not over");
            }
            let script: Arc<[Action]> = learner.clone().into();
            let fighters = [
                BuiltinFighter::new(BuiltinSpec::Script(script)),
                BuiltinFighter::new(opponent.clone()),
            ];
            let config = MatchConfig::new(
                "solo".to_owned(),
                "2026-01-01T00:00:00Z".to_owned(),
                WeightClass::Middle,
                seed,
            );
            let replay = run_bare_match(config, [&fighters[0], &fighters[1]]);
            let exchanges: Vec<_> = replay.exchanges().collect();
            let tape = solo.duel().tape();
            assert_eq!(exchanges.len(), tape.len(), "{opponent} seed {seed}");
            for ((round, exchange), entry) in exchanges.iter().zip(tape) {
                assert_eq!((*round, exchange.number), (entry.round, entry.exchange));
                for (record, side) in exchange.sides().into_iter().zip(entry.sides) {
                    assert_eq!(
                        Action::from(record.action),
                        side.action,
                        "{opponent} seed {seed}"
                    );
                    assert_eq!(record.exhausted, side.exhausted);
                    assert_eq!(record.damage_taken, side.damage_taken);
                }
            }
            let result = solo.duel().state().result().expect("over");
            assert_eq!(Winner::from(replay.result.winner), result.winner);
            assert_eq!(replay.result.round_wins, result.round_wins);
        }
    }
}

#[test]
fn step_after_the_end_is_refused() {
    let duel = Duel::new(
        duel_rules::Ruleset::V1_0_0,
        WeightClass::Light,
        Rewards::default(),
    );
    let mut solo = Solo::new(duel, BuiltinSpec::Counter, Side::B);
    solo.reset("end", 1);
    while !solo.duel().is_over() {
        solo.step(Action::Block).expect("not over");
    }
    assert!(solo.step(Action::Block).is_err());
    solo.reset("again", 1);
    assert!(solo.step(Action::Block).is_ok());
}
