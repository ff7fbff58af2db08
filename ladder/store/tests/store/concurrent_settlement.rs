//! Settlements that share a bot, applied at once: after a worker outage one
//! bot's backlog of queued matches is settled concurrently, and its stored
//! rating must be what serial Glicko-2 gives (on PostgreSQL both rating rows
//! are locked in bot-id order before they are read, so no update is lost).

use crate::common;

use common::TestDb;
use duel_ladder_core::model::{BotSource, Winner};
use duel_ladder_core::rating::{self, INITIAL, Score};
use duel_ladder_store::PairSide;
use duel_rules::WeightClass;

/// Matches in one bot's backlog.
const BACKLOG: usize = 4;
/// Backlogs settled, one after another, each with a fresh bot.
const ROUNDS: usize = 3;

fn builtin() -> BotSource {
    let spec = "builtin:random".to_owned();
    BotSource::builtin(spec)
}

async fn backlog_settled_at_once(db: &TestDb) {
    db.store.start_season("s1").await.expect("season");
    // Serial Glicko-2: four wins over fresh opponents, one rating period each.
    let mut serial = INITIAL;
    for _ in 0..BACKLOG {
        serial = rating::update(serial, INITIAL, Score::Win).0;
    }
    assert!(
        (serial.rating - 1852.3).abs() < 0.05,
        "four wins give {}",
        serial.rating
    );
    let now = 1_000;
    let before = db.store.settlement_stats();
    for round in 0..ROUNDS {
        let (hero_owner, _) = db.owner(&format!("hero{round}"), 10_000).await;
        let hero = db
            .store
            .register_bot(&hero_owner, &format!("hero{round}"), "light", &builtin())
            .await
            .expect("hero");
        for opponent in 0..BACKLOG {
            let name = format!("rival{round}x{opponent}");
            let (owner, _) = db.owner(&name, 1_000).await;
            let rival = db
                .store
                .register_bot(&owner, &name, "light", &builtin())
                .await
                .expect("rival");
            common::accept_pair(
                &db.store,
                [
                    PairSide {
                        bot_id: hero.id.clone(),
                        stake: 10,
                    },
                    PairSide {
                        bot_id: rival.id,
                        stake: 10,
                    },
                ],
            )
            .await
            .expect("accept");
        }
        let mut claims = Vec::new();
        for _ in 0..BACKLOG {
            claims.push(
                db.store
                    .claim(60_000, now)
                    .await
                    .expect("claim")
                    .expect("a queued match"),
            );
        }
        // Every worker reports at once.
        let mut settling = tokio::task::JoinSet::new();
        for claim in claims {
            let store = db.store.clone();
            settling.spawn(async move {
                store
                    .complete(
                        &claim.game.id,
                        &claim.lease_id,
                        Winner::A,
                        "r.json",
                        None,
                        now + 1,
                    )
                    .await
            });
        }
        while let Some(done) = settling.join_next().await {
            let settlement = done.expect("task").expect("settle");
            assert!(!settlement.already_settled);
        }
        let (_, standings) = db
            .store
            .standings(None, Some(WeightClass::Light))
            .await
            .expect("standings");
        let stored = standings
            .iter()
            .find(|standing| standing.bot_id == hero.id)
            .expect("hero rated");
        assert_eq!(
            (stored.games, stored.wins),
            (BACKLOG as i64, BACKLOG as i64),
            "round {round}"
        );
        assert_eq!(
            (stored.rating, stored.deviation, stored.volatility),
            (serial.rating, serial.deviation, serial.volatility),
            "round {round}: {} stored where serial Glicko-2 gives {}",
            stored.rating,
            serial.rating
        );
    }
    // Reports that arrive together share a transaction (group commit), and
    // none of them needed the one-by-one fallback.
    let stats = db.store.settlement_stats();
    let settled = (ROUNDS * BACKLOG) as u64;
    assert_eq!(stats.batched - before.batched, settled, "{stats:?}");
    assert_eq!(stats.alone, before.alone, "{stats:?}");
    assert!(
        stats.batches - before.batches < settled,
        "every settlement had its own transaction: {stats:?}"
    );
}
both_backends!(
    backlog_of_one_bot_settled_concurrently,
    backlog_settled_at_once
);
