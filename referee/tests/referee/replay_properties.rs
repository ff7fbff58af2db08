//! Properties of replays the runners write: they always verify, identical inputs
//! give identical replays, both runners agree, and changing any one recorded fact
//! makes verification fail.

use duel_referee::builtin::{BuiltinBot, BuiltinFighter};
use duel_referee::verify::verify_replay;
use duel_referee::{BuiltinSpec, MatchConfig, run_bare_match, run_match};
use duel_replays::{Replay, SideRecord};
use duel_rules::{Action, Side, WeightClass};
use proptest::prelude::*;

fn config(seed: u64) -> MatchConfig {
    MatchConfig::new(
        format!("match-{seed}"),
        "2026-11-29T12:00:00Z".to_owned(),
        WeightClass::Middle,
        seed,
    )
}

fn builtin_spec() -> impl Strategy<Value = BuiltinSpec> {
    prop_oneof![
        Just(BuiltinSpec::Block),
        Just(BuiltinSpec::Random),
        Just(BuiltinSpec::Counter),
        prop::collection::vec(prop::sample::select(Action::ALL.to_vec()), 1..8)
            .prop_map(|actions| BuiltinSpec::Script(actions.into())),
    ]
}

fn play_async(config: MatchConfig, specs: [&BuiltinSpec; 2]) -> Replay {
    let mut a = BuiltinBot::new(specs[0].clone(), config.seed, Side::A);
    let mut b = BuiltinBot::new(specs[1].clone(), config.seed, Side::B);
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime")
        .block_on(run_match(config, [&mut a, &mut b]))
}

fn without_latency(mut replay: Replay) -> Replay {
    for round in &mut replay.rounds {
        for exchange in &mut round.exchanges {
            exchange.a.latency_ms = 0;
            exchange.b.latency_ms = 0;
            exchange.a.latency_us = None;
            exchange.b.latency_us = None;
        }
    }
    replay
}

/// Every recorded fact verification re-derives, as a mutation of one field.
#[derive(Clone, Copy, Debug)]
enum Mutation {
    Action,
    Exhausted,
    DamageTaken,
    Hp,
    Stamina,
    Staggered,
    Tokens,
    ExchangeNumber,
    RoundWinner,
    MatchRoundWins,
    MatchDamage,
    MatchTokens,
    Budget,
}

const MUTATIONS: [Mutation; 13] = [
    Mutation::Action,
    Mutation::Exhausted,
    Mutation::DamageTaken,
    Mutation::Hp,
    Mutation::Stamina,
    Mutation::Staggered,
    Mutation::Tokens,
    Mutation::ExchangeNumber,
    Mutation::RoundWinner,
    Mutation::MatchRoundWins,
    Mutation::MatchDamage,
    Mutation::MatchTokens,
    Mutation::Budget,
];

fn next_action(action: duel_replays::ActionName) -> duel_replays::ActionName {
    let action = Action::from(action);
    let position = Action::ALL.iter().position(|a| *a == action).unwrap_or(0);
    Action::ALL[(position + 1) % Action::ALL.len()].into()
}

fn mutate(replay: &mut Replay, mutation: Mutation, pick: usize, side: usize) {
    let total: usize = replay
        .rounds
        .iter()
        .map(|round| round.exchanges.len())
        .sum();
    let mut index = pick % total;
    let mut target = None;
    for (round_index, round) in replay.rounds.iter().enumerate() {
        if index < round.exchanges.len() {
            target = Some((round_index, index));
            break;
        }
        index -= round.exchanges.len();
    }
    let (round_index, exchange_index) = target.expect("index within the match");
    let round = &mut replay.rounds[round_index];
    let exchange = &mut round.exchanges[exchange_index];
    let record: &mut SideRecord = if side == 0 {
        &mut exchange.a
    } else {
        &mut exchange.b
    };
    match mutation {
        Mutation::Action => record.action = next_action(record.action),
        Mutation::Exhausted => record.exhausted = !record.exhausted,
        Mutation::DamageTaken => record.damage_taken += 1,
        Mutation::Hp => record.hp -= 1,
        Mutation::Stamina => record.stamina = (record.stamina + 1) % 101,
        Mutation::Staggered => record.staggered = !record.staggered,
        Mutation::Tokens => record.tokens += 1,
        Mutation::ExchangeNumber => exchange.number += 1,
        Mutation::RoundWinner => {
            round.result.winner = match round.result.winner {
                duel_replays::WinnerName::A => duel_replays::WinnerName::B,
                _ => duel_replays::WinnerName::A,
            }
        }
        Mutation::MatchRoundWins => replay.result.round_wins[side] += 1,
        Mutation::MatchDamage => replay.result.damage[side] += 1,
        Mutation::MatchTokens => replay.result.tokens_used[side] += 1,
        Mutation::Budget => replay.budget += 1,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn runner_replays_always_verify_and_repeat(
        a in builtin_spec(), b in builtin_spec(), seed in 0..=duel_referee::limits::SEED_MAX
    ) {
        let fighters = [BuiltinFighter::new(a.clone()), BuiltinFighter::new(b.clone())];
        let replay = run_bare_match(config(seed), [&fighters[0], &fighters[1]]);
        let verified = verify_replay(&replay).expect("checkable");
        prop_assert!(verified.is_ok(), "{:?}", verified);
        prop_assert_eq!(&replay, &run_bare_match(config(seed), [&fighters[0], &fighters[1]]));
        // Latency is measured, not derived: the async runner may see a few ms.
        prop_assert_eq!(&replay, &without_latency(play_async(config(seed), [&a, &b])));
        let reread = Replay::from_slice(replay.to_json_pretty().as_bytes()).expect("parses");
        prop_assert_eq!(reread, replay);
    }

    #[test]
    fn changing_any_one_recorded_number_fails_verification(
        a in builtin_spec(), b in builtin_spec(), seed in 0..=duel_referee::limits::SEED_MAX,
        mutation in prop::sample::select(MUTATIONS.to_vec()),
        pick in any::<usize>(), side in 0..2usize,
    ) {
        let fighters = [BuiltinFighter::new(a), BuiltinFighter::new(b)];
        let mut replay = run_bare_match(config(seed), [&fighters[0], &fighters[1]]);
        mutate(&mut replay, mutation, pick, side);
        let verdict = verify_replay(&replay).expect("checkable");
        prop_assert!(verdict.is_err(), "{mutation:?} at {pick} side {side} still verifies");
    }
}
