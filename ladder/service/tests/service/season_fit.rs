//! The standings' season fit as the wave timer runs it (solved without
//! locks, retried, then locked) over the store: after settling games, the
//! ratings rows hold exactly `rating::season_fit` of the season's rated games
//! (a repeat left out), ending the season freezes the fit of every game,
//! including those settled after the last fit, and the next season's fit
//! starts from the soft reset. SQLite and PostgreSQL.

use crate::common;

use common::TestDb;
use duel_ladder::store::{PairSide, Store};
use duel_ladder_core::model::{BotSource, Fallbacks, PlayRecord, Standing, Winner};
use duel_ladder_core::rating::{self, FitGame, Rating, Score, season_fit};
use duel_rules::WeightClass;

async fn settle(store: &Store, bots: [&str; 2], winner: Winner, play_key: &str) {
    let match_id = duel_ladder::wave::accept_pair(
        store,
        bots.map(|bot_id| PairSide {
            bot_id: bot_id.to_owned(),
            stake: 10,
        }),
    )
    .await
    .expect("accept")
    .id;
    let claim = store
        .claim(60_000, 1_000)
        .await
        .expect("claim")
        .expect("queued");
    assert_eq!(claim.game.id, match_id);
    let played = PlayRecord {
        play_key: play_key.to_owned(),
        round_wins: [1, 1],
        damage: [10, 10],
        exchanges: 10,
        tokens: [0, 0],
        cost_usd: [Some(0.0), Some(0.0)],
        fallbacks: [Fallbacks::default(); 2],
        models: Vec::new(),
    };
    store
        .complete(
            &match_id,
            &claim.lease_id,
            winner,
            "r.json",
            Some(&played),
            1_001,
        )
        .await
        .expect("settle");
}

fn score(winner: Winner) -> Score {
    match winner {
        Winner::A => Score::Win,
        Winner::B => Score::Loss,
        Winner::Draw => Score::Draw,
    }
}

async fn standings(store: &Store, season: Option<i64>) -> Vec<Standing> {
    store
        .standings(season, Some(WeightClass::Light))
        .await
        .expect("standings")
        .1
}

/// Each listed bot's standing equals the fit of `games` from `starts` (bots
/// without a ratings row in the season are not listed).
fn assert_fitted(standings: &[Standing], bots: &[String], starts: &[Rating], games: &[FitGame]) {
    let fitted = season_fit(starts, games);
    for (bot, want) in bots.iter().zip(&fitted) {
        let Some(got) = standings.iter().find(|standing| &standing.bot_id == bot) else {
            continue;
        };
        assert!(
            (got.rating - want.rating).abs() < 1e-6
                && (got.deviation - want.deviation).abs() < 1e-6,
            "{bot}: stored {} ± {}, fit {} ± {}",
            got.rating,
            got.deviation,
            want.rating,
            want.deviation
        );
    }
}

async fn season_fit_read_back(db: &TestDb) {
    let season = db.store.start_season("s1").await.expect("season");
    let mut bots = Vec::new();
    for name in ["w", "x", "y", "z"] {
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
        bots.push(bot.id);
    }
    let [w, x, y, z] = [&bots[0], &bots[1], &bots[2], &bots[3]];
    let played = [
        ([w, x], Winner::B, "k1"),
        ([x, y], Winner::A, "k2"),
        ([y, z], Winner::Draw, "k3"),
        ([z, w], Winner::B, "k4"),
        ([w, y], Winner::A, "k5"),
        ([x, z], Winner::A, "k6"),
        // The same versions playing the same moves again: a repeat, settled
        // but not rated, so not part of the fit.
        ([x, y], Winner::A, "k2"),
    ];
    let mut games = Vec::new();
    for (pair, winner, key) in played {
        settle(&db.store, [pair[0], pair[1]], winner, key).await;
        if games.len() < 6 {
            let at = |bot: &String| bots.iter().position(|b| b == bot).expect("bot");
            games.push(FitGame {
                a: at(pair[0]),
                b: at(pair[1]),
                score_a: score(winner),
            });
        }
    }
    let sequential = standings(&db.store, None).await;
    let report = duel_ladder::fit::fit_season(&db.store, WeightClass::Light)
        .await
        .expect("fit");
    assert_eq!((report.bots, report.games, report.written), (4, 6, 4));
    let starts = [rating::INITIAL; 4];
    let fitted = standings(&db.store, None).await;
    assert_eq!(fitted.len(), 4);
    assert_fitted(&fitted, &bots, &starts, &games);
    assert!(
        sequential
            .iter()
            .zip(&fitted)
            .any(|(before, after)| (before.rating - after.rating).abs() > 1.0),
        "the fit moved the sequential ratings: {sequential:?} → {fitted:?}"
    );
    // Games, wins and losses stay settlement's counts of rated games.
    let x_row = fitted.iter().find(|s| &s.bot_id == x).expect("x");
    assert_eq!((x_row.games, x_row.wins, x_row.losses), (3, 3, 0));
    // Another class has nothing to fit.
    let heavy = duel_ladder::fit::fit_season(&db.store, WeightClass::Heavy)
        .await
        .expect("heavy");
    assert_eq!((heavy.bots, heavy.games, heavy.written), (0, 0, 0));

    assert_eq!((report.stale, report.locked), (0, false), "{report:?}");

    // A fit solved before another rated game settled is thrown away, not
    // written over that game's rating change: the next fit counts it.
    let solved = db
        .store
        .solve_season_fit(WeightClass::Light)
        .await
        .expect("solve");
    settle(&db.store, [y, w], Winner::A, "k7").await;
    games.push(FitGame {
        a: 2,
        b: 0,
        score_a: Score::Win,
    });
    let settled = standings(&db.store, None).await;
    assert_eq!(
        db.store.write_season_fit(&solved).await.expect("write"),
        None,
        "a stale fit is not written"
    );
    assert_eq!(standings(&db.store, None).await, settled);
    let report = duel_ladder::fit::fit_season(&db.store, WeightClass::Light)
        .await
        .expect("fit");
    assert_eq!((report.games, report.stale), (7, 0));
    assert_fitted(&standings(&db.store, None).await, &bots, &starts, &games);
    // A fit solved now is still current, and written.
    let solved = db
        .store
        .solve_season_fit(WeightClass::Light)
        .await
        .expect("solve");
    let written = db.store.write_season_fit(&solved).await.expect("write");
    assert_eq!(written.map(|report| report.games), Some(7));

    // One more game after the last fit: ending the season fits it in.
    settle(&db.store, [x, z], Winner::B, "k9").await;
    games.push(FitGame {
        a: 1,
        b: 3,
        score_a: Score::Loss,
    });
    db.store.end_season().await.expect("end");
    let frozen = standings(&db.store, Some(season.id)).await;
    assert_eq!(frozen.len(), 4);
    assert_fitted(&frozen, &bots, &starts, &games);
    assert!(
        duel_ladder::fit::fit_season(&db.store, WeightClass::Light)
            .await
            .is_err(),
        "no season runs"
    );

    // The next season's prior is each bot's soft reset of its frozen standing.
    db.store.start_season("s2").await.expect("season 2");
    settle(&db.store, [w, z], Winner::A, "k8").await;
    duel_ladder::fit::fit_season(&db.store, WeightClass::Light)
        .await
        .expect("fit 2");
    let starts: Vec<Rating> = bots
        .iter()
        .map(|bot| {
            let standing = frozen.iter().find(|s| &s.bot_id == bot).expect("frozen");
            Rating {
                rating: standing.rating,
                deviation: standing.deviation,
                volatility: standing.volatility,
            }
            .soft_reset()
        })
        .collect();
    let second = standings(&db.store, None).await;
    assert_eq!(second.len(), 2, "w and z have rows in s2: {second:?}");
    assert_fitted(
        &second,
        &bots,
        &starts,
        &[FitGame {
            a: 0,
            b: 3,
            score_a: Score::Win,
        }],
    );
}
both_backends!(season_fit_matches_the_core_fit, season_fit_read_back);
