//! Bots' logs within their limits: an owner's oldest logs make room for new
//! ones past its quota, logs larger than the whole quota are not kept (and
//! drop nothing), keeping a side's logs again replaces them, other owners'
//! logs are untouched, and logs past the retention period are dropped. SQLite
//! and PostgreSQL, on a clock moved by hand.

use crate::common;

use std::sync::Arc;

use common::TestDb;
use duel_ladder_core::clock::ManualClock;
use duel_ladder_core::model::{ExchangeLog, LogLimits};
use duel_rules::Side;

const QUOTA_BYTES: u64 = 2_000;
const DAY_MS: i64 = 86_400_000;

fn log(chars: usize) -> Vec<ExchangeLog> {
    vec![ExchangeLog {
        round: 1,
        exchange: 1,
        lines: vec!["x".repeat(chars)],
        truncated: false,
    }]
}

async fn logs_within_limits(db: &TestDb) {
    let clock = ManualClock::new(10 * DAY_MS);
    let store = db
        .store
        .clone()
        .with_clock(Arc::new(clock.clone()))
        .with_log_limits(LogLimits {
            retention_days: 2,
            max_bytes_per_owner: QUOTA_BYTES,
        });
    let (alice, _) = db.owner("alice", 0).await;
    let (bob, _) = db.owner("bob", 0).await;
    let keep = |id: &'static str, owner: String, chars: usize| {
        let store = store.clone();
        async move {
            store
                .keep_logs(id, Side::A, &owner, &log(chars))
                .await
                .expect("keep")
        }
    };
    let kept = |id: &'static str| {
        let store = store.clone();
        async move { !store.match_logs(id).await.expect("logs").is_empty() }
    };
    assert!(keep("m1", alice.id.clone(), 600).await);
    clock.advance(1);
    assert!(keep("m2", alice.id.clone(), 600).await);
    assert!(keep("m3", bob.id.clone(), 600).await);
    let two = store.log_bytes(&alice.id).await.expect("bytes");
    assert!(two > 1_200 && two <= QUOTA_BYTES as i64, "{two}");

    // Past the quota the oldest go first, and only the owner's.
    clock.advance(1);
    assert!(keep("m4", alice.id.clone(), 900).await);
    assert!(!kept("m1").await, "the oldest made room");
    assert!(kept("m2").await && kept("m4").await && kept("m3").await);
    let after = store.log_bytes(&alice.id).await.expect("bytes");
    assert!(after <= QUOTA_BYTES as i64, "{after}");

    // Larger than the whole quota: not kept, nothing else dropped.
    assert!(!keep("m5", alice.id.clone(), 5_000).await);
    assert!(!kept("m5").await && kept("m2").await && kept("m4").await);
    assert_eq!(store.log_bytes(&alice.id).await.expect("bytes"), after);

    // Kept again (a re-run of the match): replaced, not counted twice.
    assert!(keep("m4", alice.id.clone(), 900).await);
    assert_eq!(store.log_bytes(&alice.id).await.expect("bytes"), after);

    // Past the retention: dropped; what was kept since stays.
    clock.advance(2 * DAY_MS + 1);
    assert!(keep("m6", bob.id.clone(), 100).await);
    assert_eq!(store.prune_logs().await.expect("prune"), 3, "m2, m3 and m4");
    assert!(kept("m6").await);
    assert!(!kept("m2").await && !kept("m3").await && !kept("m4").await);
    assert_eq!(store.log_bytes(&alice.id).await.expect("bytes"), 0);
}
both_backends!(logs_kept_within_their_limits, logs_within_limits);
