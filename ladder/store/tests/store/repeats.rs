//! The repeat rule and the pairing bound, applied by the store on both
//! backends: a match that replays a rated game of its season move for move
//! settles its stakes but moves no rating, whether it settles alone or in a
//! batch beside the game it repeats, while a pair's new games are rated
//! however often it met; a pair that met its season's bound is not paired
//! again.

use crate::common;

use common::TestDb;
use duel_ladder_core::auth::User;
use duel_ladder_core::limits::MAX_PAIR_MEETINGS_PER_SEASON;
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
    store
        .accept_pair(bots.map(|bot_id| PairSide {
            bot_id: bot_id.to_owned(),
            stake: STAKE,
        }))
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
        settled.push(db.store.game(&game.id).await.expect("match"));
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
        let game = db.store.game(&game.id).await.expect("match");
        if let Some(earlier) = &game.repeat_of {
            let earlier = db.store.game(earlier).await.expect("repeated match");
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
    let past = db.store.game(&game.id).await.expect("match");
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
        db.store.game(&game.id).await.expect("match").not_rated,
        None
    );
    db.store
        .ledger_check()
        .await
        .expect("check")
        .expect("clean ledger");
}
both_backends!(repeat_rule, repeats_are_settled_but_not_rated);

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
        let report = db.store.run_wave(WeightClass::Light).await.expect("wave");
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
    let report = db.store.run_wave(WeightClass::Light).await.expect("wave");
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
            paired = db
                .store
                .run_wave(WeightClass::Light)
                .await
                .expect("wave")
                .matches;
            if !paired.is_empty() {
                break;
            }
        }
        assert_eq!(paired.len(), 1, "paired: {paired:?}");
        let game = db.store.game(&paired[0]).await.expect("match");
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
        paired = db
            .store
            .run_wave(WeightClass::Light)
            .await
            .expect("wave")
            .matches;
        if !paired.is_empty() {
            break;
        }
    }
    assert_eq!(paired.len(), 1, "paired: {paired:?}");
    let game = db.store.game(&paired[0]).await.expect("match");
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
