//! The env's replays against the referee's: a match played in the env and
//! written by `Duel::replay`/`Solo::replay` is the replay the referee's runner
//! writes for the fighters it names (the learners' scripts, the built-in) with
//! the same seed, field for field but for the match's id, time and clock, and
//! it re-verifies as `referee replay verify` does (the rules, and the
//! built-ins' choices played again from the seed).

mod common;

use common::Lcg;
use duel_builtin::BuiltinSpec;
use duel_env::{ACTIONS, Duel, EnvError, ReplayHeader, Rewards, Solo};
use duel_match::builtin::BuiltinFighter;
use duel_match::{MatchConfig, run_bare_match};
use duel_replays::{FighterKind, JSON_INTEGER_MAX, Replay};
use duel_rules::{Ruleset, Side, WeightClass};

const ACCEPTED_AT: &str = "2026-12-07T00:00:00Z";

/// What the referee's runner writes for `fighters` (canonical specs) and `seed`.
fn referee_replay(replay: &Replay, class: WeightClass) -> Replay {
    let fighters = replay.fighters.each_ref().map(|info| {
        let spec = info.spec.as_deref().expect("a built-in names its spec");
        BuiltinFighter::new(BuiltinSpec::parse(spec).expect("the replay's spec parses"))
    });
    let config = MatchConfig::new(
        replay.match_id.clone(),
        ACCEPTED_AT.to_owned(),
        class,
        replay.seed,
    );
    run_bare_match(config, [&fighters[0], &fighters[1]])
}

/// `env`'s replay, but for the clock the referee records (the env runs none).
fn with_referee_clock(mut env: Replay, referee: &Replay) -> Replay {
    env.wall_clock_ms = referee.wall_clock_ms;
    env
}

#[test]
fn a_duel_replays_as_the_referee_plays_its_scripts() {
    let mut rng = Lcg(4);
    for (index, class) in [WeightClass::Light, WeightClass::Middle, WeightClass::Heavy]
        .into_iter()
        .cycle()
        .take(300)
        .enumerate()
    {
        let mut duel = Duel::new(Ruleset::V1_0_0, class, Rewards::default());
        duel.reset(&format!("env-{index}"));
        // Unaffordable actions included: EXHAUSTED is recorded as the referee does.
        while !duel.is_over() {
            duel.step([ACTIONS[rng.below(6)], ACTIONS[rng.below(6)]])
                .expect("not over");
        }
        let seed = index as u64 * 7_919;
        let replay = duel
            .replay(ReplayHeader {
                accepted_at: ACCEPTED_AT,
                seed,
            })
            .expect("a finished match replays");
        assert_eq!(replay.match_id, format!("env-{index}"));
        assert_eq!(replay.seed, seed);
        assert!(
            replay
                .fighters
                .iter()
                .all(|f| f.kind == FighterKind::Builtin)
        );
        let verified = duel_match::verify::verify_replay(&replay)
            .expect("a known ruleset")
            .expect("the env's replay verifies");
        assert_eq!(verified.exchanges as usize, duel.tape().len());
        assert_eq!(Some(verified.result), duel.state().result());
        let referee = referee_replay(&replay, class);
        assert_eq!(
            with_referee_clock(replay, &referee),
            referee,
            "match {index}"
        );
    }
}

#[test]
fn a_solo_match_replays_with_its_built_in_and_seed() {
    let mut rng = Lcg(5);
    for opponent in ["builtin:random", "builtin:counter", "builtin:block"] {
        for learner in Side::BOTH {
            for seed in [0, 1, 99, JSON_INTEGER_MAX] {
                let spec = BuiltinSpec::parse(opponent).expect("a built-in");
                let duel = Duel::new(Ruleset::V1_0_0, WeightClass::Middle, Rewards::default());
                let mut solo = Solo::new(duel, spec, learner);
                solo.reset("solo", seed);
                while !solo.duel().is_over() {
                    solo.step(ACTIONS[rng.below(6)]).expect("not over");
                }
                let replay = solo.replay(ACCEPTED_AT).expect("a finished match replays");
                assert_eq!(replay.seed, seed);
                assert_eq!(
                    replay.fighters[learner.other().index()].spec.as_deref(),
                    Some(opponent)
                );
                // The referee's verification plays the built-in again from the seed.
                duel_match::verify::verify_replay(&replay)
                    .expect("a known ruleset")
                    .expect("the env's replay verifies");
                let referee = referee_replay(&replay, WeightClass::Middle);
                assert_eq!(
                    with_referee_clock(replay, &referee),
                    referee,
                    "{opponent} against a learner on side {} with seed {seed}",
                    learner.name()
                );
            }
        }
    }
}

#[test]
fn a_replay_is_refused_before_the_end_and_past_the_largest_seed() {
    let mut duel = Duel::new(Ruleset::V1_0_0, WeightClass::Middle, Rewards::default());
    duel.reset("early");
    let header = ReplayHeader {
        accepted_at: ACCEPTED_AT,
        seed: 1,
    };
    assert_eq!(duel.replay(header), Err(EnvError::NotOver));
    duel.step([ACTIONS[0], ACTIONS[2]]).expect("not over");
    assert_eq!(duel.replay(header), Err(EnvError::NotOver));
    while !duel.is_over() {
        duel.step([ACTIONS[1], ACTIONS[0]]).expect("not over");
    }
    let too_large = ReplayHeader {
        seed: JSON_INTEGER_MAX + 1,
        ..header
    };
    assert_eq!(
        duel.replay(too_large),
        Err(EnvError::Seed(JSON_INTEGER_MAX + 1))
    );
    assert!(EnvError::Seed(1).to_string().contains("2^53"));
    assert!(duel.replay(header).is_ok());
}
