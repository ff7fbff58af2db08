//! One pairing wave over N queued bots (target: under 100 ms at 10,000), against
//! the bare baseline of sorting the same ratings.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use duel_ladder_core::limits::RECENT_OPPONENTS;
use duel_ladder_core::matchmaker::{ExhaustedPairs, Waiting, pair_key, pair_wave};

fn waiting(count: usize) -> Vec<Waiting> {
    // SplitMix64: reproducible ratings without pulling the referee in for its rng.
    let mut state: u64 = 7;
    let mut below = |bound: u64| {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % bound
    };
    (0..count)
        .map(|index| Waiting {
            bot_id: format!("bot{index}"),
            owner_id: format!("owner{}", index / 3),
            rating: 1000.0 + below(1_000) as f64,
            waves_waited: below(6) as i64,
            // A full list of recent opponents each, as a busy season leaves
            // them, one meeting in ten marked as a pair that repeated a game.
            recent_opponents: (1..=RECENT_OPPONENTS)
                .filter(|back| index >= *back)
                .map(|back| {
                    let mark = if (index + back) % 10 == 0 { "!" } else { "" };
                    format!("bot{}{mark}", index - back)
                })
                .collect(),
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("matchmaker");
    for count in [1_000, 10_000, 50_000] {
        let bots = waiting(count);
        // One pair in ten of neighbours has met its season's bound.
        let exhausted: ExhaustedPairs = (10..count)
            .step_by(10)
            .map(|index| pair_key(&format!("bot{index}"), &format!("bot{}", index - 10)))
            .collect();
        group.bench_with_input(BenchmarkId::new("wave", count), &bots, |b, bots| {
            b.iter(|| pair_wave(bots, &exhausted))
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
