//! What the WASM sandbox costs, beside what wasmtime itself costs for the same
//! component: one decision on a live instance against a bare call of the bot's
//! `decide` export (same engine settings, no limits, timers or log), a new
//! instance per match with and without the pooling allocator, loading a bot
//! (compile, disk-cache hit, memory-cache hit), and a whole warm match between
//! two small Rust bots. Figures and ratios: docs/perf/sandbox.md.
//!
//! Needs the example bots: `scripts/build-bots --rust` first.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use duel_rules::WeightClass;
use duel_rules::{Action, MatchState, Observation, Ruleset, Side, Source, TapeEntry, TapeSide};
use duel_sandbox::{Allocation, BotContext, LoadedBot, NoModel, Sandbox, SandboxConfig};
use wasmtime::component::{Component, HasSelf, Linker, ResourceTable};
use wasmtime::{Config, Engine, Store};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

fn bot_bytes(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../target/bots")
        .join(format!("{name}.wasm"));
    std::fs::read(&path)
        .unwrap_or_else(|err| panic!("{}: {err}; run scripts/build-bots --rust", path.display()))
}

fn context(seed: u64, side: Side) -> BotContext {
    BotContext {
        match_id: "bench".into(),
        seed,
        side,
    }
}

/// A match twelve exchanges in (round 2 about to start): the observation a
/// decision typically carries, with a tape of twelve entries.
struct MidMatch {
    state: MatchState,
    tape: Vec<TapeEntry>,
}

impl MidMatch {
    fn new() -> MidMatch {
        let mut state = MatchState::new(Ruleset::CURRENT);
        let mut tape = Vec::new();
        let script = [Action::Jab, Action::Block, Action::Feint, Action::Dodge];
        for i in 0..12 {
            let chosen = [script[i % 4], script[(i + 1) % 4]];
            let round = state.round();
            let step = state.play_exchange(chosen).unwrap();
            let side = |s: usize| TapeSide {
                action: chosen[s],
                exhausted: step.outcome.sides[s].exhausted,
                source: Source::Bot,
                damage_taken: step.outcome.sides[s].damage_taken,
            };
            tape.push(TapeEntry {
                round,
                exchange: step.exchange,
                sides: [side(0), side(1)],
            });
        }
        MidMatch { state, tape }
    }

    fn observation(&self) -> Observation<'_> {
        Observation::new(
            &self.state,
            Side::A,
            "bench",
            WeightClass::Middle,
            64_000,
            &self.tape,
        )
    }
}

/// The bot's `decide` called straight through wasmtime's bindings, synchronously
/// and asynchronously: the floor the sandbox's decision is compared with.
mod bare {
    use super::*;

    pub mod sync {
        wasmtime::component::bindgen!({ path: "wit/v1.0.0", world: "duel:bot/bot@1.0.0" });
    }
    pub mod asynchronous {
        wasmtime::component::bindgen!({
            path: "wit/v1.0.0",
            world: "duel:bot/bot@1.0.0",
            imports: { default: async },
            exports: { default: async },
        });
    }

    pub struct Host {
        wasi: WasiCtx,
        table: ResourceTable,
    }

    impl WasiView for Host {
        fn ctx(&mut self) -> WasiCtxView<'_> {
            WasiCtxView {
                ctx: &mut self.wasi,
                table: &mut self.table,
            }
        }
    }

    impl sync::duel::bot::types::Host for Host {}
    impl sync::duel::bot::model::Host for Host {
        fn complete(
            &mut self,
            _messages: Vec<sync::duel::bot::model::Message>,
            _max_tokens: u32,
        ) -> Result<String, sync::duel::bot::model::ModelError> {
            Err(sync::duel::bot::model::ModelError::Unavailable(
                String::new(),
            ))
        }
    }
    impl sync::duel::bot::log::Host for Host {
        fn log(&mut self, _line: String) {}
    }
    impl asynchronous::duel::bot::types::Host for Host {}
    impl asynchronous::duel::bot::model::Host for Host {
        async fn complete(
            &mut self,
            _messages: Vec<asynchronous::duel::bot::model::Message>,
            _max_tokens: u32,
        ) -> Result<String, asynchronous::duel::bot::model::ModelError> {
            Err(asynchronous::duel::bot::model::ModelError::Unavailable(
                String::new(),
            ))
        }
    }
    impl asynchronous::duel::bot::log::Host for Host {
        async fn log(&mut self, _line: String) {}
    }

    /// The sandbox's engine settings (fuel and epochs on, concurrency support
    /// off), none of its limits.
    pub fn engine() -> Engine {
        let mut config = Config::new();
        config
            .epoch_interruption(true)
            .consume_fuel(true)
            .concurrency_support(false);
        Engine::new(&config).unwrap()
    }

    pub fn store(engine: &Engine) -> Store<Host> {
        let mut store = Store::new(
            engine,
            Host {
                wasi: WasiCtx::builder().build(),
                table: ResourceTable::new(),
            },
        );
        store.set_fuel(u64::MAX / 2).unwrap();
        // No ticker runs: the epoch never reaches the deadline.
        store.set_epoch_deadline(1);
        store
    }

    pub fn sync_bot(engine: &Engine, component: &Component) -> (Store<Host>, sync::Bot) {
        let mut linker = Linker::<Host>::new(engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker).unwrap();
        sync::Bot::add_to_linker::<Host, HasSelf<Host>>(&mut linker, |host| host).unwrap();
        let mut store = store(engine);
        let bot = sync::Bot::instantiate(&mut store, component, &linker).unwrap();
        (store, bot)
    }

    pub async fn async_bot(
        engine: &Engine,
        component: &Component,
    ) -> (Store<Host>, asynchronous::Bot) {
        let mut linker = Linker::<Host>::new(engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker).unwrap();
        asynchronous::Bot::add_to_linker::<Host, HasSelf<Host>>(&mut linker, |host| host).unwrap();
        let mut store = store(engine);
        let bot = asynchronous::Bot::instantiate_async(&mut store, component, &linker)
            .await
            .unwrap();
        (store, bot)
    }

    /// The observation as the WIT bindings want it: what the sandbox builds for
    /// every decision (a copy of its conversion).
    macro_rules! convert {
        ($name:ident, $($wit:ident)::+) => {
            pub fn $name(obs: &Observation<'_>) -> $($wit)::+::Observation {
                use $($wit)::+ as wit;
                let action = |action: Action| match action {
                    Action::Jab => wit::Action::Jab,
                    Action::Heavy => wit::Action::Heavy,
                    Action::Block => wit::Action::Block,
                    Action::Dodge => wit::Action::Dodge,
                    Action::Feint => wit::Action::Feint,
                    Action::Recover => wit::Action::Recover,
                };
                let source = |source: Source| match source {
                    Source::Bot => wit::Source::Bot,
                    Source::Timeout => wit::Source::Timeout,
                    Source::Budget => wit::Source::Budget,
                    Source::Fault => wit::Source::Fault,
                };
                let fighter = |f: duel_rules::FighterState| wit::Fighter {
                    hp: f.hp,
                    stamina: f.stamina,
                    staggered: f.staggered,
                };
                let side = |s: duel_rules::TapeSide| wit::TapeSide {
                    action: action(s.action),
                    exhausted: s.exhausted,
                    source: source(s.source),
                    damage_taken: s.damage_taken,
                };
                wit::Observation {
                    ruleset: obs.ruleset.version().to_owned(),
                    match_id: obs.match_id.to_owned(),
                    class: wit::WeightClass::Middle,
                    budget_left_tokens: obs.budget_left_tokens,
                    round: obs.round,
                    exchange: obs.exchange,
                    you: fighter(obs.you),
                    opponent: fighter(obs.opponent),
                    your_round_wins: obs.your_round_wins,
                    opponent_round_wins: obs.opponent_round_wins,
                    tape: obs
                        .history()
                        .map(|entry| wit::TapeEntry {
                            round: entry.round,
                            exchange: entry.exchange,
                            you: side(entry.you),
                            opponent: side(entry.opponent),
                        })
                        .collect(),
                }
            }
        };
    }
    convert!(sync_observation, sync::duel::bot::types);
    convert!(async_observation, asynchronous::duel::bot::types);
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
}

fn sandbox(allocation: Allocation, cache: &tempfile::TempDir) -> Sandbox {
    Sandbox::new(SandboxConfig {
        allocation,
        disk_cache_dir: Some(cache.path().to_path_buf()),
        ..SandboxConfig::default()
    })
    .unwrap()
}

fn decision(c: &mut Criterion) {
    let runtime = runtime();
    let cache = tempfile::tempdir().unwrap();
    let sandbox = sandbox(Allocation::OnDemand, &cache);
    let mid = MidMatch::new();
    let mut group = c.benchmark_group("decision");
    for name in ["jabber", "counter"] {
        let bytes = bot_bytes(name);
        let loaded = sandbox.load(&bytes).unwrap();
        let mut instance = loaded.instantiate(context(1, Side::A), Arc::new(NoModel));
        runtime
            .block_on(instance.decide(&mid.observation()))
            .unwrap();
        group.bench_function(format!("sandbox decide, live instance ({name})"), |b| {
            b.iter(|| {
                runtime
                    .block_on(instance.decide(black_box(&mid.observation())))
                    .unwrap()
            })
        });

        let engine = bare::engine();
        let component = Component::new(&engine, &bytes).unwrap();
        let (mut store, bot) = bare::sync_bot(&engine, &component);
        let prepared = bare::sync_observation(&mid.observation());
        group.bench_function(format!("bare sync call ({name})"), |b| {
            b.iter(|| bot.call_decide(&mut store, black_box(&prepared)).unwrap())
        });
        // The same call at the first exchange: what a decision costs without a
        // tape to lower into the guest (the rest of the 12-entry figure above is
        // passing the observation).
        let start = MatchState::new(Ruleset::CURRENT);
        let empty = bare::sync_observation(&Observation::new(
            &start,
            Side::A,
            "bench",
            WeightClass::Middle,
            64_000,
            &[],
        ));
        group.bench_function(format!("bare sync call, empty tape ({name})"), |b| {
            b.iter(|| bot.call_decide(&mut store, black_box(&empty)).unwrap())
        });
        group.bench_function(
            format!("bare sync call + observation conversion ({name})"),
            |b| {
                b.iter(|| {
                    let wit = bare::sync_observation(black_box(&mid.observation()));
                    bot.call_decide(&mut store, &wit).unwrap()
                })
            },
        );
        let (mut store, bot) = runtime.block_on(bare::async_bot(&engine, &component));
        let prepared = bare::async_observation(&mid.observation());
        group.bench_function(format!("bare async call ({name})"), |b| {
            b.iter(|| {
                runtime
                    .block_on(bot.call_decide(&mut store, black_box(&prepared)))
                    .unwrap()
            })
        });
    }
    group.finish();
}

fn instantiation(c: &mut Criterion) {
    let runtime = runtime();
    let cache = tempfile::tempdir().unwrap();
    let state = MatchState::new(Ruleset::CURRENT);
    let first = Observation::new(&state, Side::A, "bench", WeightClass::Middle, 64_000, &[]);
    let mut group = c.benchmark_group("instantiate + first decide");
    for (label, allocation) in [
        ("on-demand", Allocation::OnDemand),
        ("pooling", Allocation::Pooling { instances: 16 }),
    ] {
        let sandbox = sandbox(allocation, &cache);
        let jabber = sandbox.load(&bot_bytes("jabber")).unwrap();
        let mut seed = 0;
        group.bench_function(format!("{label} (jabber)"), |b| {
            b.iter(|| {
                seed += 1;
                let mut instance = jabber.instantiate(context(seed, Side::A), Arc::new(NoModel));
                runtime.block_on(instance.decide(&first)).unwrap()
            })
        });
    }
    group.finish();
}

fn loading(c: &mut Criterion) {
    let bytes = bot_bytes("jabber");
    let mut group = c.benchmark_group("load");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(3));
    let no_disk = SandboxConfig::default();
    group.bench_function("compile (jabber)", |b| {
        b.iter_batched(
            || Sandbox::new(no_disk.clone()).unwrap(),
            |sandbox| {
                let loaded = sandbox.load(&bytes).unwrap();
                (sandbox, loaded)
            },
            BatchSize::PerIteration,
        )
    });
    let cache = tempfile::tempdir().unwrap();
    let with_disk = SandboxConfig {
        disk_cache_dir: Some(cache.path().to_path_buf()),
        ..SandboxConfig::default()
    };
    Sandbox::new(with_disk.clone())
        .unwrap()
        .load(&bytes)
        .unwrap();
    group.bench_function("disk cache hit, a new process's first load (jabber)", |b| {
        b.iter_batched(
            || Sandbox::new(with_disk.clone()).unwrap(),
            |sandbox| {
                let loaded = sandbox.load(&bytes).unwrap();
                assert_eq!(loaded.origin(), duel_sandbox::CompileOrigin::DiskCache);
                (sandbox, loaded)
            },
            BatchSize::PerIteration,
        )
    });
    let sandbox = Sandbox::new(with_disk).unwrap();
    sandbox.load(&bytes).unwrap();
    group.bench_function("memory cache hit (jabber: digest + lookup)", |b| {
        b.iter(|| sandbox.load(black_box(&bytes)).unwrap())
    });
    group.finish();
}

/// A whole match between two loaded bots through the sandbox alone: both
/// instantiations, every decision, the rules and the tape (no replay).
async fn whole_match(a: &LoadedBot, b: &LoadedBot, seed: u64) -> usize {
    let mut bots = [
        a.instantiate(context(seed, Side::A), Arc::new(NoModel)),
        b.instantiate(context(seed, Side::B), Arc::new(NoModel)),
    ];
    let mut state = MatchState::new(Ruleset::CURRENT);
    let mut tape: Vec<TapeEntry> = Vec::with_capacity(36);
    while !state.is_over() {
        let mut chosen = [Action::Block; 2];
        for side in Side::BOTH {
            let obs = Observation::new(&state, side, "bench", WeightClass::Middle, 64_000, &tape);
            chosen[side.index()] = bots[side.index()].decide(&obs).await.unwrap();
        }
        let round = state.round();
        let step = state.play_exchange(chosen).unwrap();
        let side = |s: usize| TapeSide {
            action: chosen[s],
            exhausted: step.outcome.sides[s].exhausted,
            source: Source::Bot,
            damage_taken: step.outcome.sides[s].damage_taken,
        };
        tape.push(TapeEntry {
            round,
            exchange: step.exchange,
            sides: [side(0), side(1)],
        });
    }
    tape.len()
}

fn matches(c: &mut Criterion) {
    let runtime = runtime();
    let cache = tempfile::tempdir().unwrap();
    let mut group = c.benchmark_group("match");
    for (label, allocation) in [
        ("on-demand", Allocation::OnDemand),
        ("pooling", Allocation::Pooling { instances: 16 }),
    ] {
        let sandbox = sandbox(allocation, &cache);
        let counter = sandbox.load(&bot_bytes("counter")).unwrap();
        let jabber = sandbox.load(&bot_bytes("jabber")).unwrap();
        let exchanges = runtime.block_on(whole_match(&counter, &jabber, 7));
        group.bench_function(
            format!("sandbox only, counter vs jabber, {exchanges} exchanges ({label})"),
            |b| b.iter(|| runtime.block_on(whole_match(&counter, &jabber, 7))),
        );
    }
    group.finish();
}

criterion_group!(benches, decision, instantiation, loading, matches);
criterion_main!(benches);
