//! Pairing waves over the store on both backends: a pair that met its
//! season's bound is not paired again, a pair's sides alternate from one
//! meeting to the next, and a pair that repeated a game waits while a
//! partner that would play a new one is within reach.

use crate::common;

use common::TestDb;
use duel_ladder::auth::User;
use duel_ladder::limits::MAX_PAIR_MEETINGS_PER_SEASON;
use duel_ladder::model::{BotSource, Match, PlayRecord, Winner};
use duel_ladder::store::{PairSide, Store};
use duel_ladder::wave::run_wave;
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
    duel_ladder::wave::accept_pair(
        store,
        bots.map(|bot_id| PairSide {
            bot_id: bot_id.to_owned(),
            stake: STAKE,
        }),
    )
    .await
    .expect("accept")
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

async fn a_pair_meets_at_most_its_bound(db: &TestDb) {
    db.store.start_season("s1").await.expect("season");
    let ([alice, bob], [x, y]) = pair(db, "b").await;
    let now = 1_000;
    for _ in 0..MAX_PAIR_MEETINGS_PER_SEASON {
        let game = accept(&db.store, [&x, &y]).await;
        let claim = db
            .store
            .claim(60_000, now)
            .await
            .expect("claim")
            .expect("queued");
        db.store
            .complete(&game.id, &claim.lease_id, Winner::Draw, "r.json", None, now)
            .await
            .expect("settle");
    }
    // Both queued, long waited, nobody else: the wave leaves them unpaired.
    db.store
        .enqueue(&alice, "x-b", STAKE)
        .await
        .expect("x queued");
    db.store
        .enqueue(&bob, "y-b", STAKE)
        .await
        .expect("y queued");
    for _ in 0..30 {
        let report = run_wave(&db.store, WeightClass::Light).await.expect("wave");
        assert!(report.matches.is_empty(), "{report:?}");
    }
    // A third bot is paired at once.
    let (carol, _) = db.owner("carol-b", 1_000).await;
    db.store
        .register_bot(&carol, "z-b", "light", &builtin())
        .await
        .expect("z");
    db.store
        .enqueue(&carol, "z-b", STAKE)
        .await
        .expect("z queued");
    let report = run_wave(&db.store, WeightClass::Light).await.expect("wave");
    assert_eq!(report.matches.len(), 1, "{report:?}");
}
both_backends!(pair_bound, a_pair_meets_at_most_its_bound);

/// Claims and settles the next queued match, `game`, as a draw.
async fn settle_draw(store: &Store, game: &Match) {
    let claim = store
        .claim(60_000, 1_000)
        .await
        .expect("claim")
        .expect("queued");
    assert_eq!(claim.game.id, game.id);
    store
        .complete(
            &game.id,
            &claim.lease_id,
            Winner::Draw,
            "r.json",
            None,
            1_000,
        )
        .await
        .expect("settle");
}

async fn a_pairs_sides_alternate_from_wave_to_wave(db: &TestDb) {
    db.store.start_season("s1").await.expect("season");
    let ([alice, bob], [x, y]) = pair(db, "s").await;
    let (carol, _) = db.owner("carol-s", 100_000).await;
    let z = db
        .store
        .register_bot(&carol, "z-s", "light", &builtin())
        .await
        .expect("z")
        .id;
    let (first, second) = if x < y { (&x, &y) } else { (&y, &x) };
    let mut sides_played = Vec::new();
    for _ in 0..3 {
        // Queued in the same order each time: only the pair's meetings decide.
        db.store
            .enqueue(&alice, "x-s", STAKE)
            .await
            .expect("x queued");
        db.store
            .enqueue(&bob, "y-s", STAKE)
            .await
            .expect("y queued");
        // The recent meetings' cost may hold them a wave or two.
        let mut paired = Vec::new();
        for _ in 0..10 {
            paired = run_wave(&db.store, WeightClass::Light)
                .await
                .expect("wave")
                .matches;
            if !paired.is_empty() {
                break;
            }
        }
        assert_eq!(paired.len(), 1, "paired: {paired:?}");
        let game = db.store.reads().game(&paired[0]).await.expect("match");
        sides_played.push([game.sides[0].bot_id.clone(), game.sides[1].bot_id.clone()]);
        settle_draw(&db.store, &game).await;
        // Each meets someone else before the pair may meet again.
        for bot in [&x, &y] {
            let game = accept(&db.store, [bot, &z]).await;
            settle_draw(&db.store, &game).await;
        }
    }
    let (a, b) = (first.clone(), second.clone());
    assert_eq!(
        sides_played,
        [[a.clone(), b.clone()], [b.clone(), a.clone()], [a, b]],
        "the bot whose id sorts first plays side A in the 1st and 3rd meeting"
    );
}
both_backends!(alternating_sides, a_pairs_sides_alternate_from_wave_to_wave);

/// Accepts `bots` directly and settles their match as a draw that played the
/// game `key`.
async fn play_draw(store: &Store, bots: [&str; 2], key: &str) {
    let game = accept(store, bots).await;
    let claim = store
        .claim(60_000, 1_000)
        .await
        .expect("claim")
        .expect("queued");
    assert_eq!(claim.game.id, game.id);
    store
        .complete(
            &game.id,
            &claim.lease_id,
            Winner::Draw,
            "r.json",
            Some(&played(key)),
            1_000,
        )
        .await
        .expect("settle");
}

async fn a_pair_that_repeated_a_game_waits_for_a_new_one(db: &TestDb) {
    db.store.start_season("s1").await.expect("season");
    let ([alice, bob], [x, y]) = pair(db, "w").await;
    let mut others = Vec::new();
    for name in ["carol-w", "dave-w"] {
        let (owner, _) = db.owner(name, 100_000).await;
        let bot = db
            .store
            .register_bot(&owner, &format!("{}-bot", &name[..1]), "light", &builtin())
            .await
            .expect("bot");
        others.push((owner, bot.id));
    }
    let ((carol, z), (_, w)) = (&others[0], &others[1]);
    // x and y play one game three times (the second and third are repeats);
    // z met each of them four times, in different games; both x and y last
    // met w. Every game is a draw, so every rating stays 1,500.
    for _ in 0..3 {
        play_draw(&db.store, [&x, &y], "sha256:xy").await;
    }
    for (bot, tag) in [(&x, "x"), (&y, "y")] {
        for game in 0..4 {
            play_draw(&db.store, [bot, z], &format!("sha256:{tag}z{game}")).await;
        }
    }
    play_draw(&db.store, [&x, w], "sha256:xw").await;
    play_draw(&db.store, [&y, w], "sha256:yw").await;
    // x, y and z wait. x and y met three times lately (150 points), x and z
    // four (200); y and z just met. Were it not for the repeats, x and y
    // would meet as soon as their window covers 150; they would replay their
    // game, so x meets z once the window covers 200.
    db.store
        .enqueue(&alice, "x-w", STAKE)
        .await
        .expect("x queued");
    db.store
        .enqueue(&bob, "y-w", STAKE)
        .await
        .expect("y queued");
    db.store
        .enqueue(carol, "c-bot", STAKE)
        .await
        .expect("z queued");
    let mut paired = Vec::new();
    for _ in 0..10 {
        paired = run_wave(&db.store, WeightClass::Light)
            .await
            .expect("wave")
            .matches;
        if !paired.is_empty() {
            break;
        }
    }
    assert_eq!(paired.len(), 1, "paired: {paired:?}");
    let game = db.store.reads().game(&paired[0]).await.expect("match");
    let mut met = [game.sides[0].bot_id.clone(), game.sides[1].bot_id.clone()];
    met.sort();
    let mut expected = [x.clone(), z.clone()];
    expected.sort();
    assert_eq!(met, expected, "x meets z, not the pair that repeats itself");
}
both_backends!(
    repeated_pair_waits,
    a_pair_that_repeated_a_game_waits_for_a_new_one
);
