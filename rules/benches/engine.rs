//! The bare rules engine: one exchange, and a whole match driven by a fixed list
//! of choices (no bots, no recording). The baseline the runners are compared to.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use duel_rules::{Action, FighterState, MatchState, Ruleset};

fn exchanges(c: &mut Criterion) {
    let states = [
        FighterState {
            hp: 160,
            stamina: 100,
            staggered: false,
        },
        FighterState {
            hp: 90,
            stamina: 3,
            staggered: true,
        },
        FighterState {
            hp: 40,
            stamina: 50,
            staggered: false,
        },
    ];
    let mut group = c.benchmark_group("rules");
    group.throughput(Throughput::Elements(36));
    group.bench_function("36 exchanges", |bench| {
        bench.iter(|| {
            let mut total = 0;
            for (index, a) in Action::ALL.into_iter().enumerate() {
                for b in Action::ALL {
                    let pre = [states[index % 3], states[(index + 1) % 3]];
                    let outcome =
                        Ruleset::V1_0_0.resolve_exchange(black_box(pre), black_box([a, b]));
                    total += outcome.sides[0].damage_taken;
                }
            }
            total
        })
    });
    group.finish();
}

fn whole_match(c: &mut Criterion) {
    // The rhythm of builtin:script:JAB,HEAVY,FEINT against builtin:script:BLOCK,JAB,DODGE,RECOVER.
    let a = [Action::Jab, Action::Heavy, Action::Feint];
    let b = [Action::Block, Action::Jab, Action::Dodge, Action::Recover];
    c.bench_function("rules/whole match (engine only)", |bench| {
        bench.iter(|| {
            let mut state = MatchState::new(Ruleset::V1_0_0);
            let mut decision = 0;
            while !state.is_over() {
                let pair = [a[decision % a.len()], b[decision % b.len()]];
                let _ = black_box(state.play_exchange(black_box(pair)));
                decision += 1;
            }
            state.result()
        })
    });
}

criterion_group!(benches, exchanges, whole_match);
criterion_main!(benches);
