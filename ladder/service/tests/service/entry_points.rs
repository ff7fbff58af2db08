//! A ranked match agrees with the same match played the way `referee local`
//! plays it: a WASM bot thinking through a slow model (its decisions time out
//! mid-call) records the same tokens at the same exchanges in both. Ranked
//! matches once dropped what an abandoned decision spent (a wrapper around the
//! bot forgot `Bot::abandoned`), recording 0 tokens where local recorded the
//! prompt: the worker now plays through the referee's match session.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::TestDb;
use common::bots::wasm;
use duel_ladder::ladder::{Ladder, Registration};
use duel_ladder::worker::{LadderFactory, Worked, WorkerConfig, ladder_host_config, work_once};
use duel_referee::{
    BotSpec, EndpointPolicy, Fighter, HostConfig, MatchHost, MatchOptions, ModelConfig,
    ModelGateway,
};
use duel_replays::store::ReplayStore;
use duel_replays::{Replay, SigningKey, SourceName};
use duel_rules::WeightClass;
use tokio::net::TcpListener;

const CLOCK: Duration = Duration::from_millis(300);
/// Longer than the clock: every model call is cut when its decision times out.
const MODEL_DELAY: Duration = Duration::from_millis(1_500);

/// An OpenAI-compatible server that answers every call after [`MODEL_DELAY`].
async fn serve_slow_model() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(|| async {
            tokio::time::sleep(MODEL_DELAY).await;
            axum::Json(serde_json::json!({
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "JAB"}}],
            }))
        }),
    );
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{address}/v1")
}

fn gateway(model_url: &str) -> ModelGateway {
    ModelGateway::new(ModelConfig::new(
        model_url.to_owned(),
        "test-model".into(),
        None,
    ))
    .expect("gateway")
}

/// Per exchange: both fighters' action, source and tokens.
fn tokens(replay: &Replay) -> Vec<String> {
    replay
        .exchanges()
        .map(|(round, exchange)| {
            format!(
                "r{round}e{}: {:?}/{:?}/{} | {:?}/{:?}/{}",
                exchange.number,
                exchange.a.action,
                exchange.a.source,
                exchange.a.tokens,
                exchange.b.action,
                exchange.b.source,
                exchange.b.tokens
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ranked_match_records_what_referee_local_records() {
    let db = TestDb::sqlite().await;
    let model_url = serve_slow_model().await;
    let ladder = Ladder::new(db.store.clone(), common::host(), false);
    db.store.start_season("s1").await.expect("season");
    let (alice, _) = db.owner("alice", 1_000).await;
    let (bob, _) = db.owner("bob", 1_000).await;
    ladder
        .register_bot(
            &alice,
            "oracle",
            "light",
            Registration::Wasm(wasm("oracle")),
        )
        .await
        .expect("oracle registers");
    ladder
        .register_bot(
            &bob,
            "house",
            "light",
            Registration::Builtin("builtin:counter".into()),
        )
        .await
        .expect("house bot");
    ladder.enqueue(&alice, "oracle", 10).await.expect("enqueue");
    ladder.enqueue(&bob, "house", 10).await.expect("enqueue");
    let mut waves = 0;
    while duel_ladder::wave::run_wave(&db.store, WeightClass::Light)
        .await
        .expect("wave")
        .matches
        .is_empty()
    {
        waves += 1;
        assert!(waves < 20, "never paired");
    }
    let replays = tempfile::tempdir().expect("replays");
    let store = ReplayStore::open(&replays.path().display().to_string()).expect("replay store");
    let host = MatchHost::new(ladder_host_config(
        HostConfig::new(gateway(&model_url)),
        true,
    ));
    let mut config = WorkerConfig::new(
        host.clone(),
        store.clone(),
        Arc::new(SigningKey::from_bytes(&[3; 32])),
    );
    config.decision_wall_clock = CLOCK;
    let factory = LadderFactory::new(db.store.clone(), host, false);
    let Worked::Settled(settlement) = work_once(&db.store, &factory, &config).await.expect("work")
    else {
        panic!("the match did not settle");
    };
    let json = store
        .get_json(&settlement.match_id)
        .await
        .expect("read")
        .expect("published");
    let ranked = Replay::from_slice(&json).expect("replay");

    // The same match as `referee local` plays it: its host and policy, the
    // ranked match's seed, sides and opening.
    let mut local_config = HostConfig::new(gateway(&model_url));
    local_config.endpoints = EndpointPolicy::LOCAL;
    let local_host = MatchHost::new(local_config);
    let path = std::env::temp_dir().join(format!("oracle-{}.wasm", std::process::id()));
    std::fs::write(&path, wasm("oracle")).expect("write the component");
    let fighter = |name: &str| {
        if name == "oracle" {
            Fighter::from(BotSpec::Wasm(path.clone()))
        } else {
            Fighter::from(BotSpec::parse("builtin:counter").expect("spec"))
        }
    };
    assert!(!ranked.opening.is_empty(), "a ranked match opens forced");
    let opening: Vec<[duel_rules::Action; 2]> = ranked
        .opening
        .iter()
        .map(|[a, b]| [(*a).into(), (*b).into()])
        .collect();
    let options = MatchOptions::new(WeightClass::Light)
        .seed(ranked.seed)
        .wall_clock(CLOCK)
        .opening(duel_referee::opening::Opening::from(opening));
    let session = local_host
        .prepare(
            [
                fighter(&ranked.fighters[0].name),
                fighter(&ranked.fighters[1].name),
            ],
            options,
        )
        .await
        .expect("local match");
    let local = session.play(&mut |_: &_, _: &_| {}).await.replay;
    let _ = std::fs::remove_file(&path);

    let oracle = usize::from(&*ranked.fighters[0].name != "oracle");
    let cut: Vec<_> = ranked
        .exchanges()
        .map(|(_, exchange)| exchange.sides()[oracle].clone())
        .filter(|side| side.source == SourceName::Timeout)
        .collect();
    assert!(!cut.is_empty(), "the slow model never cut a decision");
    assert!(
        cut.iter().all(|side| side.tokens > 0),
        "a decision abandoned mid-call recorded no tokens: {cut:?}"
    );
    assert_eq!(tokens(&ranked), tokens(&local));
    assert_eq!(ranked.result.tokens_used, local.result.tokens_used);
}
