//! Endpoint bots on loopback beside a bare tonic unary call of the same size
//! (always compare within one run: loopback timing swings ~2x between runs),
//! whole matches against two endpoint bots, matches per second with 200 in
//! flight, and the meter's token counting.
//!
//! cargo bench -p duel-referee --bench endpoint

#![allow(clippy::unwrap_used, missing_debug_implementations)]

use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use duel_proto::v1 as pb;
use duel_proto::v1::bot_client::BotClient;
use duel_proto::v1::bot_server::{Bot as BotService, BotServer};
use duel_referee::grpc::convert::observation_to_proto;
use duel_referee::runner::run_match;
use duel_referee::{Bot, MatchConfig, ModelGateway};
use duel_rules::{
    Action, MatchState, Observation, Ruleset, Side, Source, TapeEntry, TapeSide, WeightClass,
};
use tokio::runtime::Runtime;
use tonic::transport::server::TcpIncoming;
use tonic::{Request, Response, Status};

struct Blocker;

#[tonic::async_trait]
impl BotService for Blocker {
    async fn hello(
        &self,
        _: Request<pb::HelloRequest>,
    ) -> Result<Response<pb::HelloResponse>, Status> {
        Ok(Response::new(pb::HelloResponse {
            name: "bench".into(),
            version: "0".into(),
            rulesets: vec!["1.0.0".into()],
        }))
    }

    async fn decide(
        &self,
        request: Request<pb::DecideRequest>,
    ) -> Result<Response<pb::DecideResponse>, Status> {
        let tape = request.into_inner().observation.map_or(0, |o| o.tape.len());
        let action = if tape.is_multiple_of(2) {
            pb::Action::Jab
        } else {
            pb::Action::Block
        };
        Ok(Response::new(pb::DecideResponse {
            action: action.into(),
            log: Vec::new(),
        }))
    }
}

/// A bot server on its own runtime (its own threads), like another process.
fn start_bot_server() -> (std::net::SocketAddr, Runtime) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let address = listener.local_addr().unwrap();
    runtime.spawn(
        tonic::transport::Server::builder()
            .add_service(BotServer::new(Blocker))
            .serve_with_incoming(TcpIncoming::from(listener).with_nodelay(Some(true))),
    );
    (address, runtime)
}

fn client_runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn config(match_id: String) -> MatchConfig {
    let mut config = MatchConfig::new(
        match_id,
        "2026-01-01T00:00:00Z".into(),
        WeightClass::Middle,
        1,
    );
    config.decision_wall_clock = Duration::from_secs(10);
    config
}

async fn endpoint_bot(
    address: std::net::SocketAddr,
    config: &MatchConfig,
    side: Side,
) -> Box<dyn Bot> {
    endpoint_bot_with(address, config, side, None).await
}

/// An endpoint bot that is offered Inference: each decision issues and revokes
/// its own credential (the path of `referee serve`).
async fn endpoint_bot_with(
    address: std::net::SocketAddr,
    config: &MatchConfig,
    side: Side,
    inference: Option<duel_referee::InferenceLink>,
) -> Box<dyn Bot> {
    let grant = inference.map(|link| duel_referee::endpoint::InferenceGrant {
        url: link.url,
        credentials: link.credentials,
        match_id: config.match_id.clone(),
        side,
    });
    let bot = duel_referee::endpoint::EndpointBot::connect(
        &format!("grpc://{address}"),
        config.decision_wall_clock,
        duel_referee::FighterMeter::new(ModelGateway::disabled(), config.budget_tokens()),
        grant,
        &duel_referee::tls::Trust::system(),
        duel_referee::EndpointPolicy::LOCAL,
    )
    .await
    .unwrap();
    Box::new(bot)
}

/// A mid-match tape (12 earlier exchanges), so requests have a realistic size.
fn tape() -> Vec<TapeEntry> {
    let side = |action| TapeSide {
        action,
        exhausted: false,
        source: Source::Bot,
        damage_taken: 3,
    };
    (1..=12)
        .map(|exchange| TapeEntry {
            round: 1,
            exchange,
            sides: [side(Action::Jab), side(Action::Dodge)],
        })
        .collect()
}

fn per_decision(c: &mut Criterion) {
    let (address, _server) = start_bot_server();
    let runtime = client_runtime();
    let state = MatchState::new(Ruleset::CURRENT);
    let tape = tape();
    let match_id = uuid::Uuid::new_v4().to_string();
    let observation = Observation::new(
        &state,
        Side::A,
        &match_id,
        WeightClass::Middle,
        64_000,
        &tape,
    );
    let request = pb::DecideRequest {
        observation: Some(observation_to_proto(&observation)),
        inference_token: "0".repeat(64),
        inference_url: format!("http://{address}"),
        openai_base_url: format!("http://{address}/v1"),
    };
    let mut bare = runtime.block_on(async {
        let channel = tonic::transport::Endpoint::from_shared(format!("http://{address}"))
            .unwrap()
            .tcp_nodelay(true)
            .connect()
            .await
            .unwrap();
        BotClient::new(channel)
    });
    let config = config(match_id.clone());
    let mut bot = runtime.block_on(endpoint_bot(address, &config, Side::A));
    let inference = duel_referee::InferenceLink {
        url: format!("http://{address}"),
        credentials: duel_referee::credentials::Credentials::new(),
    };
    let mut bot_with_inference = runtime.block_on(endpoint_bot_with(
        address,
        &config,
        Side::B,
        Some(inference),
    ));
    let mut group = c.benchmark_group("decision");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(4));
    // Interleaved so both see the same loopback weather.
    group.bench_function("bare_tonic_unary", |b| {
        b.iter_custom(|iterations| {
            runtime.block_on(async {
                let started = Instant::now();
                for _ in 0..iterations {
                    let mut call = Request::new(request.clone());
                    call.set_timeout(Duration::from_secs(10));
                    bare.decide(call).await.unwrap();
                }
                started.elapsed()
            })
        })
    });
    group.bench_function("endpoint_bot", |b| {
        b.iter_custom(|iterations| {
            runtime.block_on(async {
                let started = Instant::now();
                for _ in 0..iterations {
                    let decision = bot.decide(observation).await;
                    assert!(decision.answer.is_ok());
                }
                started.elapsed()
            })
        })
    });
    group.bench_function("endpoint_bot_with_inference_credential", |b| {
        b.iter_custom(|iterations| {
            runtime.block_on(async {
                let started = Instant::now();
                for _ in 0..iterations {
                    let decision = bot_with_inference.decide(observation).await;
                    assert!(decision.answer.is_ok());
                }
                started.elapsed()
            })
        })
    });
    group.finish();
}

fn whole_match(c: &mut Criterion) {
    let (address, _server) = start_bot_server();
    let runtime = client_runtime();
    let mut group = c.benchmark_group("match");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(6));
    // Both fighters JAB on even tapes and BLOCK on odd: every round is drawn,
    // so the match runs the full 36 exchanges.
    group.throughput(Throughput::Elements(36));
    group.bench_function("two_endpoint_bots", |b| {
        b.iter_custom(|iterations| {
            runtime.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iterations {
                    let config = config(uuid::Uuid::new_v4().to_string());
                    let mut a = endpoint_bot(address, &config, Side::A).await;
                    let mut b = endpoint_bot(address, &config, Side::B).await;
                    let started = Instant::now();
                    let replay = run_match(config, [a.as_mut(), b.as_mut()]).await;
                    total += started.elapsed();
                    assert_eq!(replay.exchanges().count(), 36);
                }
                total
            })
        })
    });
    group.finish();
}

fn concurrent_matches(c: &mut Criterion) {
    const MATCHES: usize = 200;
    let (address, _server) = start_bot_server();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("concurrent");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    group.throughput(Throughput::Elements(MATCHES as u64));
    group.bench_function("200_matches_endpoint_bots", |b| {
        b.iter_custom(|iterations| {
            runtime.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iterations {
                    let started = Instant::now();
                    let mut tasks = tokio::task::JoinSet::new();
                    for _ in 0..MATCHES {
                        tasks.spawn(async move {
                            let config = config(uuid::Uuid::new_v4().to_string());
                            let mut a = endpoint_bot(address, &config, Side::A).await;
                            let mut b = endpoint_bot(address, &config, Side::B).await;
                            run_match(config, [a.as_mut(), b.as_mut()]).await
                        });
                    }
                    while let Some(replay) = tasks.join_next().await {
                        assert_eq!(replay.unwrap().exchanges().count(), 36);
                    }
                    total += started.elapsed();
                }
                total
            })
        })
    });
    group.finish();
}

fn token_counting(c: &mut Criterion) {
    duel_referee::meter::warm_up();
    let prompt = "The opponent blocked three times, then feinted; its stamina is low. ".repeat(30);
    let tokens = duel_referee::meter::count_tokens(&prompt);
    let mut group = c.benchmark_group("meter");
    group.throughput(Throughput::Elements(tokens));
    group.bench_function("count_tokens_2k_chars", |b| {
        b.iter(|| duel_referee::meter::count_tokens(std::hint::black_box(&prompt)))
    });
    group.finish();
}

criterion_group!(
    benches,
    per_decision,
    whole_match,
    concurrent_matches,
    token_counting
);
criterion_main!(benches);
