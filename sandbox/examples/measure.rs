//! Prints the figures of `PERFORMANCE-notes.md`. Run after `scripts/build-bots`:
//! `cargo run --release -p duel-sandbox --example measure [BOTS_DIR]`.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use duel_rules::{
    MatchState, Observation, Ruleset, Side, Source, TapeEntry, TapeSide, WeightClass,
};
use duel_sandbox::{Allocation, BotContext, LoadedBot, NoModel, Sandbox, SandboxConfig};

fn context(seed: u64, side: Side) -> BotContext {
    BotContext {
        match_id: "measure".into(),
        seed,
        side,
    }
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

async fn whole_match(a: &LoadedBot, b: &LoadedBot) -> (Duration, usize) {
    let started = Instant::now();
    let mut ia = a.instantiate(context(1, Side::A), Arc::new(NoModel));
    let mut ib = b.instantiate(context(1, Side::B), Arc::new(NoModel));
    let mut state = MatchState::new(Ruleset::CURRENT);
    let mut tape: Vec<TapeEntry> = Vec::new();
    while !state.is_over() {
        let xa = ia
            .decide(&Observation::new(
                &state,
                Side::A,
                "measure",
                WeightClass::Middle,
                0,
                &tape,
            ))
            .await
            .unwrap_or(duel_rules::Action::Block);
        let xb = ib
            .decide(&Observation::new(
                &state,
                Side::B,
                "measure",
                WeightClass::Middle,
                0,
                &tape,
            ))
            .await
            .unwrap_or(duel_rules::Action::Block);
        let round = state.round();
        let step = state.play_exchange([xa, xb]).unwrap();
        let side = |i: usize, action| TapeSide {
            action,
            exhausted: step.outcome.sides[i].exhausted,
            source: Source::Bot,
            damage_taken: step.outcome.sides[i].damage_taken,
        };
        tape.push(TapeEntry {
            round,
            exchange: step.exchange,
            sides: [side(0, xa), side(1, xb)],
        });
    }
    (started.elapsed(), tape.len())
}

async fn figures(label: &str, sandbox: &Sandbox, dir: &std::path::Path) {
    println!("## {label}");
    for name in ["jabber", "counter", "python-bot"] {
        let path = dir.join(format!("{name}.wasm"));
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        let started = Instant::now();
        let bot = sandbox.load(&bytes).unwrap();
        println!(
            "{name}: {} KiB, load ({:?}) {:?}",
            bytes.len() / 1024,
            bot.origin(),
            started.elapsed()
        );
        let state = MatchState::new(Ruleset::CURRENT);
        let obs = Observation::new(&state, Side::A, "measure", WeightClass::Middle, 0, &[]);
        let mut first = Vec::new();
        for seed in 0..20 {
            let mut instance = bot.instantiate(context(seed, Side::A), Arc::new(NoModel));
            let t = Instant::now();
            instance.decide(&obs).await.unwrap();
            first.push(t.elapsed());
        }
        let mut instance = bot.instantiate(context(0, Side::A), Arc::new(NoModel));
        instance.decide(&obs).await.unwrap();
        let first_fuel = instance.stats().last_fuel_used;
        let mut warm = Vec::new();
        for _ in 0..200 {
            let t = Instant::now();
            instance.decide(&obs).await.unwrap();
            warm.push(t.elapsed());
        }
        println!(
            "  instantiate + first decide: median {:?}; decide on a live instance: median {:?}; fuel first {} then {}; memory {} KiB",
            median(first),
            median(warm),
            first_fuel,
            instance.stats().last_fuel_used,
            instance.stats().memory_bytes / 1024
        );
    }
    let jabber = sandbox
        .load(&std::fs::read(dir.join("jabber.wasm")).unwrap())
        .unwrap();
    let counter = sandbox
        .load(&std::fs::read(dir.join("counter.wasm")).unwrap())
        .unwrap();
    let mut samples = Vec::new();
    let mut exchanges = 0;
    for _ in 0..50 {
        let (t, n) = whole_match(&jabber, &counter).await;
        samples.push(t);
        exchanges = n;
    }
    println!(
        "whole warm match jabber vs counter ({exchanges} exchanges, both instantiations): median {:?}",
        median(samples)
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let dir: PathBuf = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/bots"));
    let cache = tempfile::tempdir().unwrap();
    let on_demand = SandboxConfig {
        disk_cache_dir: Some(cache.path().to_path_buf()),
        ..SandboxConfig::default()
    };
    let sandbox = Sandbox::new(on_demand.clone()).unwrap();
    figures("on-demand allocator, cold disk cache", &sandbox, &dir).await;
    drop(sandbox);
    let sandbox = Sandbox::new(on_demand).unwrap();
    figures(
        "on-demand allocator, second process (disk cache hit)",
        &sandbox,
        &dir,
    )
    .await;
    drop(sandbox);
    let pooled = SandboxConfig {
        disk_cache_dir: Some(cache.path().join("pool")),
        allocation: Allocation::Pooling { instances: 64 },
        ..SandboxConfig::default()
    };
    let sandbox = Sandbox::new(pooled).unwrap();
    figures("pooling allocator (64 instances)", &sandbox, &dir).await;
}
