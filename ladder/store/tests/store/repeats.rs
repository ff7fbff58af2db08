//! The repeat rule, applied by the store on both backends: a match that
//! replays a rated game of its season move for move settles its stakes but
//! moves no rating, whether it settles alone or in a batch beside the game it
//! repeats, while a pair's new games are rated however often it met. (The
//! waves that pair bots by these meetings are the service's: its tests.)

use crate::common;

use common::TestDb;
use duel_ladder_core::auth::User;
use duel_ladder_core::model::{BotSource, Match, PlayRecord, Standing, Winner};
use duel_ladder_store::{PairSide, Store};
use duel_rules::WeightClass;

const STAKE: i64 = 10;

/// A game with play key `key` (its facts do not matter here).
fn played(key: &str) -> PlayRecord {
    PlayRecord {
        play_key: key.to_owned(),
        round_wins: [2, 1],
        damage: [40, 31],
        exchanges: 27,
        tokens: [0, 120],
        cost_usd: [Some(0.0), None],
        fallbacks: Default::default(),
        models: Vec::new(),
    }
}

fn builtin() -> BotSource {
    BotSource::builtin("builtin:random".to_owned())
}

async fn accept(store: &Store, bots: [&str; 2]) -> Match {
    common::accept_pair(
        store,
        bots.map(|bot_id| PairSide {
            bot_id: bot_id.to_owned(),
            stake: STAKE,
        }),
    )
    .await
    .expect("accept")
}

async fn hero_standing(store: &Store, bot_id: &str) -> Standing {
    let (_, standings) = store
        .standings(None, Some(WeightClass::Light))
        .await
        .expect("standings");
    standings
        .into_iter()
        .find(|standing| standing.bot_id == bot_id)
        .expect("rated")
}

async fn pair(db: &TestDb, tag: &str) -> ([User; 2], [String; 2]) {
    let (alice, _) = db.owner(&format!("alice-{tag}"), 100_000).await;
    let (bob, _) = db.owner(&format!("bob-{tag}"), 100_000).await;
    let x = db
        .store
        .register_bot(&alice, &format!("x-{tag}"), "light", &builtin())
        .await
        .expect("x");
    let y = db
        .store
        .register_bot(&bob, &format!("y-{tag}"), "light", &builtin())
        .await
        .expect("y");
    ([alice, bob], [x.id, y.id])
}

async fn repeats_are_settled_but_not_rated(db: &TestDb) {
    db.store.start_season("s1").await.expect("season");
    let ([alice, _], [x, y]) = pair(db, "r").await;
    let now = 1_000;
    // One at a time: a rated game, its repeat, then a different game.
    let mut settled = Vec::new();
    for key in ["sha256:k1", "sha256:k1", "sha256:k2"] {
        let game = accept(&db.store, [&x, &y]).await;
        let claim = db
            .store
            .claim(60_000, now)
            .await
            .expect("claim")
            .expect("queued");
        db.store
            .complete(
                &game.id,
                &claim.lease_id,
                Winner::A,
                "r.json",
                Some(&played(key)),
                now + 1,
            )
            .await
            .expect("settle");
        settled.push(db.store.reads().game(&game.id).await.expect("match"));
    }
    assert_eq!(settled[0].not_rated, None);
    assert_eq!(settled[1].not_rated.as_deref(), Some("repeat"));
    assert_eq!(
        settled[1].repeat_of.as_deref(),
        Some(settled[0].id.as_str())
    );
    assert_eq!(settled[2].repeat_of, None);
    let hero = hero_standing(&db.store, &x).await;
    assert_eq!((hero.games, hero.wins), (2, 2), "the repeat is not rated");
    // Its stakes settled all the same: alice won three pots (less the rake).
    let available = db.store.available(&alice.id).await.expect("alice");
    assert!(available > 100_000 + 2 * STAKE, "{available}");

    // Settled together, against a third bot: two matches with one key (one
    // is rated, the other repeats it) and one with another (rated: the pair's
    // second rated game), in whatever order the batch takes them.
    let (carol, _) = db.owner("carol-r", 100_000).await;
    let z = db
        .store
        .register_bot(&carol, "z-r", "light", &builtin())
        .await
        .expect("z")
        .id;
    let mut claims = Vec::new();
    let mut games = Vec::new();
    for _ in 0..3 {
        games.push(accept(&db.store, [&z, &x]).await);
    }
    for _ in 0..3 {
        claims.push(
            db.store
                .claim(60_000, now)
                .await
                .expect("claim")
                .expect("queued"),
        );
    }
    let mut settling = tokio::task::JoinSet::new();
    for (claim, key) in claims
        .into_iter()
        .zip(["sha256:k3", "sha256:k3", "sha256:k4"])
    {
        let store = db.store.clone();
        settling.spawn(async move {
            store
                .complete(
                    &claim.game.id,
                    &claim.lease_id,
                    Winner::B,
                    "r.json",
                    Some(&played(key)),
                    now + 2,
                )
                .await
        });
    }
    while let Some(done) = settling.join_next().await {
        done.expect("task").expect("settle");
    }
    let mut verdicts = Vec::new();
    for game in &games {
        let game = db.store.reads().game(&game.id).await.expect("match");
        if let Some(earlier) = &game.repeat_of {
            let earlier = db
                .store
                .reads()
                .game(earlier)
                .await
                .expect("repeated match");
            assert_eq!(earlier.not_rated, None, "a repeat names a rated match");
            assert!(games.iter().any(|other| other.id == earlier.id));
        }
        verdicts.push(game.not_rated.clone());
    }
    verdicts.sort();
    assert_eq!(verdicts, [None, None, Some("repeat".to_owned())]);
    let hero = hero_standing(&db.store, &x).await;
    assert_eq!((hero.games, hero.wins), (4, 4));

    // x and y had two rated games: a new game of theirs is rated too (only a
    // repeat is not; the season fit weighs the pair as one game however often
    // it was rated).
    let game = accept(&db.store, [&x, &y]).await;
    let claim = db
        .store
        .claim(60_000, now)
        .await
        .expect("claim")
        .expect("queued");
    db.store
        .complete(
            &game.id,
            &claim.lease_id,
            Winner::A,
            "r.json",
            Some(&played("sha256:k5")),
            now + 2,
        )
        .await
        .expect("settle");
    let past = db.store.reads().game(&game.id).await.expect("match");
    assert_eq!(
        (past.not_rated.as_deref(), past.repeat_of.as_deref()),
        (None, None)
    );
    assert_eq!(hero_standing(&db.store, &x).await.games, 5);

    // A new season rates the same game again: ratings started over.
    db.store.end_season().await.expect("end");
    db.store.start_season("s2").await.expect("season 2");
    let game = accept(&db.store, [&x, &y]).await;
    let claim = db
        .store
        .claim(60_000, now)
        .await
        .expect("claim")
        .expect("queued");
    db.store
        .complete(
            &game.id,
            &claim.lease_id,
            Winner::A,
            "r.json",
            Some(&played("sha256:k1")),
            now + 3,
        )
        .await
        .expect("settle");
    assert_eq!(
        db.store
            .reads()
            .game(&game.id)
            .await
            .expect("match")
            .not_rated,
        None
    );
    db.store
        .ledger_check()
        .await
        .expect("check")
        .expect("clean ledger");
}
both_backends!(repeat_rule, repeats_are_settled_but_not_rated);
