//! WASM bots through the referee's `Bot` seam, beside built-in bots: one decision
//! (a live WASM instance against a built-in strategy, same observation), and a
//! whole warm match between two small example Rust WASM bots with the async
//! runner, both instantiations and the full replay included, with instances
//! allocated on demand, from a pool (as `referee local`, `referee serve`,
//! ladder workers and tournaments get), and from a pool whose every slot is
//! taken (both instances overflow to on-demand allocation). Compare with
//! `match/async runner, script vs script` (benches/matches.rs) and with the
//! sandbox's own figures (sandbox/benches/sandbox.rs). Figures: docs/perf/sandbox.md.
//!
//! Needs the example bots: `scripts/build-bots --rust` first.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use duel_referee::bot::Bot;
use duel_referee::builtin::BuiltinBot;
use duel_referee::record::{Answer, MatchRecorder};
use duel_referee::wasm::WasmBot;
use duel_referee::{
    BuiltinSpec, Decision, HostConfig, MatchConfig, MatchHost, ModelGateway, WasmAllocation,
    run_match,
};
use duel_replays::{FighterInfo, FighterKind};
use duel_rules::{Action, Side, WeightClass};
use duel_sandbox::LoadedBot;

/// The allocator of the `referee` and `ladder` binaries (src/main.rs), so that
/// these figures are theirs.
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

const WALL_CLOCK: Duration = Duration::from_secs(10);

fn bot_path(name: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../target/bots")
        .join(format!("{name}.wasm"));
    assert!(
        path.exists(),
        "{} is missing: run scripts/build-bots --rust",
        path.display()
    );
    path
}

fn config(seed: u64) -> MatchConfig {
    MatchConfig::new(
        "00000000-0000-4000-8000-000000000000".to_owned(),
        "2026-11-29T12:00:00Z".to_owned(),
        WeightClass::Middle,
        seed,
    )
}

fn wasm_bot(path: &Path, loaded: &LoadedBot, config: &MatchConfig, side: Side) -> WasmBot {
    let meter = duel_referee::FighterMeter::new(ModelGateway::disabled(), config.budget_tokens());
    let context = duel_sandbox::BotContext {
        match_id: config.match_id.clone(),
        seed: config.seed,
        side,
    };
    WasmBot::new(path, loaded.clone(), context, meter)
}

/// A recorder twelve exchanges into a match, so observations carry a
/// twelve-entry tape.
fn mid_match() -> MatchRecorder {
    let fighter = |name: &str| FighterInfo {
        name: name.into(),
        kind: FighterKind::Builtin,
        digest: "".into(),
        spec: None,
    };
    let mut recorder = MatchRecorder::new(config(7), [fighter("a"), fighter("b")]);
    let script = [Action::Jab, Action::Block, Action::Feint, Action::Dodge];
    for i in 0..12 {
        recorder.commit([
            Answer::asked(Decision::action(script[i % 4]), 0),
            Answer::asked(Decision::action(script[(i + 1) % 4]), 0),
        ]);
    }
    recorder
}

fn wasm(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    // On demand (any number of matches at once), and from an instance pool (as
    // tournaments get: one match per job at a time).
    let hosts = |pool: Option<usize>| {
        let mut config = HostConfig::new(ModelGateway::disabled());
        if let Some(concurrent_matches) = pool {
            config.wasm_allocation = WasmAllocation::Pooled { concurrent_matches };
        }
        MatchHost::new(config)
    };
    let (on_demand, pooled) = (hosts(None), hosts(Some(1)));
    let load = |name: &str, pool: Option<usize>| {
        let path = bot_path(name);
        let host = if pool.is_some() { &pooled } else { &on_demand };
        let bytes = std::fs::read(&path).expect("example bot built");
        let loaded = runtime
            .block_on(host.load_component(bytes, WALL_CLOCK))
            .expect("loads");
        (path, loaded)
    };
    let (jabber_path, jabber) = load("jabber", None);
    let (counter_path, counter) = load("counter", None);

    let recorder = mid_match();
    let mut group = c.benchmark_group("decision through the Bot seam");
    let mut bots: Vec<(&str, Box<dyn Bot>)> = vec![
        (
            "builtin:random",
            Box::new(BuiltinBot::new(BuiltinSpec::Random, 7, Side::A)),
        ),
        (
            "builtin:counter",
            Box::new(BuiltinBot::new(BuiltinSpec::Counter, 7, Side::A)),
        ),
        (
            "wasm jabber",
            Box::new(wasm_bot(&jabber_path, &jabber, recorder.config(), Side::A)),
        ),
        (
            "wasm counter",
            Box::new(wasm_bot(
                &counter_path,
                &counter,
                recorder.config(),
                Side::A,
            )),
        ),
    ];
    for (label, bot) in &mut bots {
        // The first decision instantiates a WASM bot: not part of this figure.
        runtime.block_on(bot.decide(recorder.observation(Side::A)));
        group.bench_function(*label, |b| {
            b.iter(|| runtime.block_on(bot.decide(black_box(recorder.observation(Side::A)))))
        });
    }
    group.finish();

    let mut group = c.benchmark_group("match");
    // The runner and the replay alone, for the ratio in the same run.
    let script = |actions: &[Action]| BuiltinSpec::Script(actions.to_vec().into());
    let script_a = script(&[Action::Jab, Action::Heavy, Action::Feint]);
    let script_b = script(&[Action::Block, Action::Jab, Action::Dodge, Action::Recover]);
    group.bench_function("async runner, builtin script vs script", |bench| {
        bench.iter(|| {
            let mut a = BuiltinBot::new(script_a.clone(), 7, Side::A);
            let mut b = BuiltinBot::new(script_b.clone(), 7, Side::B);
            runtime.block_on(run_match(black_box(config(7)), [&mut a, &mut b]))
        })
    });
    let variants = [
        ("on-demand", None, 0),
        ("instance pool", Some(1), 0),
        // A pool for one match has four slots: all held by live instances.
        ("instance pool full, overflow on demand", Some(1), 4),
    ];
    for (label, pool, held) in variants {
        let (_, jabber) = load("jabber", pool);
        let (_, counter) = load("counter", pool);
        let mut holders: Vec<WasmBot> = (0..held)
            .map(|_| wasm_bot(&jabber_path, &jabber, &config(7), Side::A))
            .collect();
        for holder in &mut holders {
            runtime.block_on(holder.decide(recorder.observation(Side::A)));
        }
        let play = |config: MatchConfig| {
            let mut a = wasm_bot(&counter_path, &counter, &config, Side::A);
            let mut b = wasm_bot(&jabber_path, &jabber, &config, Side::B);
            runtime.block_on(run_match(config, [&mut a, &mut b]))
        };
        let exchanges = play(config(7)).exchanges().count();
        group.bench_function(
            format!("async runner, wasm counter vs wasm jabber, {exchanges} exchanges ({label})"),
            |bench| bench.iter(|| play(black_box(config(7)))),
        );
        drop(holders);
    }
    let stats = pooled.wasm_stats();
    assert!(
        stats.pool_instantiations > 0 && stats.on_demand_instantiations > 0,
        "both paths measured: {stats:?}"
    );
    group.finish();
}

criterion_group!(benches, wasm);
criterion_main!(benches);
