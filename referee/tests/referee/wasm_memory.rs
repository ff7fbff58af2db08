//! Hundreds of hostile WASM matches in one referee process leave its memory where
//! it was: every failed instance (panic, memory cap, fuel) is freed, not kept.
//! The resident set after a warm-up batch is the baseline; after many more
//! matches it may have grown by a bounded amount only; with instances allocated
//! on demand, from a pool, and from a full pool (every instance overflows to
//! on-demand allocation). Alone in its test binary, so no other test shares
//! the process.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use duel_referee::builtin::BuiltinBot;
use duel_referee::wasm::WasmBot;
use duel_referee::{BotSpec, MatchConfig, ModelGateway, run_match};
use duel_replays::Replay;
use duel_rules::{MatchState, Observation, Ruleset, Side, Source, WeightClass};
use duel_sandbox::{Allocation, BotInstance, LoadedBot, NoModel, Sandbox, SandboxConfig};

const MIB: u64 = 1024 * 1024;
/// Matches played before the baseline is taken (caches, pools, allocator arenas
/// and the runtime reach their working size).
const WARM_UP_MATCHES: usize = 60;
/// Matches played after it.
const MATCHES: usize = 240;
/// Growth allowed over those matches: 24 MiB, i.e. 100 KiB a match. A leaked
/// instance holds at least its touched linear memory, ~1 MiB for these Rust
/// bots (and up to the 16 MiB cap for `alloc`), and every match below fails
/// several times, so a leak of instances shows hundreds of MiB.
const GROWTH_MAX_BYTES: u64 = 24 * MIB;

/// The modes cycled through (see examples/bots/hostile): cheap failures at
/// chosen exchanges, a whole match of panics, and a well-behaved match.
const MODES: [&str; 5] = [
    "panic",
    "alloc@2,6,10,14",
    "loop@1,3,5,7,9,11",
    "recurse@4,8",
    "count",
];

fn resident_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|line| line.starts_with("VmRSS:"))
        .expect("VmRSS in /proc/self/status");
    let kib: u64 = line
        .trim_start_matches("VmRSS:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap();
    kib * 1024
}

async fn play(hostile: &LoadedBot, mode: &str, seed: u64) -> Replay {
    let mut config = MatchConfig::new(
        mode.to_owned(),
        "2026-11-29T12:00:00Z".to_owned(),
        WeightClass::Middle,
        seed,
    );
    config.decision_wall_clock = Duration::from_secs(5);
    let meter = duel_referee::FighterMeter::new(ModelGateway::disabled(), config.budget_tokens());
    let context = duel_sandbox::BotContext {
        match_id: mode.to_owned(),
        seed,
        side: Side::A,
    };
    let mut wasm = WasmBot::new(Path::new("hostile.wasm"), hostile.clone(), context, meter);
    let Ok(BotSpec::Builtin(spec)) = BotSpec::parse("builtin:random") else {
        panic!("a built-in spec");
    };
    let mut builtin = BuiltinBot::new(spec, seed, Side::B);
    run_match(config, [&mut wasm, &mut builtin]).await
}

/// Plays `count` matches from `first` on; returns the failures they recorded.
async fn batch(hostile: &LoadedBot, first: usize, count: usize) -> usize {
    let mut failures = 0;
    for index in first..first + count {
        let mode = MODES[index % MODES.len()];
        let replay = play(hostile, mode, index as u64).await;
        for (_, exchange) in replay.exchanges() {
            assert_eq!(Source::from(exchange.b.source), Source::Bot, "{mode}");
            if Source::from(exchange.a.source) != Source::Bot {
                failures += 1;
            }
        }
    }
    failures
}

/// `slots` live instances of `bot`, each past its first decision: they hold
/// as many pool slots for as long as they live.
async fn holders(bot: &LoadedBot, slots: usize) -> Vec<BotInstance> {
    let state = MatchState::new(Ruleset::CURRENT);
    let observation = Observation::new(&state, Side::A, "held", WeightClass::Middle, 64_000, &[]);
    let mut held = Vec::new();
    for seed in 0..slots {
        let context = duel_sandbox::BotContext {
            match_id: "held".to_owned(),
            seed: seed as u64,
            side: Side::A,
        };
        let mut instance = bot.instantiate(context, std::sync::Arc::new(NoModel));
        instance.decide(&observation).await.unwrap();
        held.push(instance);
    }
    held
}

/// Warm-up, baseline, many more matches, growth within the bound; then a clean
/// match to show the process still healthy. `held` pool slots stay taken
/// throughout (by live well-behaved instances).
async fn memory_returns_to_baseline(allocation: Allocation, held: usize) {
    let sandbox = Sandbox::new(SandboxConfig {
        // Cheap failures: a spinning loop runs out of fuel in about a
        // millisecond, an allocating one hits the cap after 16 MiB.
        fuel_per_decision: 10_000_000,
        memory_bytes_max: 16 * MIB as usize,
        decision_wall_clock: Duration::from_secs(5),
        allocation,
        ..SandboxConfig::default()
    })
    .unwrap();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bots/hostile.wasm");
    let bytes = std::fs::read(&path)
        .unwrap_or_else(|err| panic!("{}: {err}; run scripts/build-bots", path.display()));
    let hostile = sandbox.load(&bytes).unwrap();
    let holding = holders(&hostile, held).await;

    let warm_up_failures = batch(&hostile, 0, WARM_UP_MATCHES).await;
    assert!(warm_up_failures > WARM_UP_MATCHES * 5, "{warm_up_failures}");
    let baseline = resident_bytes();
    let failures = batch(&hostile, WARM_UP_MATCHES, MATCHES).await;
    let after = resident_bytes();
    assert!(failures > MATCHES * 5, "{failures}");
    let growth = after.saturating_sub(baseline);
    eprintln!(
        "{allocation:?}: resident {} MiB after {WARM_UP_MATCHES} warm-up matches, {} MiB after \
         {MATCHES} more ({failures} failures): +{} KiB",
        baseline / MIB,
        after / MIB,
        growth / 1024
    );
    assert!(
        growth <= GROWTH_MAX_BYTES,
        "{allocation:?}: the process grew by {} MiB over {MATCHES} hostile matches (bound {} MiB)",
        growth / MIB,
        GROWTH_MAX_BYTES / MIB
    );

    let replay = play(&hostile, "count", 1).await;
    assert!(
        replay
            .exchanges()
            .all(|(_, exchange)| Source::from(exchange.a.source) == Source::Bot)
    );
    let stats = sandbox.stats();
    eprintln!("{allocation:?} with {held} slots held: {stats:?}");
    match allocation {
        Allocation::OnDemand => assert_eq!(stats.pool_instantiations, 0),
        Allocation::Pooling { instances } if held >= instances as usize => {
            assert_eq!(stats.pool_instantiations, held as u64);
            assert!(stats.on_demand_instantiations > (WARM_UP_MATCHES + MATCHES) as u64);
        }
        Allocation::Pooling { .. } => assert_eq!(stats.on_demand_instantiations, 0),
    }
    drop(holding);
}

#[tokio::test]
async fn hundreds_of_hostile_matches_return_memory_to_baseline() {
    memory_returns_to_baseline(Allocation::OnDemand, 0).await;
    // A pool keeps freed slots' pages mapped for the next bot: that too must
    // stay at a fixed size, whatever the bots did.
    memory_returns_to_baseline(Allocation::Pooling { instances: 4 }, 0).await;
    // A full pool: every hostile instance overflows to the on-demand engine,
    // and is freed there just the same.
    memory_returns_to_baseline(Allocation::Pooling { instances: 2 }, 2).await;
}
