//! One pairing wave over N queued bots (target: under 100 ms at 10,000), against
//! the bare baseline of sorting the same ratings.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use duel_ladder::matchmaker::{Waiting, pair_wave};
use duel_referee::builtin::SplitMix64;

fn waiting(count: usize) -> Vec<Waiting> {
    let mut rng = SplitMix64::new(7);
    (0..count)
        .map(|index| Waiting {
            bot_id: format!("bot{index}"),
            owner_id: format!("owner{}", index / 3),
            rating: 1000.0 + rng.below(1_000) as f64,
            waves_waited: rng.below(6) as i64,
            last_opponent: (index > 0).then(|| format!("bot{}", index - 1)),
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("matchmaker");
    for count in [1_000, 10_000, 50_000] {
        let bots = waiting(count);
        group.bench_with_input(BenchmarkId::new("wave", count), &bots, |b, bots| {
            b.iter(|| pair_wave(bots))
        });
        group.bench_with_input(
            BenchmarkId::new("sort_baseline", count),
            &bots,
            |b, bots| {
                b.iter(|| {
                    let mut ratings: Vec<f64> = bots.iter().map(|bot| bot.rating).collect();
                    ratings.sort_by(f64::total_cmp);
                    ratings
                })
            },
        );
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
