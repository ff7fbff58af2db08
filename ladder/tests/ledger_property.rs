//! A seeded simulation of 10,000 random matches per backend: random stakes (some
//! beyond the owner's balance), random results and draws, workers that crash
//! mid-match, stale workers that try to settle after losing their lease, and
//! retried settlements. Afterwards `ledger check` must hold, every match must be
//! settled or voided, each exactly once, and credits must be conserved.
//! Set `LADDER_PROPERTY_SEED` to replay one run's choices.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use common::TestDb;
use duel_ladder::LadderError;
use duel_ladder::ledger::HOUSE_ACCOUNT;
use duel_ladder::model::{BotKind, BotSource, MatchState, Outcome};
use duel_ladder::store::PairSide;
use duel_referee::builtin::SplitMix64;

const MATCHES: u64 = 10_000;
// More tasks than cores: each waits on the database most of the time.
const TASKS: u64 = 8;
const OWNERS: usize = 12;
const LEASE_MS: i64 = 1_000;

#[derive(Default)]
struct Tally {
    accepted: AtomicU64,
    refused_for_credits: AtomicU64,
    settlements: AtomicU64,
    crashes: AtomicU64,
    stale_refused: AtomicU64,
    retries: AtomicU64,
}

async fn simulate(db: &TestDb) {
    let seed = std::env::var("LADDER_PROPERTY_SEED")
        .ok()
        .and_then(|text| text.parse::<u64>().ok())
        .unwrap_or(20_260_501);
    println!("LADDER_PROPERTY_SEED={seed}");
    db.store.start_season("prop").await.expect("season");
    let mut bots = Vec::new();
    let mut granted = 0;
    for index in 0..OWNERS {
        // One owner is poor, so some stakes cannot be covered.
        let credits = if index == 0 { 40 } else { 1_000_000 };
        granted += credits;
        let (owner, _) = db.owner(&format!("owner{index}"), credits).await;
        for bot in 0..2 {
            let spec = "builtin:random".to_owned();
            let source = BotSource {
                kind: BotKind::Builtin,
                digest: duel_referee::spec::sha256_digest(spec.as_bytes()),
                spec,
                wasm: None,
            };
            let registered = db
                .store
                .register_bot(&owner, &format!("bot{index}x{bot}"), "light", &source)
                .await
                .expect("register");
            bots.push((registered.id, index));
        }
    }
    let bots = Arc::new(bots);
    let clock = Arc::new(AtomicI64::new(1_000_000));
    let tally = Arc::new(Tally::default());
    let mut tasks = Vec::new();
    for task in 0..TASKS {
        let store = db.store.clone();
        let bots = Arc::clone(&bots);
        let clock = Arc::clone(&clock);
        let tally = Arc::clone(&tally);
        tasks.push(tokio::spawn(async move {
            let mut rng = SplitMix64::new(seed ^ (task + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
            let mut accepted_here = 0;
            while accepted_here < MATCHES / TASKS {
                let first = rng.below(bots.len() as u64) as usize;
                let mut second = rng.below(bots.len() as u64) as usize;
                while bots[second].1 == bots[first].1 {
                    second = rng.below(bots.len() as u64) as usize;
                }
                let stake = |rng: &mut SplitMix64| 1 + rng.below(60) as i64;
                let sides = [
                    PairSide {
                        bot_id: bots[first].0.clone(),
                        stake: stake(&mut rng),
                    },
                    PairSide {
                        bot_id: bots[second].0.clone(),
                        stake: stake(&mut rng),
                    },
                ];
                match store.accept_pair(sides).await {
                    Ok(_) => {
                        accepted_here += 1;
                        tally.accepted.fetch_add(1, Ordering::Relaxed)
                    }
                    Err(LadderError::InsufficientCredits(_)) => {
                        tally.refused_for_credits.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    Err(error) => panic!("accept: {error}"),
                };
                let now = clock.load(Ordering::SeqCst);
                let Some(claim) = store.claim(LEASE_MS, now).await.expect("claim") else {
                    continue;
                };
                let winner = match rng.below(3) {
                    0 => Outcome::A,
                    1 => Outcome::B,
                    _ => Outcome::Draw,
                };
                match rng.below(10) {
                    // The worker dies mid-match: time passes beyond its lease.
                    0 | 1 => {
                        tally.crashes.fetch_add(1, Ordering::Relaxed);
                        clock.fetch_add(LEASE_MS + 1, Ordering::SeqCst);
                    }
                    // The worker stalls past its lease, another takes the match,
                    // then the stale one tries to settle and is refused.
                    2 => {
                        let later = clock.fetch_add(LEASE_MS + 1, Ordering::SeqCst) + LEASE_MS + 1;
                        let retaken = store.claim(LEASE_MS, later).await.expect("reclaim");
                        match store
                            .complete(&claim.game.id, &claim.lease_id, winner, "x.json", later)
                            .await
                        {
                            Err(LadderError::LeaseLost(_)) => {
                                tally.stale_refused.fetch_add(1, Ordering::Relaxed);
                            }
                            Ok(settlement) => {
                                panic!("a stale worker settled {}", settlement.match_id)
                            }
                            Err(error) => panic!("stale complete: {error}"),
                        }
                        if let Some(retaken) = retaken {
                            settle(
                                &store,
                                &tally,
                                &retaken.game.id,
                                &retaken.lease_id,
                                winner,
                                later,
                            )
                            .await;
                        }
                    }
                    _ => {
                        settle(&store, &tally, &claim.game.id, &claim.lease_id, winner, now).await;
                        if rng.below(4) == 0 {
                            // A retry after an unknown commit: same lease, no effect.
                            let again = store
                                .complete(&claim.game.id, &claim.lease_id, winner, "x.json", now)
                                .await;
                            match again {
                                Ok(settlement) => {
                                    assert!(settlement.already_settled, "settled twice")
                                }
                                Err(LadderError::LeaseLost(_)) => {}
                                Err(error) => panic!("retry: {error}"),
                            }
                            tally.retries.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            }
        }));
    }
    for task in tasks {
        task.await.expect("simulation task");
    }
    // Drain: whatever is left is re-run (or voided after too many attempts).
    loop {
        let now = clock.fetch_add(LEASE_MS + 1, Ordering::SeqCst) + LEASE_MS + 1;
        let Some(claim) = db.store.claim(LEASE_MS, now).await.expect("drain claim") else {
            break;
        };
        settle(
            &db.store,
            &tally,
            &claim.game.id,
            &claim.lease_id,
            Outcome::A,
            now,
        )
        .await;
    }
    let report = db
        .store
        .ledger_check()
        .await
        .expect("ledger check ran")
        .unwrap_or_else(|violation| panic!("ledger check failed: {violation}"));
    assert_eq!(report.pending_unresolved, 0, "every stake posted or voided");
    assert_eq!(report.credits_in_circulation, granted);
    let counts = db.store.match_counts().await.expect("counts");
    let count = |state| {
        counts
            .iter()
            .find(|(found, _)| *found == state)
            .map_or(0, |(_, n)| *n)
    };
    let accepted = tally.accepted.load(Ordering::Relaxed) as i64;
    assert_eq!(count(MatchState::Queued) + count(MatchState::Running), 0);
    assert_eq!(
        count(MatchState::Settled) + count(MatchState::Voided),
        accepted
    );
    assert_eq!(
        count(MatchState::Settled),
        tally.settlements.load(Ordering::Relaxed) as i64,
        "each settled match was settled by exactly one call"
    );
    assert!(accepted >= MATCHES as i64);
    assert!(
        tally.refused_for_credits.load(Ordering::Relaxed) > 0,
        "the overdraft path ran"
    );
    assert!(
        tally.crashes.load(Ordering::Relaxed) > 100
            && tally.stale_refused.load(Ordering::Relaxed) > 100
    );
    assert!(
        count(MatchState::Voided) > 0,
        "some matches ran out of attempts"
    );
    let house = db
        .store
        .account(HOUSE_ACCOUNT)
        .await
        .expect("house")
        .available();
    assert_eq!(report.house_credits, house);
    println!(
        "accepted {accepted}, settled {}, voided {}, crashes {}, stale refused {}, retries {}, house {house}",
        count(MatchState::Settled),
        count(MatchState::Voided),
        tally.crashes.load(Ordering::Relaxed),
        tally.stale_refused.load(Ordering::Relaxed),
        tally.retries.load(Ordering::Relaxed),
    );
}

async fn settle(
    store: &duel_ladder::Store,
    tally: &Tally,
    id: &str,
    lease: &str,
    winner: Outcome,
    now: i64,
) {
    match store.complete(id, lease, winner, "x.json", now).await {
        Ok(settlement) => {
            assert!(!settlement.already_settled);
            tally.settlements.fetch_add(1, Ordering::Relaxed);
        }
        // Another task moved the clock past this lease: the match is re-run later.
        Err(LadderError::LeaseLost(_)) => {}
        Err(error) => panic!("complete: {error}"),
    }
}

both_backends!(ten_thousand_random_matches, simulate);
