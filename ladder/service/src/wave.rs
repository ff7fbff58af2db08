//! Pairing waves, the service's use case over the store's reads and writes:
//! the pool of a class (the one-shot queue and the active bots ready again),
//! the pairs core's [`matchmaker::pair_wave`] makes of it, each accepted
//! under a match id and seed drawn here ([`draw`]), and what the wave did
//! recorded for `ladder status`. The store writes each step; which bots are
//! paired, paused or dropped is decided here and in core.

use std::time::Instant;

use duel_rules::WeightClass;

use crate::error::{LadderError, Result};
use crate::ledger;
use crate::matchmaker::{self, Waiting};
use crate::model::Match;
use crate::store::{PairOrigin, PairSide, PoolEntry, Store, WaveReport};

/// A fresh match id and seed: the referee's generators (`new_seed` is the
/// project's only seed generator), the seed as the database stores it.
pub fn draw() -> (String, i64) {
    // Seeds are below the referee's modulus, so they always fit an `i64`.
    const _: () = assert!(duel_referee::limits::SEED_MODULUS <= i64::MAX as u64);
    (
        duel_referee::host::new_match_id(),
        duel_referee::host::new_seed() as i64,
    )
}

/// Accepts one pairing outside the queue (tests, benchmarks, house matches)
/// under a freshly drawn id and seed ([`Store::accept_pair`]).
pub async fn accept_pair(store: &Store, sides: [PairSide; 2]) -> Result<Match> {
    let (match_id, seed) = draw();
    Ok(store.accept_pair(sides, &match_id, seed).await?)
}

/// Runs one pairing wave over everyone waiting in `class`, active bots
/// ready as soon as their last match ended.
pub async fn run_wave(store: &Store, class: WeightClass) -> Result<WaveReport> {
    run_wave_paced(store, class, 0).await
}

/// Runs one pairing wave over everyone waiting in `class`: the one-shot
/// queue and the active bots whose last match ended at least
/// `match_interval_ms` ago. Each pair is accepted in its own transaction
/// (stakes escrowed once); an active bot whose owner cannot cover its stake
/// is paused with the reason (before pairing, so it takes no partner from
/// another bot), a queued one dropped. The wave is recorded for `ladder
/// status`.
pub async fn run_wave_paced(
    store: &Store,
    class: WeightClass,
    match_interval_ms: u64,
) -> Result<WaveReport> {
    let started = Instant::now();
    let Some(season) = store.reads().active_season().await? else {
        return Err(LadderError::Precondition(
            "no season is running; an operator starts one".to_owned(),
        )
        .into());
    };
    let mut report = WaveReport {
        season: season.name.clone(),
        at_ms: store.clock().now_ms(),
        ..WaveReport::default()
    };
    let interval_ms = i64::try_from(match_interval_ms).unwrap_or(i64::MAX);
    let cutoff_ms = report.at_ms.saturating_sub(interval_ms);
    let mut pool = store.wave_queue(season.id, class).await?;
    for ready in store.wave_ready(season.id, class, cutoff_ms).await? {
        if store.pause_if_short(&ready).await?.is_some() {
            report.paused.push(ready.waiting.bot_id);
            continue;
        }
        pool.push(ready);
    }
    report.waiting = pool.len();
    let exhausted = store.exhausted_pairs(season.id, class).await?;
    let waiting: Vec<Waiting> = pool.iter().map(|entry| entry.waiting.clone()).collect();
    for (first, second) in matchmaker::pair_wave(&waiting, &exhausted) {
        let pair = [&pool[first], &pool[second]];
        let (match_id, seed) = draw();
        match store.accept_wave_pair(pair, &match_id, seed).await {
            Ok(game) => report.matches.push(game.id),
            // Drop (or pause) whichever bot's owner cannot cover its stake
            // now; the other keeps its place for the next wave.
            Err(LadderError::InsufficientCredits(_)) => {
                for entry in pair {
                    short_of_stake(store, entry, &mut report).await?;
                }
            }
            // A bot left its place meanwhile: the pair is not made.
            Err(LadderError::Conflict(_)) => {}
            Err(error) => return Err(error.into()),
        }
    }
    store.wave_waited(class, cutoff_ms).await?;
    report.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    store.record_wave(class, season.id, &report).await?;
    Ok(report)
}

/// Takes a paired bot whose owner cannot cover its stake now out of where it
/// waits: dropped from the queue, or paused with the reason.
async fn short_of_stake(store: &Store, entry: &PoolEntry, report: &mut WaveReport) -> Result<()> {
    let owner = ledger::owner_account(&entry.waiting.owner_id);
    let available = store.account(&owner).await?.available();
    let Some(reason) = ledger::short_of_stake(available, entry.stake) else {
        return Ok(());
    };
    let bot_id = &entry.waiting.bot_id;
    match entry.origin {
        PairOrigin::Queue => {
            store.drop_from_queue(bot_id).await?;
            report.dropped.push(bot_id.clone());
        }
        PairOrigin::Active { .. } => {
            if store.pause(bot_id, &reason).await? {
                report.paused.push(bot_id.clone());
            }
        }
    }
    Ok(())
}
