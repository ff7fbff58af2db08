//! A whole season through the permission layer on both backends: accounts,
//! credits, registration with version history, enqueue, waves, workers,
//! settlement, standings, end of season with frozen standings and a soft reset;
//! and every permission refusal leaving the data unchanged.

use crate::common;

use std::sync::Arc;

use common::TestDb;
use duel_ladder::auth::Role;
use duel_ladder::ladder::{Ladder, Registration};
use duel_ladder::worker::{BuiltinFactory, Worked, WorkerConfig, work_once};
use duel_ladder::{LadderError, ServiceError};
use duel_rules::WeightClass;

fn ladder(db: &TestDb) -> Ladder {
    Ladder::new(db.store.clone(), common::host(), false)
}

async fn season_end_to_end(db: &TestDb) {
    let ladder = ladder(db);
    let (_, operator_token) = db
        .store
        .bootstrap_operator("root")
        .await
        .expect("bootstrap")
        .expect("first operator");
    assert!(
        db.store
            .bootstrap_operator("again")
            .await
            .expect("bootstrap")
            .is_none()
    );
    let operator = ladder
        .caller(Some(&operator_token))
        .await
        .expect("operator");
    ladder
        .start_season(&operator, "spring")
        .await
        .expect("season");
    let specs = [
        "builtin:counter",
        "builtin:random",
        "builtin:block",
        "builtin:script:HEAVY,JAB,FEINT",
    ];
    let mut owners = Vec::new();
    for index in 0..8 {
        let (owner, token) = ladder
            .create_account(&operator, &format!("owner{index}"), Role::Owner)
            .await
            .expect("owner");
        ladder
            .grant_credits(&operator, &owner.name, 1_000, &format!("g{index}"))
            .await
            .expect("grant");
        let owner = ladder.caller(Some(&token)).await.expect("owner token");
        let name = format!("bot{index}");
        ladder
            .register_bot(
                &owner,
                &name,
                "middle",
                Registration::Builtin(specs[index % 4].to_owned()),
            )
            .await
            .expect("register");
        owners.push((owner, name));
    }
    // A new version keeps the history.
    let bot = ladder
        .register_bot(
            &owners[0].0,
            "bot0",
            "middle",
            Registration::Builtin("builtin:random".into()),
        )
        .await
        .expect("version 2");
    assert_eq!(bot.versions.len(), 2);
    assert_eq!(
        (bot.current_version, bot.versions[0].spec.as_str()),
        (2, "builtin:counter")
    );
    let replays = tempfile::tempdir().expect("replays");
    let store = duel_replays::store::ReplayStore::open(&replays.path().display().to_string())
        .expect("replay store");
    let key = Arc::new(duel_replays::SigningKey::from_bytes(&[3; 32]));
    let config = WorkerConfig::new(common::host(), store, key);
    let mut settled = 0;
    for round in 0..3 {
        for (owner, bot) in &owners {
            ladder.enqueue(owner, bot, 10).await.expect("enqueue");
        }
        let wave = ladder
            .run_wave(&operator, WeightClass::Middle)
            .await
            .expect("wave");
        assert_eq!(wave.waiting, 8);
        // Bots a rating gap held back are paired as their window widens (at
        // most two, each the other's last opponent, stay unpaired), so every
        // round plays at least three matches whatever the random results
        // were. The first wave alone may pair nobody: after a round of random
        // results every neighbour can be further off than the first window.
        let mut paired = wave.matches.len();
        for _ in 0..20 {
            let more = ladder
                .run_wave(&operator, WeightClass::Middle)
                .await
                .expect("wave");
            paired += more.matches.len();
            if more.waiting < 2 {
                break;
            }
        }
        assert!(paired >= 3, "round {round}: {paired} matches paired");
        loop {
            match work_once(&db.store, &BuiltinFactory, &config)
                .await
                .expect("work")
            {
                Worked::Idle => break,
                Worked::Settled(_) => settled += 1,
                other => panic!("unexpected {other:?}"),
            }
        }
        for (owner, bot) in &owners {
            let _ = ladder.dequeue(owner, bot).await;
        }
    }
    assert!(settled >= 9, "{settled} matches settled");
    let (season, live) = ladder
        .standings(&operator, None, Some(WeightClass::Middle))
        .await
        .expect("standings");
    assert_eq!(live.len(), 8);
    assert!(
        live.windows(2)
            .all(|pair| pair[0].conservative >= pair[1].conservative)
    );
    assert!(
        live.iter().all(|standing| standing.provisional),
        "few games: still provisional"
    );
    // Every rated match left one point on each bot's chart, its rating after
    // the match; Duel TV judges upsets by the point before.
    for standing in &live {
        let history = db
            .store
            .reads()
            .rating_history(&standing.bot_id)
            .await
            .expect("history");
        assert_eq!(
            history.len() as i64,
            standing.games,
            "{}",
            standing.bot_name
        );
        let last = history.last().expect("played");
        assert_eq!(
            (last.rating, last.deviation),
            (standing.rating, standing.deviation)
        );
        assert!(
            history
                .windows(2)
                .all(|pair| pair[0].at_ms <= pair[1].at_ms)
        );
    }
    for game in db.store.reads().latest_settled(5).await.expect("latest") {
        for (name, rating) in game.names.iter().zip(game.ratings) {
            let bot = db.store.reads().bot(name).await.expect("bot");
            let history = db
                .store
                .reads()
                .rating_history(&bot.id)
                .await
                .expect("history");
            // A rated match is on the chart; one that repeated an earlier
            // game (seeds are drawn at random, so a pair of deterministic
            // bots may repeat) is not, and the rating before it is the last
            // point before it finished.
            let Some(at) = history.iter().position(|point| point.match_id == game.id) else {
                let (line, _) = db.store.reads().match_line(&game.id).await.expect("match");
                assert!(
                    line.not_rated.is_some(),
                    "{} is rated but not on the chart",
                    game.id
                );
                let finished_ms = line.finished_ms.expect("settled");
                let before = history.iter().rev().find(|point| point.at_ms < finished_ms);
                let expected = before.or(history.last()).map(|point| point.rating);
                assert_eq!(rating, expected, "{name} in {}", game.id);
                continue;
            };
            // Its first match of the season: the rating as it is now.
            let expected = match at.checked_sub(1) {
                Some(before) => history[before].rating,
                None => history.last().expect("played").rating,
            };
            assert_eq!(rating, Some(expected), "{name} in {}", game.id);
        }
    }
    // The wave timer of `ladder serve` refits the class from all its rated
    // games (not running here); ending the season freezes that fit.
    duel_ladder::fit::fit_season(&db.store, WeightClass::Middle)
        .await
        .expect("season fit");
    let (_, live) = ladder
        .standings(&operator, None, Some(WeightClass::Middle))
        .await
        .expect("fitted standings");
    assert_eq!(live.len(), 8);
    let ended = ladder.end_season(&operator).await.expect("end");
    assert_eq!(ended.id, season.id);
    let (_, frozen) = ladder
        .standings(&operator, Some(season.id), None)
        .await
        .expect("frozen");
    assert_eq!(frozen, live);
    ladder
        .start_season(&operator, "summer")
        .await
        .expect("next season");
    ladder
        .enqueue(&owners[0].0, "bot0", 10)
        .await
        .expect("enqueue");
    let (_, next) = ladder
        .standings(&operator, None, None)
        .await
        .expect("next standings");
    let previous = live
        .iter()
        .find(|standing| standing.bot_name == "bot0")
        .expect("bot0");
    assert!(
        (next[0].rating - (1500.0 + 0.5 * (previous.rating - 1500.0))).abs() < 1e-9,
        "soft reset"
    );
    let (_, still_frozen) = ladder
        .standings(&operator, Some(season.id), None)
        .await
        .expect("frozen");
    assert_eq!(still_frozen, live);
    let report = ladder
        .ledger_check(&operator)
        .await
        .expect("check")
        .expect("clean");
    assert_eq!(report.credits_in_circulation, 8_000);
}
both_backends!(a_season_end_to_end, season_end_to_end);

async fn refusals(db: &TestDb) {
    let ladder = ladder(db);
    let (_, operator_token) = db
        .store
        .bootstrap_operator("root")
        .await
        .expect("bootstrap")
        .expect("operator");
    let operator = ladder
        .caller(Some(&operator_token))
        .await
        .expect("operator");
    let (_, alice_token) = ladder
        .create_account(&operator, "alice", Role::Owner)
        .await
        .expect("alice");
    let (_, mallory_token) = ladder
        .create_account(&operator, "mallory", Role::Owner)
        .await
        .expect("mallory");
    let alice = ladder.caller(Some(&alice_token)).await.expect("alice");
    let mallory = ladder.caller(Some(&mallory_token)).await.expect("mallory");
    ladder
        .grant_credits(&operator, "alice", 100, "g-alice")
        .await
        .expect("grant");
    ladder.start_season(&operator, "s1").await.expect("season");
    ladder
        .register_bot(
            &alice,
            "ace",
            "light",
            Registration::Builtin("builtin:counter".into()),
        )
        .await
        .expect("register");
    for token in [None, Some(""), Some("dlt_not-a-token")] {
        let error = ladder.caller(token).await.expect_err("no caller");
        assert!(
            matches!(error, ServiceError::Ladder(LadderError::Unauthenticated(_))),
            "{error}"
        );
    }
    let denied = |result: Result<(), ServiceError>| match result {
        Err(ServiceError::Ladder(LadderError::PermissionDenied(message))) => {
            assert!(!message.contains('\n'))
        }
        other => panic!("expected a refusal, got {other:?}"),
    };
    denied(
        ladder
            .grant_credits(&mallory, "mallory", 1_000, "steal")
            .await
            .map(drop),
    );
    denied(ladder.set_rake(&mallory, 0).await);
    denied(ladder.start_season(&mallory, "mine").await.map(drop));
    denied(ladder.end_season(&mallory).await.map(drop));
    denied(
        ladder
            .run_wave(&mallory, WeightClass::Light)
            .await
            .map(drop),
    );
    denied(ladder.ledger_check(&mallory).await.map(drop));
    denied(
        ladder
            .create_account(&mallory, "sock", Role::Operator)
            .await
            .map(drop),
    );
    denied(ladder.balance(&mallory, Some("alice")).await.map(drop));
    denied(ladder.enqueue(&mallory, "ace", 10).await.map(drop));
    denied(ladder.dequeue(&mallory, "ace").await);
    denied(
        ladder
            .register_bot(
                &mallory,
                "ace",
                "light",
                Registration::Builtin("builtin:block".into()),
            )
            .await
            .map(drop),
    );
    denied(ladder.set_class_open(&mallory, "light", false).await);
    // Nothing changed.
    assert_eq!(ladder.balance(&mallory, None).await.expect("balance"), 0);
    assert_eq!(
        ladder
            .balance(&operator, Some("alice"))
            .await
            .expect("balance"),
        100
    );
    let ace = db.store.reads().bot("ace").await.expect("ace");
    assert_eq!(
        (ace.owner_id.as_str(), ace.versions.len()),
        (alice.id.as_str(), 1)
    );
    assert!(db.store.queue(None).await.expect("queue").is_empty());
    assert!(db.store.user_by_name("sock").await.is_err());
    assert_eq!(
        db.store
            .reads()
            .active_season()
            .await
            .expect("season")
            .expect("s1")
            .name,
        "s1"
    );
    // Untrusted endpoint addresses are refused in ranked play.
    let error = ladder
        .register_bot(
            &alice,
            "local",
            "light",
            Registration::Endpoint("grpc://127.0.0.1:9".into()),
        )
        .await
        .expect_err("loopback");
    assert!(matches!(error, ServiceError::BotRejected(_)), "{error}");
    let error = ladder
        .register_bot(
            &alice,
            "core",
            "light",
            Registration::Wasm(vec![0, 0x61, 0x73, 0x6d, 1, 0, 0, 0]),
        )
        .await
        .expect_err("core module");
    assert!(matches!(error, ServiceError::BotRejected(_)), "{error}");
}
both_backends!(permission_refusals_change_nothing, refusals);
