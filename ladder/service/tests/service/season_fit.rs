//! The standings' season fit as the wave timer runs it (solved without
//! locks, retried, then locked) over the store: after settling games, the
//! ratings rows hold exactly `rating::season_fit` of the season's rated games
//! (a repeat left out), ending the season freezes the fit of every game,
//! including those settled after the last fit, and the next season's fit
//! starts from the soft reset. And what the site reads of it: a match's
//! shown rating change is the step its bots' charts take there, a refit
//! included, beside its own Glicko-2 move; rated and settled matches are
//! counted apart. SQLite and PostgreSQL.

use crate::common;

use common::TestDb;
use duel_ladder::store::{PairSide, Store};
use duel_ladder_core::model::{BotSource, Fallbacks, PlayRecord, Standing, Winner};
use duel_ladder_core::rating::{self, FitGame, Rating, Score, season_fit};
use duel_rules::WeightClass;

async fn settle(store: &Store, bots: [&str; 2], winner: Winner, play_key: &str) {
    settle_at(store, bots, winner, play_key, 1_001).await;
}

/// Settles a match of `bots` at `now` and answers its id.
async fn settle_at(
    store: &Store,
    bots: [&str; 2],
    winner: Winner,
    play_key: &str,
    now: i64,
) -> String {
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
            now,
        )
        .await
        .expect("settle");
    match_id
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

/// Issue 49: a match page's rating change said −1.97 while the bot's chart
/// moved +22.5 there, because the season fit had refitted the bot between its
/// matches. The page's `shown_rating_change` is the chart's step (the refit
/// in it), `rating_change` stays the match's own Glicko-2 move; and the
/// standings, the bot's reads and the head-to-head count rated and settled
/// matches apart, a repeat being settled but not rated.
async fn the_site_reads_one_rating_and_names_its_counts(db: &TestDb) {
    let season = db.store.start_season("s1").await.expect("season");
    let mut bots = Vec::new();
    for name in ["w", "x", "y"] {
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
    let [w, x, y] = [bots[0].as_str(), bots[1].as_str(), bots[2].as_str()];
    let first = settle_at(&db.store, [w, x], Winner::A, "k1", 2_000).await;
    settle_at(&db.store, [x, y], Winner::A, "k2", 3_000).await;
    // The standings' refit moves w between its first and second match.
    duel_ladder::fit::fit_season(&db.store, WeightClass::Light)
        .await
        .expect("fit");
    let second = settle_at(&db.store, [w, y], Winner::B, "k3", 4_000).await;
    // The same versions playing the same moves as the first: settled, not
    // rated.
    let repeat = settle_at(&db.store, [w, x], Winner::A, "k1", 5_000).await;

    let reads = db.store.reads();
    let history = reads.rating_history(w).await.expect("history");
    let ids: Vec<&str> = history.iter().map(|p| p.match_id.as_str()).collect();
    assert_eq!(
        ids,
        [first.as_str(), second.as_str()],
        "one point per rated match"
    );
    let close = |got: Option<f64>, want: f64| got.is_some_and(|got| (got - want).abs() < 1e-9);

    // w's first rated match of the season: nothing moved it before, so the
    // step is the match's own move.
    let (line, notes) = reads.match_line(&first).await.expect("first");
    assert!(close(notes.rating_after[0], history[0].rating), "{notes:?}");
    let glicko = line.rating_change[0].expect("rated");
    assert!(close(notes.shown_rating_change[0], glicko), "{notes:?}");

    // Its second: the step from its first point, the refit in it, which is
    // not the match's own move.
    let (line, notes) = reads.match_line(&second).await.expect("second");
    assert!(close(notes.rating_after[0], history[1].rating), "{notes:?}");
    let step = history[1].rating - history[0].rating;
    assert!(
        close(notes.shown_rating_change[0], step),
        "{notes:?} vs {step}"
    );
    let glicko = line.rating_change[0].expect("rated");
    assert!(
        (step - glicko).abs() > 1e-6,
        "the refit moved w between its matches: step {step}, Glicko-2 {glicko}"
    );
    // y's chart: its previous point is its match against x.
    let y_history = reads.rating_history(y).await.expect("y history");
    assert_eq!(y_history.len(), 2);
    assert!(close(
        notes.shown_rating_change[1],
        y_history[1].rating - y_history[0].rating
    ));
    assert_eq!(notes.season_ended_ms, None);

    // The repeat moved nothing: no point, no shown change.
    let (line, notes) = reads.match_line(&repeat).await.expect("repeat");
    assert_eq!(line.not_rated.as_deref(), Some("repeat"));
    assert_eq!(notes.rating_after, [None, None]);
    assert_eq!(notes.shown_rating_change, [None, None]);

    // Counted apart: w rated 2 matches (won 1, lost 1) of 3 settled (won 2).
    let table = reads
        .class_table(&season, WeightClass::Light, None, 10)
        .await
        .expect("table");
    let w_row = table.rows.iter().find(|row| row.bot == "w").expect("w");
    assert_eq!(
        (w_row.games, w_row.rated_matches, w_row.settled_matches),
        (2, 2, 3)
    );
    assert_eq!((w_row.wins, w_row.losses), (1, 1));
    let kept = reads.bot_reads(w).await.expect("bot reads");
    assert_eq!((kept.record.matches(), kept.settled_matches), (2, 3));
    assert_eq!(
        (kept.settled_record.wins, kept.settled_record.losses),
        (2, 1)
    );
    let against_x = reads.head_to_head_record(w, x).await.expect("h2h");
    assert_eq!((against_x.rated.wins, against_x.rated.matches()), (1, 1));
    assert_eq!(
        (against_x.settled.wins, against_x.settled.matches()),
        (2, 2)
    );
    let from_x = reads.head_to_head_record(x, w).await.expect("h2h");
    assert_eq!((from_x.rated.losses, from_x.settled.losses), (1, 2));
    let cost = reads
        .cost_lines(&season, WeightClass::Light)
        .await
        .expect("cost");
    let w_cost = cost.iter().find(|line| line.bot == "w").expect("w");
    assert_eq!(
        (w_cost.matches, w_cost.settled_matches, w_cost.rated_matches),
        (3, 3, 2)
    );

    // Ended: the match says so, the frozen table keeps both counts, and the
    // bot's shown rating is the frozen one.
    let ended = db.store.end_season().await.expect("end");
    let (_, notes) = reads.match_line(&second).await.expect("second");
    assert_eq!(notes.season_ended_ms, ended.ended_ms);
    let frozen = reads
        .class_table(&ended, WeightClass::Light, None, 10)
        .await
        .expect("frozen");
    let w_frozen = frozen.rows.iter().find(|row| row.bot == "w").expect("w");
    assert_eq!((w_frozen.rated_matches, w_frozen.settled_matches), (2, 3));
    let shown = reads
        .last_frozen_rating(w)
        .await
        .expect("frozen rating")
        .expect("w played in s1");
    assert_eq!(
        (shown.season.as_str(), shown.rating, shown.ended),
        ("s1", w_frozen.rating, true)
    );
}
both_backends!(
    the_site_reads_one_rating_and_names_its_counts_test,
    the_site_reads_one_rating_and_names_its_counts
);
