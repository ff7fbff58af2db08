//! Workers play real bots on both backends: WASM components (the example bots
//! of `scripts/build-bots`) and an endpoint bot (a `duel.v1.Bot` server on
//! loopback) play ranked matches that settle, metered under the class budget
//! their match row pins; a row pinning a budget the rules do not give is
//! voided. Every replay is signed, published with its season, and verifies.

use crate::common;
#[path = "../../../../referee/tests/referee/support/python_llm.rs"]
#[allow(dead_code)]
mod python_llm;

use std::sync::Arc;

use common::TestDb;
use common::bots::{serve_endpoint_bot, wasm};
use duel_ladder::auth::User;
use duel_ladder::error::{LadderError, ServiceError};
use duel_ladder::ladder::{Ladder, Registration};
use duel_ladder::model::MatchState;
use duel_ladder::worker::{LadderFactory, Worked, WorkerConfig, work_once};
use duel_referee::{ModelConfig, ModelGateway};
use duel_replays::store::ReplayStore;
use duel_replays::{FighterKind, Replay, SigningKey, SourceName};
use duel_rules::{Ruleset, WeightClass};
use tokio::net::TcpListener;

fn worker_config(dir: &tempfile::TempDir) -> WorkerConfig {
    let replays = ReplayStore::open(&dir.path().display().to_string()).expect("replay store");
    WorkerConfig::new(
        common::host(),
        replays,
        Arc::new(SigningKey::from_bytes(&[9; 32])),
    )
}

/// An operator-run season with two owners holding `credits` each.
async fn season(db: &TestDb, ladder: &Ladder) -> (User, User) {
    db.store.start_season("s1").await.expect("season");
    let (alice, _) = db.owner("alice", 1_000).await;
    let (bob, _) = db.owner("bob", 1_000).await;
    let _ = ladder;
    (alice, bob)
}

/// Pairs the two bots waiting in `class` and works until idle; returns what
/// the worker did.
async fn play(
    db: &TestDb,
    ladder: &Ladder,
    config: &WorkerConfig,
    class: WeightClass,
) -> Vec<Worked> {
    // A rating gap too wide for the first wave narrows as the bots wait.
    let mut waves = 0;
    loop {
        let report = duel_ladder::wave::run_wave(&db.store, class)
            .await
            .expect("wave");
        if report.matches.len() == 1 {
            break;
        }
        waves += 1;
        assert!(waves < 20, "never paired: {report:?}");
    }
    let factory = LadderFactory::new(ladder.store.clone(), common::host(), true);
    let mut worked = Vec::new();
    loop {
        match work_once(&db.store, &factory, config).await.expect("work") {
            Worked::Idle => return worked,
            other => worked.push(other),
        }
    }
}

/// The published replay of `match_id`, after checking its signature.
async fn published(config: &WorkerConfig, match_id: &str) -> Replay {
    let json = config
        .replays
        .get_json(match_id)
        .await
        .expect("read the replay store")
        .expect("replay published");
    let signature = duel_replays::check_signature(&json, Some(&config.signing_key.verifying_key()))
        .expect("replay parses");
    assert!(signature.is_ok(), "{signature:?}");
    let replay = Replay::from_slice(&json).expect("replay parses");
    let verdict = duel_referee::verify::verify_replay(&replay).expect("verifiable");
    assert!(verdict.is_ok(), "{verdict:?}");
    replay
}

async fn wasm_bots_play_ranked_matches(db: &TestDb) {
    let ladder = Ladder::new(db.store.clone(), common::host(), false);
    let (alice, bob) = season(db, &ladder).await;
    let counter = ladder
        .register_bot(
            &alice,
            "w-counter",
            "light",
            Registration::Wasm(wasm("counter")),
        )
        .await
        .expect("counter registers");
    let jabber = ladder
        .register_bot(
            &bob,
            "w-jabber",
            "light",
            Registration::Wasm(wasm("jabber")),
        )
        .await
        .expect("jabber registers");
    assert_eq!(
        counter.versions[0].digest,
        duel_referee::spec::sha256_digest(&wasm("counter"))
    );
    let replays = tempfile::tempdir().expect("replays");
    let config = worker_config(&replays);
    ladder
        .enqueue(&alice, "w-counter", 50)
        .await
        .expect("enqueue");
    ladder.enqueue(&bob, "w-jabber", 50).await.expect("enqueue");
    let mut worked = play(db, &ladder, &config, WeightClass::Light).await;
    // Then against a house bot (no immediate rematch of the same two).
    let (carol, _) = db.owner("carol", 1_000).await;
    ladder
        .register_bot(
            &carol,
            "house",
            "light",
            Registration::Builtin("builtin:block".into()),
        )
        .await
        .expect("house bot");
    ladder.enqueue(&carol, "house", 50).await.expect("enqueue");
    ladder
        .enqueue(&alice, "w-counter", 50)
        .await
        .expect("enqueue");
    worked.extend(play(db, &ladder, &config, WeightClass::Light).await);
    let settled: Vec<String> = worked
        .into_iter()
        .map(|done| match done {
            Worked::Settled(settlement) => settlement.match_id,
            other => panic!("expected a settlement, got {other:?}"),
        })
        .collect();
    assert_eq!(settled.len(), 2, "{settled:?}");
    let mut saw_both = false;
    for match_id in &settled {
        let game = db.store.reads().game(match_id).await.expect("match");
        assert_eq!(game.state, MatchState::Settled);
        let replay = published(&config, match_id).await;
        assert_eq!(replay.season.as_deref(), Some("s1"));
        for (side, fighter) in game.sides.iter().zip(&replay.fighters) {
            assert_eq!(&*fighter.name, side.bot_name);
            if fighter.kind == FighterKind::Wasm {
                let bot = if side.bot_name == "w-counter" {
                    &counter
                } else {
                    &jabber
                };
                assert_eq!(&*fighter.digest, bot.versions[0].digest);
                assert_eq!(fighter.spec.as_deref(), Some(bot.versions[0].spec.as_str()));
            }
        }
        // The bots played: no exchange of theirs needed a substitution.
        for round in &replay.rounds {
            for exchange in &round.exchanges {
                for (fighter, record) in replay.fighters.iter().zip([&exchange.a, &exchange.b]) {
                    if fighter.kind == FighterKind::Wasm {
                        assert_eq!(record.source, SourceName::Bot, "{}", fighter.name);
                    }
                }
            }
        }
        saw_both |= replay
            .fighters
            .iter()
            .all(|fighter| fighter.kind == FighterKind::Wasm);
    }
    assert!(saw_both, "one match was WASM against WASM");
    let (_, standings) = db
        .store
        .standings(None, Some(WeightClass::Light))
        .await
        .expect("standings");
    let counter_games = standings
        .iter()
        .find(|row| row.bot_name == "w-counter")
        .map(|row| row.games);
    assert!(counter_games >= Some(1), "{standings:?}");
    let report = db
        .store
        .ledger_check()
        .await
        .expect("check")
        .expect("ledger clean");
    assert_eq!(report.pending_unresolved, 0);
}
both_backends!(wasm_bots_play, wasm_bots_play_ranked_matches);

/// An OpenAI-compatible chat-completions server answering every call with
/// `completion`; counts the calls.
async fn serve_model(completion: &'static str) -> (String, Arc<std::sync::atomic::AtomicU64>) {
    let calls = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    let counter = Arc::clone(&calls);
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(move || {
            let counter = Arc::clone(&counter);
            async move {
                counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                axum::Json(serde_json::json!({
                    "id": "chatcmpl-test",
                    "object": "chat.completion",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": completion}, "finish_reason": "stop"}],
                }))
            }
        }),
    );
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{address}/v1"), calls)
}

async fn model_calls_are_metered_under_the_class_budget(db: &TestDb) {
    let ladder = Ladder::new(db.store.clone(), common::host(), false);
    let (alice, bob) = season(db, &ladder).await;
    ladder
        .register_bot(
            &alice,
            "oracle",
            "middle",
            Registration::Wasm(wasm("oracle")),
        )
        .await
        .expect("oracle registers");
    ladder
        .register_bot(
            &bob,
            "house",
            "middle",
            Registration::Builtin("builtin:counter".into()),
        )
        .await
        .expect("house bot");
    let (model_url, calls) = serve_model("JAB").await;
    let replays = tempfile::tempdir().expect("replays");
    let mut config = worker_config(&replays);
    config.host = duel_referee::MatchHost::new(duel_ladder::worker::ladder_host_config(
        duel_referee::HostConfig::new(
            ModelGateway::new(ModelConfig::new(model_url, "test-model".into(), None))
                .expect("gateway"),
        ),
        true,
    ));
    ladder.enqueue(&alice, "oracle", 10).await.expect("enqueue");
    ladder.enqueue(&bob, "house", 10).await.expect("enqueue");
    let worked = play(db, &ladder, &config, WeightClass::Middle).await;
    let [Worked::Settled(settlement)] = worked.as_slice() else {
        panic!("expected one settlement, got {worked:?}");
    };
    let game = db
        .store
        .reads()
        .game(&settlement.match_id)
        .await
        .expect("match");
    let replay = published(&config, &game.id).await;
    let budget = Ruleset::CURRENT.budget_tokens(WeightClass::Middle);
    assert_eq!((game.budget, replay.budget), (budget as i64, budget));
    let oracle = replay
        .fighters
        .iter()
        .position(|fighter| &*fighter.name == "oracle")
        .expect("oracle fought");
    let used = replay.result.tokens_used[oracle];
    assert!(used > 0, "the oracle's model calls were metered");
    assert!(used <= budget);
    assert!(calls.load(std::sync::atomic::Ordering::Relaxed) > 0);
    let per_exchange: u64 = replay
        .rounds
        .iter()
        .flat_map(|round| &round.exchanges)
        .map(|exchange| [&exchange.a, &exchange.b][oracle].tokens)
        .sum();
    assert_eq!(per_exchange, used, "every metered token is in the replay");

    // What the win cost, as the site reads it back: the settlement recorded
    // the replay's tokens, lost decisions and model calls.
    let reads = db.store.reads();
    let season = reads.active_season().await.expect("read").expect("season");
    let lines = reads
        .cost_lines(&season, WeightClass::Middle)
        .await
        .expect("cost lines");
    let line = lines
        .iter()
        .find(|line| line.bot == "oracle")
        .expect("the oracle's spend");
    assert_eq!((line.matches, line.tokens), (1, used as i64));
    let exchanges: Vec<_> = replay
        .rounds
        .iter()
        .flat_map(|round| &round.exchanges)
        .collect();
    assert_eq!(line.decisions, exchanges.len() as i64);
    let lost = exchanges
        .iter()
        .filter(|exchange| {
            [&exchange.a, &exchange.b][oracle].source != duel_replays::SourceName::Bot
        })
        .count();
    let shares = line.fallback_share;
    assert!(
        ((shares.timeout + shares.budget + shares.fault) * exchanges.len() as f64 - lost as f64)
            .abs()
            < 1e-9,
        "{shares:?} against {lost} lost decisions"
    );
    let models = reads
        .model_lines(&season, WeightClass::Middle)
        .await
        .expect("model lines");
    let [model] = models.as_slice() else {
        panic!("one model was called: {models:?}");
    };
    assert_eq!(
        (
            model.model.as_str(),
            model.bots,
            model.matches,
            model.tokens
        ),
        ("test-model", 1, 1, used as i64)
    );

    // The transcript, before any reveal: the oracle's owner reads its bot's
    // decisions; an operator reads them all, and they verify against the
    // signed replay; the other bot's owner (its bot called no model) and a
    // stranger read nothing.
    let reader =
        Ladder::new(db.store.clone(), common::host(), false).with_replays(config.replays.clone());
    let own = reader
        .match_transcript(&alice, &game.id, None)
        .await
        .expect("the oracle's owner reads its transcript");
    let oracle_side = if oracle == 0 { "a" } else { "b" };
    assert!(!own.decisions.is_empty());
    assert!(
        own.decisions
            .iter()
            .all(|decision| serde_json::to_value(decision.fighter).ok() == Some(oracle_side.into()))
    );
    let (operator, _) = db
        .store
        .create_user("referee-op", duel_ladder::auth::Role::Operator)
        .await
        .expect("operator");
    let all = reader
        .match_transcript(&operator, &game.id, None)
        .await
        .expect("an operator reads every decision");
    let parsed =
        duel_replays::transcript::ParsedTranscript::from_slice(all.to_json_pretty().as_bytes())
            .expect("parses");
    duel_replays::transcript::verify_transcript(&replay, &parsed)
        .expect("the transcript agrees with the signed replay");
    assert!(matches!(
        reader.match_transcript(&bob, &game.id, None).await,
        Err(ServiceError::Ladder(LadderError::NotFound(_)))
    ));
    assert!(matches!(
        reader
            .match_transcript(&bob, &game.id, Some("oracle"))
            .await,
        Err(ServiceError::Ladder(LadderError::PermissionDenied(_)))
    ));
    let (carol, _) = db.owner("carol", 0).await;
    assert!(matches!(
        reader.match_transcript(&carol, &game.id, None).await,
        Err(ServiceError::Ladder(LadderError::PermissionDenied(_)))
    ));
    assert!(matches!(
        reader
            .match_transcript(&alice, &game.id, Some("nobody"))
            .await,
        Err(ServiceError::Ladder(LadderError::Invalid(_)))
    ));
}
both_backends!(
    model_calls_metered,
    model_calls_are_metered_under_the_class_budget
);

async fn a_budget_the_rules_do_not_give_voids_the_match(db: &TestDb) {
    let ladder = Ladder::new(db.store.clone(), common::host(), false);
    let (alice, bob) = season(db, &ladder).await;
    for (owner, name) in [(&alice, "a"), (&bob, "b")] {
        ladder
            .register_bot(
                owner,
                name,
                "light",
                Registration::Builtin("builtin:random".into()),
            )
            .await
            .expect("bot");
        ladder.enqueue(owner, name, 10).await.expect("enqueue");
    }
    let report = duel_ladder::wave::run_wave(&db.store, WeightClass::Light)
        .await
        .expect("wave");
    let match_id = report.matches[0].clone();
    // Tampered: the row claims the heavy budget for a light match.
    let pool = sqlx::AnyPool::connect(&db.url).await.expect("pool");
    sqlx::query("UPDATE matches SET budget = 512000 WHERE id = $1")
        .bind(match_id.clone())
        .execute(&pool)
        .await
        .expect("tamper");
    pool.close().await;
    let replays = tempfile::tempdir().expect("replays");
    let factory = LadderFactory::new(db.store.clone(), common::host(), false);
    let worked = work_once(&db.store, &factory, &worker_config(&replays))
        .await
        .expect("work");
    let Worked::Voided { reason, .. } = worked else {
        panic!("expected a void, got {worked:?}");
    };
    // A mismatch of the rules says so; it is not a rejected bot.
    assert_eq!(
        reason,
        "rules mismatch: match pins a budget of 512000 tokens, but ruleset 1.0.0 gives class light 8000"
    );
    assert_eq!(db.store.available(&alice.id).await.expect("balance"), 1_000);
}
both_backends!(
    budget_mismatch_voids,
    a_budget_the_rules_do_not_give_voids_the_match
);

async fn endpoint_bots_play_ranked_matches(db: &TestDb) {
    // A loopback endpoint, allowed by this ladder's operator.
    let ladder = Ladder::new(db.store.clone(), common::host(), true);
    let (alice, bob) = season(db, &ladder).await;
    let url = serve_endpoint_bot(&["1.0.0"]).await;
    ladder
        .register_bot(
            &alice,
            "remote",
            "light",
            Registration::Endpoint(url.clone()),
        )
        .await
        .expect("endpoint registers");
    ladder
        .register_bot(
            &bob,
            "w-counter",
            "light",
            Registration::Wasm(wasm("counter")),
        )
        .await
        .expect("counter registers");
    ladder.enqueue(&alice, "remote", 20).await.expect("enqueue");
    ladder
        .enqueue(&bob, "w-counter", 20)
        .await
        .expect("enqueue");
    let replays = tempfile::tempdir().expect("replays");
    let config = worker_config(&replays);
    let worked = play(db, &ladder, &config, WeightClass::Light).await;
    let [Worked::Settled(settlement)] = worked.as_slice() else {
        panic!("expected one settlement, got {worked:?}");
    };
    let replay = published(&config, &settlement.match_id).await;
    let remote = replay
        .fighters
        .iter()
        .position(|fighter| &*fighter.name == "remote")
        .expect("the endpoint bot fought");
    assert_eq!(replay.fighters[remote].kind, FighterKind::Endpoint);
    assert_eq!(replay.fighters[remote].spec.as_deref(), Some(url.as_str()));
    for exchange in replay.rounds.iter().flat_map(|round| &round.exchanges) {
        let record = [&exchange.a, &exchange.b][remote];
        assert_eq!(record.source, SourceName::Bot, "the endpoint answered");
        // The bot logged every decision; a public ranked replay carries none.
        assert!(record.log().is_empty(), "{record:?}");
    }
    // Its owner reads them (`ladder match logs`): one entry per decision.
    let (_, logs) = ladder
        .match_logs(&alice, &settlement.match_id)
        .await
        .expect("the owner reads the logs");
    let [side] = logs.as_slice() else {
        panic!("expected alice's side only, got {logs:?}");
    };
    assert_eq!(side.side.index(), remote);
    let exchanges: usize = replay
        .rounds
        .iter()
        .map(|round| round.exchanges.len())
        .sum();
    // The opening's exchanges were forced, not asked.
    assert_eq!(side.exchanges.len(), exchanges - replay.opening.len());
    assert!(
        side.exchanges
            .iter()
            .all(|exchange| !exchange.lines.is_empty())
    );
    // Bob's bot fought but wrote nothing: he sees no side, and never Alice's.
    let (_, bobs) = ladder
        .match_logs(&bob, &settlement.match_id)
        .await
        .expect("bob's bot fought");
    assert!(bobs.is_empty(), "{bobs:?}");
    // An owner with no bot in the match is refused.
    let (carol, _) = db.owner("carol", 0).await;
    let refused = ladder.match_logs(&carol, &settlement.match_id).await;
    assert!(
        matches!(
            refused,
            Err(ServiceError::Ladder(LadderError::PermissionDenied(_)))
        ),
        "{refused:?}"
    );
}
both_backends!(endpoint_bots_play, endpoint_bots_play_ranked_matches);

/// docs/areas/ladder.md: an endpoint that does not answer `Hello` when its
/// match starts voids the match (stakes back, unrated), rather than playing 36
/// faults that would be rated and paid.
async fn an_endpoint_down_at_match_time_voids_the_match(db: &TestDb) {
    let ladder = Ladder::new(db.store.clone(), common::host(), true);
    let (alice, bob) = season(db, &ladder).await;
    let (url, server) = common::bots::serve_stoppable_endpoint_bot(&["1.0.0"]).await;
    ladder
        .register_bot(&alice, "remote", "light", Registration::Endpoint(url))
        .await
        .expect("endpoint registers while it is up");
    ladder
        .register_bot(
            &bob,
            "w-counter",
            "light",
            Registration::Wasm(wasm("counter")),
        )
        .await
        .expect("counter registers");
    ladder.enqueue(&alice, "remote", 20).await.expect("enqueue");
    ladder
        .enqueue(&bob, "w-counter", 20)
        .await
        .expect("enqueue");
    server.abort();
    let _ = server.await;
    let replays = tempfile::tempdir().expect("replays");
    let config = worker_config(&replays);
    let worked = play(db, &ladder, &config, WeightClass::Light).await;
    let [Worked::Voided { match_id, reason }] = worked.as_slice() else {
        panic!("expected one voided match, got {worked:?}");
    };
    assert!(reason.contains("Hello failed"), "{reason}");
    let game = db.store.reads().game(match_id).await.expect("match");
    assert_eq!(game.state, duel_ladder::model::MatchState::Voided);
    for owner in [&alice, &bob] {
        assert_eq!(
            db.store.available(&owner.id).await.expect("balance"),
            1_000,
            "stake returned"
        );
    }
    db.store
        .ledger_check()
        .await
        .expect("check")
        .expect("clean");
}
both_backends!(
    endpoint_down_voids,
    an_endpoint_down_at_match_time_voids_the_match
);

/// A bot written with the official `openai` package (the one `referee new
/// --lang python --llm` writes) plays a ranked match through a worker that
/// serves the metered gateway: every call is in the public replay, charged
/// exactly; what was said is kept apart from it, in the replay store, and
/// proves against the signed digests.
async fn an_openai_bot_is_metered_and_its_transcript_kept_apart(db: &TestDb) {
    let Some(python) = python_llm::python() else {
        common::services::skip(
            "the python-llm environment",
            "scripts/setup/python-llm.sh makes it",
        );
        return;
    };
    let folder = tempfile::tempdir().expect("folder");
    let bot = python_llm::start(&python, folder.path(), "thinker");
    let ladder = Ladder::new(db.store.clone(), common::host(), true);
    let (alice, bob) = season(db, &ladder).await;
    ladder
        .register_bot(
            &alice,
            "thinker",
            "middle",
            Registration::Endpoint(bot.url.clone()),
        )
        .await
        .expect("the endpoint registers");
    ladder
        .register_bot(
            &bob,
            "house",
            "middle",
            Registration::Builtin("builtin:counter".into()),
        )
        .await
        .expect("house bot");
    // The worker's gateway: the built-in model, served on loopback for the
    // endpoint bot's Inference and OpenAI-compatible calls.
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    let credentials = duel_referee::credentials::Credentials::new();
    let (_stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(duel_referee::grpc::serve_inference(
        listener,
        credentials.clone(),
        async move {
            let _ = stopped.await;
        },
    ));
    let catalogue =
        duel_referee::Catalogue::single(duel_referee::models::HOUSE_URL, None).expect("house");
    let gateway =
        ModelGateway::from_catalogue(&catalogue, &|_| None, &duel_referee::tls::Trust::system())
            .expect("gateway");
    let mut host = duel_referee::HostConfig::new(gateway);
    host.inference = Some(duel_referee::InferenceLink {
        url: format!("http://{address}"),
        credentials,
    });
    let replays = tempfile::tempdir().expect("replays");
    let mut config = worker_config(&replays);
    config.host = duel_referee::MatchHost::new(duel_ladder::worker::ladder_host_config(host, true));
    ladder
        .enqueue(&alice, "thinker", 10)
        .await
        .expect("enqueue");
    ladder.enqueue(&bob, "house", 10).await.expect("enqueue");
    let worked = play(db, &ladder, &config, WeightClass::Middle).await;
    let [Worked::Settled(settlement)] = worked.as_slice() else {
        panic!("expected one settlement, got {worked:?}");
    };
    let replay = published(&config, &settlement.match_id).await;
    let side = replay
        .fighters
        .iter()
        .position(|fighter| &*fighter.name == "thinker")
        .expect("the thinker fought");
    let mut total = 0;
    // The opening's exchanges were forced: no call.
    for (_, exchange) in replay.exchanges().skip(replay.opening.len()) {
        let record = exchange.sides()[side];
        assert_eq!(record.source, SourceName::Bot, "{record:?}");
        let calls = record.calls();
        assert_eq!(calls.len(), 1, "{record:?}");
        assert_eq!(calls[0].outcome, duel_replays::CallOutcome::Ok);
        assert_eq!(record.tokens, calls[0].tokens());
        assert!(record.transcript_sha256().is_some());
        total += record.tokens;
    }
    assert_eq!(replay.result.tokens_used[side], total);
    assert!(total > 0);
    let kept = config
        .replays
        .get_transcript(&replay.match_id)
        .await
        .expect("store")
        .expect("the transcript is kept");
    let parsed = duel_replays::transcript::ParsedTranscript::from_slice(&kept).expect("parses");
    duel_replays::verify_transcript(&replay, &parsed).expect("proves against the replay");
    let public = config
        .replays
        .get_json(&replay.match_id)
        .await
        .expect("store")
        .expect("published");
    assert!(!String::from_utf8_lossy(&public).contains("You are a fighter in a duel"));
    drop(bot);
}
both_backends!(
    openai_bot_metered,
    an_openai_bot_is_metered_and_its_transcript_kept_apart
);

/// The bot `referee new --lang python --from-env` writes, trained for a few
/// seconds with its own train.py in the training env's environment, plays a
/// ranked match as an endpoint: every decision its own, the replay signed and
/// verified by `published` (issue 51: a trained policy reaches the ladder without being
/// rewritten).
async fn a_policy_trained_in_the_env_plays_a_ranked_match(db: &TestDb) {
    let Some(python) = python_llm::env_python() else {
        common::services::skip(
            "the training env's Python environment",
            "scripts/setup/python-env.sh makes it",
        );
        return;
    };
    let folder = tempfile::tempdir().expect("folder");
    let bot = python_llm::start_policy_bot(&python, folder.path(), "learner", 3);
    let ladder = Ladder::new(db.store.clone(), common::host(), true);
    let (alice, bob) = season(db, &ladder).await;
    ladder
        .register_bot(
            &alice,
            "learner",
            "middle",
            Registration::Endpoint(bot.url.clone()),
        )
        .await
        .expect("the policy bot registers");
    ladder
        .register_bot(
            &bob,
            "random",
            "middle",
            Registration::Builtin("builtin:random".into()),
        )
        .await
        .expect("the built-in registers");
    ladder
        .enqueue(&alice, "learner", 10)
        .await
        .expect("enqueue");
    ladder.enqueue(&bob, "random", 10).await.expect("enqueue");
    let replays = tempfile::tempdir().expect("replays");
    let config = worker_config(&replays);
    let worked = play(db, &ladder, &config, WeightClass::Middle).await;
    let [Worked::Settled(settlement)] = worked.as_slice() else {
        panic!(
            "expected one settlement, got {worked:?}; the bot's log: {}",
            std::fs::read_to_string(&bot.log).unwrap_or_default()
        );
    };
    let replay = published(&config, &settlement.match_id).await;
    let side = replay
        .fighters
        .iter()
        .position(|fighter| &*fighter.name == "learner")
        .expect("the policy bot fought");
    assert_eq!(replay.fighters[side].kind, FighterKind::Endpoint);
    let mut decisions = 0;
    for (_, exchange) in replay.exchanges().skip(replay.opening.len()) {
        let record = exchange.sides()[side];
        assert_eq!(record.source, SourceName::Bot, "{record:?}");
        decisions += 1;
    }
    assert!(decisions > 0, "the policy bot was never asked");
    drop(bot);
}
both_backends!(
    policy_bot_plays_ranked,
    a_policy_trained_in_the_env_plays_a_ranked_match
);
