//! Whole matches between built-in bots: the bare synchronous runner (the
//! tournament path) and the async runner (CLI and server path), both recording
//! the full replay. Compare with `rules/whole match (engine only)`.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use duel_referee::builtin::{BuiltinBot, BuiltinFighter};
use duel_referee::{BuiltinSpec, MatchConfig, run_bare_match, run_match};
use duel_rules::{Action, Side, WeightClass};

/// The allocator of the `referee` and `ladder` binaries (src/main.rs), so that
/// these figures are theirs.
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn config(seed: u64) -> MatchConfig {
    MatchConfig::new(
        "00000000-0000-4000-8000-000000000000".to_owned(),
        "2026-11-29T12:00:00Z".to_owned(),
        WeightClass::Middle,
        seed,
    )
}

fn matches(c: &mut Criterion) {
    let script_a = BuiltinSpec::Script(vec![Action::Jab, Action::Heavy, Action::Feint].into());
    let script_b = BuiltinSpec::Script(
        vec![Action::Block, Action::Jab, Action::Dodge, Action::Recover].into(),
    );
    let [script_a_fighter, script_b_fighter, random, counter] = [
        script_a.clone(),
        script_b.clone(),
        BuiltinSpec::Random,
        BuiltinSpec::Counter,
    ]
    .map(BuiltinFighter::new);
    let mut group = c.benchmark_group("match");
    group.bench_function("bare runner, script vs script", |bench| {
        bench.iter(|| run_bare_match(black_box(config(7)), [&script_a_fighter, &script_b_fighter]))
    });
    group.bench_function("bare runner, random vs random", |bench| {
        let mut seed = 0;
        bench.iter(|| {
            seed += 1;
            run_bare_match(black_box(config(seed)), [&random, &random])
        })
    });
    group.bench_function("bare runner, counter vs random", |bench| {
        let mut seed = 0;
        bench.iter(|| {
            seed += 1;
            run_bare_match(black_box(config(seed)), [&counter, &random])
        })
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    group.bench_function("async runner, script vs script", |bench| {
        bench.iter(|| {
            let mut a = BuiltinBot::new(script_a.clone(), 7, Side::A);
            let mut b = BuiltinBot::new(script_b.clone(), 7, Side::B);
            runtime.block_on(run_match(black_box(config(7)), [&mut a, &mut b]))
        })
    });
    group.finish();
}

criterion_group!(benches, matches);
criterion_main!(benches);
