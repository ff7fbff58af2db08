//! Reads the site keeps in memory (a bot page's record, history and
//! opponents; a class's spend) follow every settlement: a page read between
//! two settlements is never served after the second. SQLite and PostgreSQL.

use crate::common;

use common::TestDb;
use duel_ladder_core::model::{BotSource, Winner};
use duel_ladder_store::{PairSide, Store};
use duel_rules::WeightClass;

async fn settle(store: &Store, bots: [&str; 2], winner: Winner, now: i64) {
    let game = common::accept_pair(
        store,
        bots.map(|bot_id| PairSide {
            bot_id: bot_id.to_owned(),
            stake: 10,
        }),
    )
    .await
    .expect("accept");
    let claim = store
        .claim(60_000, now)
        .await
        .expect("claim")
        .expect("queued");
    assert_eq!(claim.game.id, game.id);
    store
        .complete(&game.id, &claim.lease_id, winner, "r.json", None, now + 1)
        .await
        .expect("settle");
}

async fn kept_reads_follow_settlements(db: &TestDb) {
    db.store.start_season("s1").await.expect("season");
    let mut ids = Vec::new();
    for name in ["x", "y", "z"] {
        let (owner, _) = db.owner(&format!("owner-{name}"), 10_000).await;
        let bot = db
            .store
            .register_bot(
                &owner,
                name,
                "light",
                &BotSource::builtin("builtin:random".to_owned()),
            )
            .await
            .expect("register");
        ids.push(bot.id);
    }
    let [x, y, z] = [&ids[0], &ids[1], &ids[2]];
    let reads = db.store.reads();
    let season = reads.active_season().await.expect("read").expect("season");
    let page = |reads: std::sync::Arc<duel_ladder_store::site::BotReads>| {
        let opponents: Vec<(String, i64, i64)> = reads
            .opponents
            .iter()
            .map(|line| (line.bot.clone(), line.games, line.wins))
            .collect();
        (opponents, reads.record.wins, reads.history.len())
    };

    assert_eq!(
        page(reads.bot_reads(x).await.expect("read")),
        (vec![], 0, 0)
    );
    settle(&db.store, [x, y], Winner::A, 1_000).await;
    assert_eq!(
        page(reads.bot_reads(x).await.expect("read")),
        (vec![("y".to_owned(), 1, 1)], 1, 1)
    );
    let spend = reads
        .class_spend(&season, WeightClass::Light)
        .await
        .expect("spend");
    assert_eq!(spend.bots.len(), 2);

    // Read again with nothing settled: the same answer, from memory or not.
    assert_eq!(
        page(reads.bot_reads(x).await.expect("read")),
        (vec![("y".to_owned(), 1, 1)], 1, 1)
    );
    settle(&db.store, [x, z], Winner::B, 2_000).await;
    settle(&db.store, [y, x], Winner::B, 3_000).await;
    assert_eq!(
        page(reads.bot_reads(x).await.expect("read")),
        (vec![("y".to_owned(), 2, 2), ("z".to_owned(), 1, 0)], 2, 3)
    );
    let spend = reads
        .class_spend(&season, WeightClass::Light)
        .await
        .expect("spend");
    let matches: Vec<(String, i64)> = spend
        .bots
        .iter()
        .map(|line| (line.bot.clone(), line.matches))
        .collect();
    assert_eq!(matches.len(), 3, "{matches:?}");
    assert!(matches.contains(&("x".to_owned(), 3)), "{matches:?}");
}
both_backends!(kept_reads, kept_reads_follow_settlements);
