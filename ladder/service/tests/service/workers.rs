//! Workers against real databases: a worker killed mid-match (its lease expires,
//! the match is re-run, exactly one settlement), two workers racing for one
//! match (one wins), a match with a bot the worker cannot run (voided, stakes
//! returned), the third claim of a match that never settled voiding it, and
//! runs that fail (a replay store refusing writes) naming their cause on the
//! match and in the void's note.
//! Lease time is a `ManualClock` the test moves: no test sleeps for a lease.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use common::TestDb;
use duel_ladder::clock::ManualClock;
use duel_ladder::model::{BotKind, BotSource, BotVersion, MatchState, Winner};
use duel_ladder::store::PairSide;
use duel_ladder::worker::{
    BotFactory, BuiltinFactory, FighterFuture, Worked, WorkerConfig, work_once,
};
use duel_referee::bot::DecisionFuture;
use duel_referee::builtin::BuiltinBot;
use duel_referee::{Bot, BotContext, BotMaker, BuiltinSpec, Fighter, FighterSource};
use duel_replays::store::ReplayStore;
use duel_replays::{FighterInfo, Replay, SigningKey};
use duel_rules::Observation;

/// A built-in bot that takes `delay` per decision, so a match lasts long enough
/// to kill its worker in the middle.
struct Slow {
    inner: BuiltinBot,
    delay: Duration,
    decisions: Arc<AtomicU64>,
}

impl Bot for Slow {
    fn info(&self) -> FighterInfo {
        self.inner.info()
    }

    fn decide<'a>(&'a mut self, observation: Observation<'a>) -> DecisionFuture<'a> {
        Box::pin(async move {
            tokio::time::sleep(self.delay).await;
            self.decisions.fetch_add(1, Ordering::Relaxed);
            self.inner.decide(observation).await
        })
    }

    fn abandoned(&mut self) -> duel_referee::Spent {
        duel_referee::Spent::default()
    }
}

#[derive(Debug)]
struct SlowFactory {
    delay: Duration,
    decisions: Arc<AtomicU64>,
}

impl std::fmt::Debug for Slow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Slow")
    }
}

impl BotFactory for SlowFactory {
    fn fighter<'a>(&'a self, _version: &'a BotVersion) -> FighterFuture<'a> {
        let (delay, decisions) = (self.delay, Arc::clone(&self.decisions));
        let make: BotMaker = Arc::new(move |context: &BotContext| {
            Box::new(Slow {
                inner: BuiltinBot::new(BuiltinSpec::Random, context.seed, context.side),
                delay,
                decisions: Arc::clone(&decisions),
            }) as Box<dyn Bot>
        });
        Box::pin(async move { Ok(Fighter::new(FighterSource::Made(make))) })
    }
}

/// A worker configuration publishing into a fresh folder.
fn worker_config(dir: &tempfile::TempDir) -> WorkerConfig {
    let replays = ReplayStore::open(&dir.path().display().to_string()).expect("replay store");
    WorkerConfig::new(
        common::host(),
        replays,
        Arc::new(SigningKey::from_bytes(&[5; 32])),
    )
}

fn builtin(spec: &str) -> BotSource {
    BotSource::builtin(spec.to_owned())
}

async fn one_match(db: &TestDb, source_b: BotSource) -> String {
    db.store.start_season("s1").await.expect("season");
    let (alice, _) = db.owner("alice", 1_000).await;
    let (bob, _) = db.owner("bob", 1_000).await;
    let a = db
        .store
        .register_bot(&alice, "alpha", "light", &builtin("builtin:random"))
        .await
        .expect("a");
    let b = db
        .store
        .register_bot(&bob, "bravo", "light", &source_b)
        .await
        .expect("b");
    duel_ladder::wave::accept_pair(
        &db.store,
        [
            PairSide {
                bot_id: a.id,
                stake: 100,
            },
            PairSide {
                bot_id: b.id,
                stake: 100,
            },
        ],
    )
    .await
    .expect("accept")
    .id
}

async fn killed_worker_is_rerun_once(db: &TestDb) {
    let match_id = one_match(db, builtin("builtin:counter")).await;
    let clock = ManualClock::new(duel_ladder::store::now_ms());
    let store = db.store.clone().with_clock(Arc::new(clock.clone()));
    let replays = tempfile::tempdir().expect("replays dir");
    let mut config = worker_config(&replays);
    config.lease_ms = 400;
    config.heartbeat_ms = 100;
    let decisions = Arc::new(AtomicU64::new(0));
    let slow: Arc<dyn BotFactory> = Arc::new(SlowFactory {
        delay: Duration::from_millis(40),
        decisions: Arc::clone(&decisions),
    });
    let doomed = {
        let (store, slow, config) = (store.clone(), Arc::clone(&slow), config.clone());
        tokio::spawn(async move { work_once(&store, &*slow, &config).await })
    };
    // Kill the worker mid-match, well after its first heartbeat.
    while decisions.load(Ordering::Relaxed) < 10 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    doomed.abort();
    assert!(doomed.await.expect_err("killed").is_cancelled());
    // The worker that re-runs it holds a long lease: its replay must be
    // published within half its lease in real time, which the doomed worker's
    // 400 ms (kept short for the manual clock) does not leave on a loaded
    // machine.
    let mut rerun = config.clone();
    rerun.lease_ms = 20_000;
    rerun.heartbeat_ms = 1_000;
    assert_eq!(
        db.store.reads().game(&match_id).await.expect("match").state,
        MatchState::Running
    );
    assert_eq!(
        work_once(&store, &BuiltinFactory, &config)
            .await
            .expect("too early"),
        Worked::Idle,
        "the dead worker's lease still holds"
    );
    clock.advance(config.lease_ms - 1);
    assert_eq!(
        work_once(&store, &BuiltinFactory, &config)
            .await
            .expect("still too early"),
        Worked::Idle,
        "the lease holds until it expires"
    );
    clock.advance(2);
    let worked = work_once(&store, &BuiltinFactory, &rerun)
        .await
        .expect("re-run");
    let Worked::Settled(settlement) = worked else {
        panic!("expected a settlement, got {worked:?}");
    };
    assert_eq!(settlement.match_id, match_id);
    let game = db.store.reads().game(&match_id).await.expect("match");
    assert_eq!((game.state, game.attempts), (MatchState::Settled, 2));
    let json = config
        .replays
        .get_json(&match_id)
        .await
        .expect("read the store")
        .expect("replay published");
    let replay = Replay::from_slice(&json).expect("replay parses");
    assert_eq!(replay.match_id, match_id);
    assert_eq!(replay.season.as_deref(), Some("s1"));
    // A ranked match opens with the exchanges pinned at acceptance, drawn
    // from its seed: the run after a lost lease plays that same opening, and
    // the replay records it and verifies with it.
    assert_eq!(
        game.opening_exchanges,
        duel_ladder::limits::RANKED_OPENING_EXCHANGES
    );
    let seed = u64::try_from(game.seed).expect("seed");
    let length = usize::try_from(game.opening_exchanges).expect("length");
    let opening =
        duel_referee::opening::Opening::random(duel_rules::Ruleset::CURRENT, seed, length);
    let recorded: Vec<[duel_rules::Action; 2]> = replay
        .opening
        .iter()
        .map(|[a, b]| [(*a).into(), (*b).into()])
        .collect();
    assert_eq!(recorded.len(), length, "{:?}", replay.opening);
    assert_eq!(recorded, opening.exchanges());
    let verified = duel_replays::verify(&replay).expect("verifies");
    assert!(verified.is_ok(), "{verified:?}");
    assert_eq!(
        game.replay_path.as_deref(),
        Some(config.replays.location(&match_id).as_str())
    );
    let signature = duel_replays::check_signature(&json, Some(&config.signing_key.verifying_key()))
        .expect("parses");
    assert!(signature.is_ok(), "{signature:?}");
    assert_eq!(
        work_once(&db.store, &BuiltinFactory, &config)
            .await
            .expect("idle"),
        Worked::Idle
    );
    let report = db
        .store
        .ledger_check()
        .await
        .expect("check")
        .expect("clean after a crash");
    assert_eq!(report.pending_unresolved, 0);
}
both_backends!(worker_killed_mid_match, killed_worker_is_rerun_once);

/// A run that published its replay and then lost its lease before settling:
/// the re-run's replay would replace a published one, which is refused, so it
/// settles with the published replay's result instead, exactly once, and the
/// published bytes stay as they were.
async fn published_replay_is_settled_by_the_rerun(db: &TestDb) {
    let match_id = one_match(db, builtin("builtin:block")).await;
    let replays = tempfile::tempdir().expect("replays dir");
    let config = worker_config(&replays);
    // What the earlier run published: this match, played its own way (a draw
    // or not, whatever this seed gives), signed with the ladder's key.
    let mut earlier = duel_referee::run_bare_match(
        duel_referee::MatchConfig::new(
            match_id.clone(),
            "2026-05-01T20:00:00Z".to_owned(),
            duel_rules::WeightClass::Light,
            99,
        ),
        [
            &duel_referee::builtin::BuiltinFighter::new(BuiltinSpec::Counter),
            &duel_referee::builtin::BuiltinFighter::new(BuiltinSpec::Block),
        ],
    );
    earlier.season = Some("s1".to_owned());
    duel_replays::sign(&mut earlier, &config.signing_key).expect("signs");
    config.replays.put(&earlier).await.expect("published");
    let published = config
        .replays
        .get_json(&match_id)
        .await
        .expect("read")
        .expect("there");

    let worked = work_once(&db.store, &BuiltinFactory, &config)
        .await
        .expect("settles");
    let Worked::Settled(settlement) = worked else {
        panic!("expected a settlement, got {worked:?}");
    };
    let expected = match earlier.result.winner {
        duel_replays::WinnerName::A => duel_ladder::model::Winner::A,
        duel_replays::WinnerName::B => duel_ladder::model::Winner::B,
        duel_replays::WinnerName::Draw => duel_ladder::model::Winner::Draw,
    };
    assert_eq!(settlement.winner, expected);
    let game = db.store.reads().game(&match_id).await.expect("match");
    assert_eq!(game.state, MatchState::Settled);
    assert_eq!(
        config
            .replays
            .get_json(&match_id)
            .await
            .expect("read")
            .expect("there"),
        published,
        "the published replay is never replaced"
    );
    db.store
        .ledger_check()
        .await
        .expect("ledger")
        .expect("the ledger is clean");
}

both_backends!(
    a_published_replay_is_settled_by_the_rerun,
    published_replay_is_settled_by_the_rerun
);

async fn two_workers_race(db: &TestDb) {
    let match_id = one_match(db, builtin("builtin:block")).await;
    let now = duel_ladder::store::now_ms();
    let (first, second) = tokio::join!(db.store.claim(10_000, now), db.store.claim(10_000, now));
    let claims: Vec<_> = [first.expect("claim"), second.expect("claim")]
        .into_iter()
        .flatten()
        .collect();
    assert_eq!(claims.len(), 1, "exactly one worker wins the match");
    assert_eq!(claims[0].game.id, match_id);
}
both_backends!(two_workers_race_for_one_match, two_workers_race);

async fn unrunnable_bot_is_voided(db: &TestDb) {
    let endpoint = BotSource {
        kind: BotKind::Endpoint,
        digest: duel_referee::spec::sha256_digest(b"grpc://bots.example.com:443"),
        spec: "grpc://bots.example.com:443".to_owned(),
        wasm: None,
    };
    let match_id = one_match(db, endpoint).await;
    let replays = tempfile::tempdir().expect("replays dir");
    let worked = work_once(&db.store, &BuiltinFactory, &worker_config(&replays))
        .await
        .expect("work");
    assert!(
        matches!(worked, Worked::Voided { match_id: ref id, .. } if *id == match_id),
        "{worked:?}"
    );
    let game = db.store.reads().game(&match_id).await.expect("match");
    assert_eq!(game.state, MatchState::Voided);
    let owner = db.store.user_by_name("alice").await.expect("alice");
    assert_eq!(
        db.store.available(&owner.id).await.expect("balance"),
        1_000,
        "stake returned"
    );
    db.store
        .ledger_check()
        .await
        .expect("check")
        .expect("clean");
}
both_backends!(unrunnable_match_is_voided, unrunnable_bot_is_voided);

async fn third_claim_voids(db: &TestDb) {
    let match_id = one_match(db, builtin("builtin:block")).await;
    let lease_ms = 1_000;
    let mut now = 5_000;
    for run in 1..=2 {
        let claim = db
            .store
            .claim(lease_ms, now)
            .await
            .expect("claim")
            .expect("the match is run again");
        assert_eq!(
            (claim.game.id.as_str(), claim.game.attempts),
            (match_id.as_str(), run)
        );
        // The worker dies: its lease runs out.
        now += lease_ms + 1;
    }
    assert!(
        db.store
            .claim(lease_ms, now)
            .await
            .expect("claim")
            .is_none(),
        "the third claim voids instead of running"
    );
    let game = db.store.reads().game(&match_id).await.expect("match");
    assert_eq!((game.state, game.attempts), (MatchState::Voided, 2));
    assert_eq!(
        game.note.as_deref(),
        Some("voided at claim 3 after 2 runs without a result")
    );
    let owner = db.store.user_by_name("alice").await.expect("alice");
    assert_eq!(
        db.store.available(&owner.id).await.expect("balance"),
        1_000,
        "stake returned"
    );
    db.store
        .ledger_check()
        .await
        .expect("check")
        .expect("clean");
}
both_backends!(
    third_claim_of_an_unsettled_match_voids_it,
    third_claim_voids
);

/// A replay store that refuses every write: its temporary folder, where each
/// replay is written before it is linked into place, replaced by a file (a
/// read-only folder would not stop a test run as root).
fn refuse_writes(replays: &tempfile::TempDir) {
    let temporary = replays.path().join(".tmp");
    std::fs::remove_dir_all(&temporary).expect("the store's temporary folder");
    std::fs::write(&temporary, b"not a folder").expect("a file in its place");
}

/// Each run that fails names its cause on the match (one public line, no
/// server path), and the void after the last run names the last cause:
/// before, the note said only "voided at claim 3 after 2 runs without a
/// result" and the cause was in the operator's log alone.
async fn failed_runs_name_their_cause(db: &TestDb) {
    let match_id = one_match(db, builtin("builtin:block")).await;
    let clock = ManualClock::new(duel_ladder::store::now_ms());
    let store = db.store.clone().with_clock(Arc::new(clock.clone()));
    let replays = tempfile::tempdir().expect("replays dir");
    let config = worker_config(&replays);
    refuse_writes(&replays);
    let server_path = replays.path().display().to_string();
    for run in 1..=2 {
        let error = work_once(&store, &BuiltinFactory, &config)
            .await
            .expect_err("the replay cannot be published");
        assert!(error.to_string().contains("Not a directory"), "{error}");
        let game = db.store.reads().game(&match_id).await.expect("match");
        assert_eq!((game.state, game.attempts), (MatchState::Running, run));
        let cause = game.last_failure.expect("the cause is recorded");
        assert!(
            cause.starts_with("publishing the replay failed: ")
                && cause.contains("Not a directory"),
            "{cause}"
        );
        assert!(
            !cause.contains(&server_path) && !cause.contains('/'),
            "{cause}"
        );
        assert!(cause.chars().count() <= duel_ladder::limits::MAX_RUN_FAILURE_CHARS);
        assert_eq!(game.note, None, "not voided yet");
        clock.advance(config.lease_ms + 1);
    }
    assert_eq!(
        work_once(&store, &BuiltinFactory, &config)
            .await
            .expect("the third claim voids"),
        Worked::Idle
    );
    let game = db.store.reads().game(&match_id).await.expect("match");
    assert_eq!((game.state, game.attempts), (MatchState::Voided, 2));
    let note = game.note.expect("a void has a note");
    let cause = game.last_failure.expect("the last cause stays");
    assert_eq!(
        note,
        format!("voided at claim 3 after 2 runs without a result; the last run failed: {cause}")
    );
    let owner = db.store.user_by_name("bob").await.expect("bob");
    assert_eq!(
        db.store.available(&owner.id).await.expect("balance"),
        1_000,
        "stake returned"
    );
    db.store
        .ledger_check()
        .await
        .expect("check")
        .expect("clean");
}
both_backends!(
    failed_runs_name_their_cause_and_the_void_the_last,
    failed_runs_name_their_cause
);

/// Only the lease holder records a cause.
async fn only_the_lease_holder_records_a_cause(db: &TestDb) {
    let match_id = one_match(db, builtin("builtin:block")).await;
    let claim = db
        .store
        .claim(1_000, 5_000)
        .await
        .expect("claim")
        .expect("a match");
    assert!(
        !db.store
            .record_run_failure(&match_id, "another lease", "x failed: y")
            .await
            .expect("write")
    );
    assert!(
        db.store
            .record_run_failure(&match_id, &claim.lease_id, "x failed: /srv/y\nsecond line")
            .await
            .expect("write")
    );
    let game = db.store.reads().game(&match_id).await.expect("match");
    assert_eq!(game.last_failure.as_deref(), Some("x failed: [path]"));
}
both_backends!(
    only_the_lease_holder_records_why_its_run_failed,
    only_the_lease_holder_records_a_cause
);

/// Claims take the oldest claimable match first, whether queued or running
/// with an expired lease, ties going by match id, and never a match whose
/// lease still runs.
async fn claims_take_the_oldest_first(db: &TestDb) {
    db.store.start_season("s1").await.expect("season");
    let (alice, _) = db.owner("alice", 10_000).await;
    let (bob, _) = db.owner("bob", 10_000).await;
    let register = |owner, name: &'static str| {
        let store = db.store.clone();
        async move {
            store
                .register_bot(&owner, name, "light", &builtin("builtin:random"))
                .await
                .expect("register")
                .id
        }
    };
    let (a, b) = (register(alice, "alpha").await, register(bob, "bravo").await);
    let start = duel_ladder::store::now_ms();
    let accept = |clock: &ManualClock, id: &'static str| {
        let store = db.store.clone().with_clock(Arc::new(clock.clone()));
        let sides = [
            PairSide {
                bot_id: a.clone(),
                stake: 10,
            },
            PairSide {
                bot_id: b.clone(),
                stake: 10,
            },
        ];
        async move {
            store.accept_pair(sides, id, 7).await.expect("accept");
        }
    };
    let clock = ManualClock::new(start);
    accept(&clock, "m-b").await;
    accept(&clock, "m-a").await;
    clock.advance(10);
    accept(&clock, "m-c").await;
    let lease_ms = 1_000;
    let claim = |now: i64| {
        let store = db.store.clone();
        async move {
            store
                .claim(lease_ms, now)
                .await
                .expect("claim")
                .map(|claim| claim.game.id)
        }
    };
    // Accepted together: by id.
    assert_eq!(claim(start + 20).await.as_deref(), Some("m-a"));
    assert_eq!(claim(start + 20).await.as_deref(), Some("m-b"));
    // Another server, its clock behind, accepts a match older than all.
    accept(&ManualClock::new(start - 5), "m-early").await;
    // m-a and m-b still hold their leases: the queued ones go first.
    assert_eq!(claim(start + 30).await.as_deref(), Some("m-early"));
    // Their leases expire: each is claimed in acceptance order, before the
    // queued m-c, which was accepted later.
    let later = start + 20 + lease_ms + 1;
    assert_eq!(claim(later).await.as_deref(), Some("m-a"));
    assert_eq!(claim(later).await.as_deref(), Some("m-b"));
    assert_eq!(claim(later).await.as_deref(), Some("m-c"));
    assert_eq!(claim(later).await, None, "every lease still runs");
    let game = db.store.reads().game("m-a").await.expect("m-a");
    assert_eq!((game.state, game.attempts), (MatchState::Running, 2));
}
both_backends!(
    claims_take_the_oldest_match_first,
    claims_take_the_oldest_first
);

/// The lease read before publishing: the holder's expiry while it runs,
/// nothing for another lease or once the match is settled.
async fn lease_expiry_is_read_for_its_holder_only(db: &TestDb) {
    let match_id = one_match(db, builtin("builtin:block")).await;
    let now = duel_ladder::store::now_ms();
    let claim = db
        .store
        .claim(30_000, now)
        .await
        .expect("claim")
        .expect("a match");
    assert_eq!(
        db.store
            .lease_expires(&match_id, &claim.lease_id)
            .await
            .expect("read"),
        Some(now + 30_000)
    );
    assert_eq!(
        db.store
            .lease_expires(&match_id, "another lease")
            .await
            .expect("read"),
        None
    );
    db.store
        .complete(
            &match_id,
            &claim.lease_id,
            Winner::A,
            "r.json",
            None,
            now + 1,
        )
        .await
        .expect("settle");
    assert_eq!(
        db.store
            .lease_expires(&match_id, &claim.lease_id)
            .await
            .expect("read"),
        None,
        "a settled match has no running lease"
    );
}
both_backends!(
    lease_expiry_is_read_for_its_holder_only,
    lease_expiry_is_read_for_its_holder_only
);
