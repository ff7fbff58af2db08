//! Continuous play on both backends, through the permission layer: seasons after
//! their end (standings by name or id, the last ended season's frozen table
//! served when none runs, the house's balance for operators), continuous
//! ranked play (active bots re-queued by the waves match after match, paused
//! when their owner runs dry, deactivated, ended with the season; a clean
//! ledger) and the operator's status.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use common::TestDb;
use duel_ladder::auth::{Role, User};
use duel_ladder::ladder::{Ladder, Registration};
use duel_ladder::model::{MatchState, Play};
use duel_ladder::store::{PairSide, SeasonChoice};
use duel_ladder::worker::{BuiltinFactory, Worked, WorkerConfig, work_once};
use duel_ladder::{LadderError, ServiceError};
use duel_rules::WeightClass;

struct Setup {
    ladder: Ladder,
    operator: User,
    config: WorkerConfig,
    _replays: tempfile::TempDir,
}

async fn setup(db: &TestDb) -> Setup {
    let ladder = Ladder::new(db.store.clone(), common::host(), false);
    let (_, token) = db
        .store
        .bootstrap_operator("root")
        .await
        .expect("bootstrap")
        .expect("first operator");
    let operator = ladder.caller(Some(&token)).await.expect("operator");
    let replays = tempfile::tempdir().expect("replays");
    let store = duel_replays::store::ReplayStore::open(&replays.path().display().to_string())
        .expect("replay store");
    let key = Arc::new(duel_replays::SigningKey::from_bytes(&[5; 32]));
    Setup {
        ladder,
        operator,
        config: WorkerConfig::new(common::host(), store, key),
        _replays: replays,
    }
}

/// An owner with `credits` and one light built-in bot named `bot`.
async fn owner_with_bot(setup: &Setup, name: &str, credits: i64, bot: &str, spec: &str) -> User {
    let Setup {
        ladder, operator, ..
    } = setup;
    let (_, token) = ladder
        .create_account(operator, name, Role::Owner)
        .await
        .expect("owner");
    if credits > 0 {
        ladder
            .grant_credits(operator, name, credits, &format!("grant:{name}"))
            .await
            .expect("grant");
    }
    let owner = ladder.caller(Some(&token)).await.expect("owner token");
    ladder
        .register_bot(&owner, bot, "light", Registration::Builtin(spec.to_owned()))
        .await
        .expect("register");
    owner
}

/// Plays every match waiting; returns how many settled.
async fn work_all(db: &TestDb, config: &WorkerConfig) -> usize {
    let mut settled = 0;
    loop {
        match work_once(&db.store, &BuiltinFactory, config)
            .await
            .expect("work")
        {
            Worked::Idle => return settled,
            Worked::Settled(_) => settled += 1,
            other => panic!("unexpected {other:?}"),
        }
    }
}

fn ledger_clean(
    report: Result<duel_ladder::ledger::LedgerReport, duel_ladder::ledger::LedgerViolation>,
) {
    if let Err(violation) = report {
        panic!("ledger check: {violation}");
    }
}

async fn seasons_after_their_end(db: &TestDb) {
    let setup = setup(db).await;
    let Setup {
        ladder, operator, ..
    } = &setup;
    // Never a season: NOT_FOUND.
    let never = ladder
        .standings_of(operator, &SeasonChoice::Current, None)
        .await
        .expect_err("no season yet");
    assert!(
        matches!(never, ServiceError::Ladder(LadderError::NotFound(_))),
        "{never:?}"
    );
    assert!(matches!(
        ladder.start_season(operator, "2026").await,
        Err(ServiceError::Ladder(LadderError::Invalid(_)))
    ));
    ladder
        .start_season(operator, "autumn")
        .await
        .expect("start");
    let alice = owner_with_bot(&setup, "alice", 1_000, "a-counter", "builtin:counter").await;
    let bob = owner_with_bot(&setup, "bob", 1_000, "b-block", "builtin:block").await;
    ladder
        .enqueue(&alice, "a-counter", 40)
        .await
        .expect("enqueue");
    ladder.enqueue(&bob, "b-block", 40).await.expect("enqueue");
    let wave = ladder
        .run_wave(operator, WeightClass::Light)
        .await
        .expect("wave");
    assert_eq!(wave.matches.len(), 1);
    assert_eq!(work_all(db, &setup.config).await, 1);
    // Ending a season refits the class from all its rated games (serve's
    // wave timer does it after each wave; not running here): fit first, so
    // the live table is the one the end freezes.
    duel_ladder::fit::fit_season(&db.store, WeightClass::Light)
        .await
        .expect("season fit");
    let (_, live) = ladder
        .standings_of(operator, &SeasonChoice::Current, None)
        .await
        .expect("live");
    let autumn = ladder.end_season(operator).await.expect("end");
    // No season runs: the one that ended last, frozen, by default, by name
    // and by id.
    for choice in [
        SeasonChoice::Current,
        SeasonChoice::parse("autumn"),
        SeasonChoice::parse(&autumn.id.to_string()),
    ] {
        let (season, frozen) = ladder
            .standings_of(&alice, &choice, Some(WeightClass::Light))
            .await
            .expect("frozen standings");
        assert_eq!(season.name, "autumn", "{choice:?}");
        assert!(season.ended_ms.is_some());
        assert_eq!(frozen, live, "{choice:?}");
    }
    assert!(matches!(
        ladder
            .standings_of(&alice, &SeasonChoice::parse("spring"), None)
            .await,
        Err(ServiceError::Ladder(LadderError::NotFound(_)))
    ));
    // A second season ends too: the default is the latest one.
    ladder
        .start_season(operator, "winter")
        .await
        .expect("start");
    ladder.end_season(operator).await.expect("end");
    let (season, standings) = ladder
        .standings(&bob, None, None)
        .await
        .expect("latest ended");
    assert_eq!(season.name, "winter");
    assert!(standings.is_empty());
    // The house's balance: the rake of the one decided match (5% of 80), or
    // nothing after a draw.
    let game = &ladder
        .matches(operator, Some(MatchState::Settled), None)
        .await
        .expect("matches")[0];
    let expected_rake = match game.winner {
        Some(duel_ladder::model::Winner::Draw) => 0,
        _ => 4,
    };
    assert_eq!(
        ladder
            .balance(operator, Some("house"))
            .await
            .expect("house"),
        expected_rake
    );
    let refused = ladder.balance(&alice, Some("house")).await;
    assert!(
        matches!(
            refused,
            Err(ServiceError::Ladder(LadderError::PermissionDenied(_)))
        ),
        "{refused:?}"
    );
    assert!(matches!(
        ladder.create_account(operator, "house", Role::Owner).await,
        Err(ServiceError::Ladder(LadderError::Invalid(_)))
    ));
    ledger_clean(ladder.ledger_check(operator).await.expect("check"));
}
both_backends!(seasons_after_their_end_test, seasons_after_their_end);

async fn continuous_play(db: &TestDb) {
    let setup = setup(db).await;
    let Setup {
        ladder, operator, ..
    } = &setup;
    let status = ladder.status(operator).await.expect("status");
    assert!(status.season.is_none() && status.last_ended.is_none());
    ladder
        .start_season(operator, "autumn")
        .await
        .expect("start");
    let specs = ["builtin:counter", "builtin:block", "builtin:random"];
    let mut owners = Vec::new();
    for (index, spec) in specs.into_iter().enumerate() {
        let name = format!("bot{index}");
        let owner = owner_with_bot(&setup, &format!("owner{index}"), 1_000, &name, spec).await;
        let bot = ladder.activate(&owner, &name, 10).await.expect("activate");
        assert!(
            matches!(bot.play, Play::Active { stake: 10, .. }),
            "{:?}",
            bot.play
        );
        owners.push((owner, name));
    }
    // Refusals: someone else's bot, an operator, a one-shot enqueue of an
    // active bot.
    let refused = ladder.activate(&owners[0].0, "bot1", 10).await;
    assert!(
        matches!(
            refused,
            Err(ServiceError::Ladder(LadderError::PermissionDenied(_)))
        ),
        "{refused:?}"
    );
    assert!(matches!(
        ladder.activate(operator, "bot1", 10).await,
        Err(ServiceError::Ladder(LadderError::PermissionDenied(_)))
    ));
    assert!(matches!(
        ladder.enqueue(&owners[0].0, "bot0", 10).await,
        Err(ServiceError::Ladder(LadderError::Conflict(_)))
    ));
    // Waves re-queue the active bots match after match; nobody enqueues.
    // (A wave may pair nobody while a rating gap is wider than the bots'
    // windows; the windows widen wave by wave.)
    let mut settled = 0;
    let mut played: BTreeMap<String, usize> = BTreeMap::new();
    let mut opponents: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for _ in 0..60 {
        let wave = ladder
            .run_wave(operator, WeightClass::Light)
            .await
            .expect("wave");
        assert!(wave.matches.len() <= 1, "three bots make one pair a wave");
        assert!(
            db.store.queue(None).await.expect("queue").is_empty(),
            "active bots never enter the one-shot queue"
        );
        // A bot in an open match is not in the next wave's pool.
        if !wave.matches.is_empty() {
            let again = ladder
                .run_wave(operator, WeightClass::Light)
                .await
                .expect("wave");
            assert!(again.matches.is_empty(), "{again:?}");
            assert_eq!(again.waiting, 1);
        }
        settled += work_all(db, &setup.config).await;
        played.clear();
        opponents.clear();
        for game in ladder
            .matches(operator, Some(MatchState::Settled), None)
            .await
            .expect("matches")
        {
            let [a, b] = &game.sides;
            assert_eq!((a.stake, b.stake), (10, 10));
            for (me, them) in [(a, b), (b, a)] {
                *played.entry(me.bot_name.clone()).or_default() += 1;
                opponents
                    .entry(me.bot_name.clone())
                    .or_default()
                    .insert(them.bot_name.clone());
            }
        }
        if owners
            .iter()
            .all(|(_, bot)| played.get(bot).copied().unwrap_or(0) >= 3)
        {
            break;
        }
    }
    for (_, bot) in &owners {
        let games = played.get(bot).copied().unwrap_or(0);
        assert!(games >= 3, "{bot} played {games}: {played:?}");
        assert_eq!(opponents[bot].len(), 2, "{bot}: {opponents:?}");
    }
    ledger_clean(ladder.ledger_check(operator).await.expect("check"));
    let status = ladder.status(operator).await.expect("status");
    let light = &status.classes[0];
    assert_eq!(light.class, WeightClass::Light);
    assert_eq!((light.bots, light.active, light.paused), (3, 3, 0));
    assert_eq!(
        (light.settled, light.accepted, light.running),
        (i64::try_from(settled).expect("count"), 0, 0)
    );
    // The last wave ran right after a pairing: the one bot left waited alone.
    let wave = light.last_wave.as_ref().expect("a wave ran");
    assert_eq!((wave.pool, wave.pairs), (1, 0));
    assert!(matches!(
        ladder.status(&owners[0].0).await,
        Err(ServiceError::Ladder(LadderError::PermissionDenied(_)))
    ));

    // An owner who runs dry: 30 credits, active at 25; a one-shot match of
    // its other bot escrows 20, so 10 are left when the next wave comes.
    let dry = owner_with_bot(&setup, "dry", 30, "dry-active", "builtin:counter").await;
    ladder
        .register_bot(
            &dry,
            "dry-other",
            "light",
            Registration::Builtin("builtin:block".into()),
        )
        .await
        .expect("register");
    ladder
        .activate(&dry, "dry-active", 25)
        .await
        .expect("activate");
    let bot0 = ladder.bot(&owners[0].0, "bot0").await.expect("bot0");
    let other = ladder.bot(&dry, "dry-other").await.expect("dry-other");
    ladder
        .deactivate(&owners[0].0, "bot0")
        .await
        .expect("deactivate bot0");
    duel_ladder::wave::accept_pair(
        &db.store,
        [
            PairSide {
                bot_id: other.id.clone(),
                stake: 20,
            },
            PairSide {
                bot_id: bot0.id.clone(),
                stake: 20,
            },
        ],
    )
    .await
    .expect("one-shot match");
    assert_eq!(ladder.balance(&dry, None).await.expect("balance"), 10);
    let wave = ladder
        .run_wave(operator, WeightClass::Light)
        .await
        .expect("wave");
    assert_eq!(
        wave.paused,
        vec![ladder.bot(&dry, "dry-active").await.expect("bot").id]
    );
    let shown = ladder.bot(&dry, "dry-active").await.expect("show");
    assert_eq!(
        shown.play,
        Play::Paused {
            stake: 25,
            since_ms: match shown.play {
                Play::Paused { since_ms, .. } => since_ms,
                _ => 0,
            },
            reason: "balance 10 is below the stake 25".to_owned(),
        }
    );
    work_all(db, &setup.config).await;
    let status = ladder.status(operator).await.expect("status");
    assert_eq!((status.classes[0].active, status.classes[0].paused), (2, 1));

    // Deactivated: it plays no more. bot0 was deactivated above; bot1 and
    // bot2 keep playing each other (their rematch waits one wave).
    let before = ladder
        .matches(operator, None, Some("bot0"))
        .await
        .expect("matches")
        .len();
    for _ in 0..4 {
        ladder
            .run_wave(operator, WeightClass::Light)
            .await
            .expect("wave");
        work_all(db, &setup.config).await;
    }
    let after = ladder
        .matches(operator, None, Some("bot0"))
        .await
        .expect("matches")
        .len();
    assert_eq!(before, after, "a deactivated bot is not paired");
    assert!(matches!(
        ladder.deactivate(&owners[0].0, "bot0").await,
        Err(ServiceError::Ladder(LadderError::NotFound(_)))
    ));

    // The season's end deactivates every bot, paused ones too.
    ladder.end_season(operator).await.expect("end");
    for (owner, bot) in owners.iter().skip(1) {
        assert_eq!(
            ladder.bot(owner, bot).await.expect("bot").play,
            Play::Inactive
        );
    }
    assert_eq!(
        ladder.bot(&dry, "dry-active").await.expect("bot").play,
        Play::Inactive
    );
    ladder
        .start_season(operator, "winter")
        .await
        .expect("start");
    let wave = ladder
        .run_wave(operator, WeightClass::Light)
        .await
        .expect("wave");
    assert_eq!((wave.waiting, wave.matches.len()), (0, 0));
    let status = ladder.status(operator).await.expect("status");
    assert_eq!(
        status.season.as_ref().map(|s| s.name.as_str()),
        Some("winter")
    );
    assert_eq!(
        status.last_ended.as_ref().map(|s| s.name.as_str()),
        Some("autumn")
    );
    assert_eq!((status.classes[0].active, status.classes[0].paused), (0, 0));
    ledger_clean(ladder.ledger_check(operator).await.expect("check"));
}
both_backends!(continuous_play_test, continuous_play);

/// The operator's match interval: an active bot rests that long after its
/// last match settled.
async fn match_interval(db: &TestDb) {
    let setup = setup(db).await;
    let Setup {
        ladder, operator, ..
    } = &setup;
    ladder
        .start_season(operator, "autumn")
        .await
        .expect("start");
    for (index, spec) in ["builtin:counter", "builtin:block"].into_iter().enumerate() {
        let name = format!("bot{index}");
        let owner = owner_with_bot(&setup, &format!("owner{index}"), 1_000, &name, spec).await;
        ladder.activate(&owner, &name, 5).await.expect("activate");
    }
    // A third bot so the pair is no immediate rematch.
    let third = owner_with_bot(&setup, "owner2", 1_000, "bot2", "builtin:random").await;
    ladder.activate(&third, "bot2", 5).await.expect("activate");
    // Activation made them ready at once; an hour's interval still keeps
    // them out right after.
    let rested = duel_ladder::wave::run_wave_paced(&db.store, WeightClass::Light, 3_600_000)
        .await
        .expect("wave");
    assert_eq!(rested.waiting, 0);
    let now = duel_ladder::wave::run_wave_paced(&db.store, WeightClass::Light, 0)
        .await
        .expect("wave");
    assert_eq!((now.waiting, now.matches.len()), (3, 1));
    assert_eq!(work_all(db, &setup.config).await, 1);
    // The two that played rest an hour; the third has waited since its
    // activation, also less than an hour ago.
    let rested = duel_ladder::wave::run_wave_paced(&db.store, WeightClass::Light, 3_600_000)
        .await
        .expect("wave");
    assert_eq!(rested.waiting, 0);
    let again = duel_ladder::wave::run_wave_paced(&db.store, WeightClass::Light, 0)
        .await
        .expect("wave");
    assert_eq!(again.waiting, 3);
    ledger_clean(ladder.ledger_check(operator).await.expect("check"));
}
both_backends!(match_interval_test, match_interval);

/// One game as a replay shows it: both bot versions (`id:version`, the
/// smaller id first) and every exchange's actions, oriented the same way.
type GameKey = (String, String, Vec<[String; 2]>);

/// The pairing property with deterministic bots: the waves spread
/// the meetings over every pair that may meet, no game is rated twice in a
/// season, and no pair more than its rated games. The replays themselves are the evidence: two matches whose replays
/// show the same versions playing the same actions are never both rated.
async fn deterministic_bots_rate_each_game_once(db: &TestDb) {
    let setup = setup(db).await;
    // Without ranked openings (`ladder serve --ranked-openings 0`), so that
    // the pairs play the same games again, which is what is under test.
    db.store
        .set_setting(duel_ladder::limits::OPENING_EXCHANGES_SETTING, 0)
        .await
        .expect("no openings");
    let Setup {
        ladder, operator, ..
    } = &setup;
    ladder
        .start_season(operator, "winter")
        .await
        .expect("start");
    let specs = [
        "builtin:counter",
        "builtin:block",
        "builtin:script:JAB,HEAVY,BLOCK",
        "builtin:script:FEINT,JAB,RECOVER",
    ];
    for (index, spec) in specs.into_iter().enumerate() {
        let name = format!("det{index}");
        let owner = owner_with_bot(&setup, &format!("det-owner{index}"), 10_000, &name, spec).await;
        ladder.activate(&owner, &name, 1).await.expect("activate");
    }
    let mut settled = 0;
    for _ in 0..400 {
        ladder
            .run_wave(operator, WeightClass::Light)
            .await
            .expect("wave");
        settled += work_all(db, &setup.config).await;
        if settled >= 36 {
            break;
        }
    }
    assert!(settled >= 36, "only {settled} matches settled");
    let games = ladder
        .matches(operator, Some(MatchState::Settled), None)
        .await
        .expect("matches");
    // Per unordered pair of bot versions and the actions played (oriented by
    // bot id): the matches, and how many of them were rated.
    let mut by_game: BTreeMap<GameKey, (usize, usize)> = BTreeMap::new();
    let mut per_pair: BTreeMap<(String, String), usize> = BTreeMap::new();
    for game in &games {
        let json = setup
            .config
            .replays
            .get_json(&game.id)
            .await
            .expect("replay store")
            .expect("a settled match has a replay");
        let replay = duel_replays::Replay::from_slice(&json).expect("replay");
        let [a, b] = &game.sides;
        let swapped = a.bot_id > b.bot_id;
        let actions: Vec<[String; 2]> = replay
            .rounds
            .iter()
            .flat_map(|round| &round.exchanges)
            .map(|exchange| {
                let pair = [
                    format!("{:?}", exchange.a.action),
                    format!("{:?}", exchange.b.action),
                ];
                if swapped {
                    [pair[1].clone(), pair[0].clone()]
                } else {
                    pair
                }
            })
            .collect();
        let (low, high) = if swapped { (b, a) } else { (a, b) };
        let key = (
            format!("{}:{}", low.bot_id, low.version),
            format!("{}:{}", high.bot_id, high.version),
            actions,
        );
        let entry = by_game.entry(key).or_default();
        entry.0 += 1;
        if game.not_rated.is_none() {
            entry.1 += 1;
        }
        // A repeat names a rated match of the same game.
        if let Some(earlier) = &game.repeat_of {
            assert_eq!(game.not_rated.as_deref(), Some("repeat"));
            assert!(
                games
                    .iter()
                    .any(|other| &other.id == earlier && other.not_rated.is_none())
            );
        }
        *per_pair
            .entry((low.bot_name.clone(), high.bot_name.clone()))
            .or_default() += 1;
    }
    // Each game at most once, and each pair that met rated at least once
    // (its first game is never a repeat).
    let mut rated_per_pair: BTreeMap<(String, String), usize> = BTreeMap::new();
    for ((low, high, _), (played, rated)) in &by_game {
        assert!(
            *rated <= 1,
            "{low} vs {high}: one game played {played} times, rated {rated} times"
        );
        *rated_per_pair
            .entry((low.clone(), high.clone()))
            .or_default() += rated;
    }
    assert!(
        rated_per_pair.values().all(|rated| *rated >= 1),
        "{rated_per_pair:?}"
    );
    assert!(
        by_game.values().any(|(played, _)| *played > 1),
        "deterministic bots repeated no game in {settled} matches: the test proves nothing"
    );
    // Six pairs may meet; none takes more than 3× its share.
    assert_eq!(per_pair.len(), 6, "{per_pair:?}");
    let mean = games.len() as f64 / 6.0;
    let most = per_pair.values().copied().max().unwrap_or(0) as f64;
    assert!(most <= 3.0 * mean, "{per_pair:?}");
    // Ratings count rated games only.
    let standings = db
        .store
        .standings(None, Some(WeightClass::Light))
        .await
        .expect("standings")
        .1;
    let rated_games: i64 = standings.iter().map(|standing| standing.games).sum();
    let rated_matches = by_game
        .values()
        .map(|(_, rated)| *rated as i64)
        .sum::<i64>();
    assert_eq!(rated_games, 2 * rated_matches);
    ledger_clean(ladder.ledger_check(operator).await.expect("check"));
}
both_backends!(
    deterministic_bots_test,
    deterministic_bots_rate_each_game_once
);
