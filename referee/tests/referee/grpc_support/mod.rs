//! Real servers on 127.0.0.1 for the referee's network tests: endpoint bots with
//! scripted behaviour, a fake OpenAI-compatible model that records what it got,
//! a connection dropper, and the referee server itself.

#![allow(dead_code, clippy::unwrap_used)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use duel_proto::v1 as pb;
use duel_proto::v1::bot_server::{Bot, BotServer};
use duel_proto::v1::inference_client::InferenceClient;
use duel_referee::grpc::ServeConfig;
use duel_referee::meter::ModelGateway;
use duel_referee::{ModelConfig, limits};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tonic::transport::server::TcpIncoming;
use tonic::{Request, Response, Status};

/// What a test bot does on each decision.
#[derive(Clone, Debug)]
pub enum Behaviour {
    /// Answers this action at once.
    Fixed(pb::Action),
    /// Sleeps, then answers JAB.
    Sleep(Duration),
    /// Answers this raw action value (unknown enum values, UNSPECIFIED).
    Raw(i32),
    /// Answers JAB with one log line of this many bytes (oversized replies).
    Chatty(usize),
    /// Fails the first `n` decisions with an error status, then answers JAB.
    FailFirst(usize),
    /// Calls Inference with these messages, then answers JAB.
    Think {
        messages: Vec<(String, String)>,
        max_tokens: u32,
    },
    /// Calls Inference with another credential (from `stolen`), after a pause.
    Steal { pause: Duration },
    /// Publishes its own credential to `stolen` and answers at once.
    Publish,
    /// Waits until the test adds a permit to the gate, then answers JAB (and so
    /// on every later decision: the permit is given back).
    Gated(Arc<tokio::sync::Semaphore>),
    /// Attacks the gateway's OpenAI face: sends every body at once to
    /// `POST {openai_base_url}/chat/completions` with the decision's
    /// credential, then answers JAB, after the answers when `wait`, else at
    /// once (the calls still running). The statuses go to `http_statuses`.
    Flood {
        bodies: Arc<Vec<Vec<u8>>>,
        wait: bool,
    },
}

/// What a test bot saw and got back.
#[derive(Debug, Default)]
pub struct BotLog {
    pub decisions: AtomicUsize,
    pub tokens_seen: Mutex<Vec<String>>,
    pub budgets_seen: Mutex<Vec<u64>>,
    pub inference: Mutex<Vec<Result<pb::CompleteResponse, tonic::Code>>>,
    /// A credential passed between bots (Publish → Steal).
    pub stolen: Mutex<Option<(String, String)>>,
    /// The HTTP statuses the gateway answered a flood with (0: no answer).
    pub http_statuses: Mutex<Vec<u16>>,
}

#[derive(Clone, Debug)]
pub struct TestBot {
    pub behaviour: Behaviour,
    pub log: Arc<BotLog>,
}

async fn call_inference(
    url: &str,
    token: &str,
    messages: Vec<pb::ChatMessage>,
    max_tokens: u32,
) -> Result<pb::CompleteResponse, tonic::Code> {
    let mut client = InferenceClient::connect(url.to_owned())
        .await
        .map_err(|_| tonic::Code::Unavailable)?;
    let mut request = Request::new(pb::CompleteRequest {
        messages,
        max_tokens,
    });
    request
        .metadata_mut()
        .insert("authorization", format!("Bearer {token}").parse().unwrap());
    client
        .complete(request)
        .await
        .map(Response::into_inner)
        .map_err(|status| status.code())
}

#[tonic::async_trait]
impl Bot for TestBot {
    async fn hello(
        &self,
        _request: Request<pb::HelloRequest>,
    ) -> Result<Response<pb::HelloResponse>, Status> {
        Ok(Response::new(pb::HelloResponse {
            name: format!("test-{:?}", self.behaviour)
                .chars()
                .take(40)
                .collect(),
            version: "0".into(),
            rulesets: vec!["1.0.0".into()],
        }))
    }

    async fn decide(
        &self,
        request: Request<pb::DecideRequest>,
    ) -> Result<Response<pb::DecideResponse>, Status> {
        let request = request.into_inner();
        let index = self.log.decisions.fetch_add(1, Ordering::SeqCst);
        self.log
            .tokens_seen
            .lock()
            .unwrap()
            .push(request.inference_token.clone());
        if let Some(observation) = &request.observation {
            self.log
                .budgets_seen
                .lock()
                .unwrap()
                .push(observation.budget_left_tokens);
        }
        let log = match &self.behaviour {
            Behaviour::Chatty(bytes) => vec!["x".repeat(*bytes)],
            _ => Vec::new(),
        };
        let action = match &self.behaviour {
            Behaviour::Fixed(action) => *action as i32,
            Behaviour::Sleep(pause) => {
                tokio::time::sleep(*pause).await;
                pb::Action::Jab as i32
            }
            Behaviour::Raw(value) => *value,
            Behaviour::Chatty(_) => pb::Action::Jab as i32,
            Behaviour::FailFirst(n) => {
                if index < *n {
                    return Err(Status::internal("scripted failure"));
                }
                pb::Action::Jab as i32
            }
            Behaviour::Think {
                messages,
                max_tokens,
            } => {
                let messages = messages
                    .iter()
                    .map(|(role, content)| pb::ChatMessage {
                        role: role.clone(),
                        content: content.clone(),
                    })
                    .collect();
                let result = call_inference(
                    &request.inference_url,
                    &request.inference_token,
                    messages,
                    *max_tokens,
                )
                .await;
                self.log.inference.lock().unwrap().push(result);
                pb::Action::Jab as i32
            }
            Behaviour::Steal { pause } => {
                tokio::time::sleep(*pause).await;
                let stolen = self.log.stolen.lock().unwrap().clone();
                if let Some((url, token)) = stolen {
                    let message = vec![pb::ChatMessage {
                        role: "user".into(),
                        content: "spend someone else's budget".into(),
                    }];
                    let result = call_inference(&url, &token, message, 4).await;
                    self.log.inference.lock().unwrap().push(result);
                }
                pb::Action::Jab as i32
            }
            Behaviour::Gated(gate) => {
                let _permit = gate.acquire().await;
                pb::Action::Jab as i32
            }
            Behaviour::Flood { bodies, wait } => {
                let url = format!("{}/chat/completions", request.openai_base_url);
                let calls: Vec<_> = bodies
                    .iter()
                    .map(|body| {
                        let (url, token, body, log) = (
                            url.clone(),
                            request.inference_token.clone(),
                            body.clone(),
                            Arc::clone(&self.log),
                        );
                        tokio::spawn(async move {
                            let status = reqwest::Client::new()
                                .post(url)
                                .bearer_auth(token)
                                .header("content-type", "application/json")
                                .body(body)
                                .send()
                                .await
                                .map_or(0, |response| response.status().as_u16());
                            log.http_statuses.lock().unwrap().push(status);
                        })
                    })
                    .collect();
                if *wait {
                    for call in calls {
                        let _ = call.await;
                    }
                } else {
                    // Let the requests start, then answer while they run.
                    tokio::task::yield_now().await;
                }
                pb::Action::Jab as i32
            }
            Behaviour::Publish => {
                *self.log.stolen.lock().unwrap() = Some((
                    request.inference_url.clone(),
                    request.inference_token.clone(),
                ));
                pb::Action::Block as i32
            }
        };
        Ok(Response::new(pb::DecideResponse { action, log }))
    }
}

/// A running server; dropping the handle's sender stops it.
#[derive(Debug)]
pub struct Running {
    pub address: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    pub task: tokio::task::JoinHandle<()>,
}

impl Running {
    pub fn url(&self) -> String {
        format!("grpc://{}", self.address)
    }

    pub fn http_url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// Signals the server to stop and waits until it has.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = tokio::time::timeout(Duration::from_secs(20), &mut self.task).await;
    }

    /// Signals the server to stop without waiting.
    pub fn signal_stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

pub async fn loopback() -> TcpListener {
    TcpListener::bind("127.0.0.1:0").await.unwrap()
}

/// Serves a test bot on `listener`.
pub fn serve_bot_on(listener: TcpListener, bot: TestBot) -> Running {
    let address = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let _ = tonic::transport::Server::builder()
            .add_service(BotServer::new(bot))
            .serve_with_incoming_shutdown(
                TcpIncoming::from(listener).with_nodelay(Some(true)),
                async {
                    let _ = stopped.await;
                },
            )
            .await;
    });
    Running {
        address,
        stop: Some(stop),
        task,
    }
}

pub async fn serve_bot(behaviour: Behaviour) -> (Running, Arc<BotLog>) {
    let log = Arc::new(BotLog::default());
    let running = serve_bot_on(
        loopback().await,
        TestBot {
            behaviour,
            log: Arc::clone(&log),
        },
    );
    (running, log)
}

/// Accepts TCP connections and closes them at once (or after writing junk).
pub async fn serve_dropper(junk: &'static [u8]) -> Running {
    let listener = loopback().await;
    let address = listener.local_addr().unwrap();
    let (stop, mut stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        loop {
            tokio::select! {
                accepted = listener.accept() => {
                    if let Ok((mut stream, _)) = accepted {
                        use tokio::io::AsyncWriteExt;
                        let _ = stream.write_all(junk).await;
                        drop(stream);
                    }
                }
                _ = &mut stopped => return,
            }
        }
    });
    Running {
        address,
        stop: Some(stop),
        task,
    }
}

/// What the fake model received.
#[derive(Debug, Default)]
pub struct ModelLog {
    pub requests: Mutex<Vec<serde_json::Value>>,
    pub authorization: Mutex<Vec<Option<String>>>,
}

/// A small OpenAI-compatible chat-completions server returning `completion`.
pub async fn serve_model(completion: &'static str) -> (Running, Arc<ModelLog>) {
    serve_slow_model(completion, Duration::ZERO).await
}

/// [`serve_model`], answering each request only after `delay` (recorded at once).
pub async fn serve_slow_model(
    completion: &'static str,
    delay: Duration,
) -> (Running, Arc<ModelLog>) {
    let log = Arc::new(ModelLog::default());
    let listener = loopback().await;
    let address = listener.local_addr().unwrap();
    let app = model_app(completion, delay, Arc::clone(&log));
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = stopped.await;
            })
            .await;
    });
    (
        Running {
            address,
            stop: Some(stop),
            task,
        },
        log,
    )
}

/// A self-signed certificate for `localhost` and 127.0.0.1, and its key (PEM).
#[derive(Clone, Debug)]
pub struct SelfSigned {
    pub cert_pem: String,
    pub key_pem: String,
}

pub fn self_signed() -> SelfSigned {
    let certified =
        rcgen::generate_simple_self_signed(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .unwrap();
    SelfSigned {
        cert_pem: certified.cert.pem(),
        key_pem: certified.signing_key.serialize_pem(),
    }
}

/// [`serve_model`] over TLS (HTTP/1.1) with the certificate `tls`.
pub async fn serve_tls_model(
    completion: &'static str,
    tls: &SelfSigned,
) -> (Running, Arc<ModelLog>) {
    use tokio_rustls::rustls;
    use tokio_rustls::rustls::pki_types::pem::PemObject;
    use tower_service_call::call;
    let certificates = rustls::pki_types::CertificateDer::pem_slice_iter(tls.cert_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = rustls::pki_types::PrivateKeyDer::from_pem_slice(tls.key_pem.as_bytes()).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(certificates, key)
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let log = Arc::new(ModelLog::default());
    let listener = loopback().await;
    let address = listener.local_addr().unwrap();
    let app = model_app(completion, Duration::ZERO, Arc::clone(&log));
    let (stop, mut stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        loop {
            let (stream, _) = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(accepted) => accepted,
                    Err(_) => continue,
                },
                _ = &mut stopped => return,
            };
            let acceptor = acceptor.clone();
            let app = app.clone();
            tokio::spawn(async move {
                // A client that refuses our certificate ends the handshake here.
                let Ok(stream) = acceptor.accept(stream).await else {
                    return;
                };
                let service = hyper::service::service_fn(move |request| call(app.clone(), request));
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (
        Running {
            address,
            stop: Some(stop),
            task,
        },
        log,
    )
}

/// Calls an axum router as a hyper service.
mod tower_service_call {
    use axum::body::Body;
    use hyper::body::Incoming;
    use tower_service::Service;

    pub async fn call(
        mut app: axum::Router,
        request: hyper::Request<Incoming>,
    ) -> Result<axum::response::Response, std::convert::Infallible> {
        app.call(request.map(Body::new)).await
    }
}

/// Serves a test bot on `listener` over TLS with the certificate `tls`.
pub fn serve_tls_bot_on(listener: TcpListener, bot: TestBot, tls: &SelfSigned) -> Running {
    let address = listener.local_addr().unwrap();
    let identity = tonic::transport::Identity::from_pem(&tls.cert_pem, &tls.key_pem);
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let _ = tonic::transport::Server::builder()
            .tls_config(tonic::transport::ServerTlsConfig::new().identity(identity))
            .unwrap()
            .add_service(BotServer::new(bot))
            .serve_with_incoming_shutdown(
                TcpIncoming::from(listener).with_nodelay(Some(true)),
                async {
                    let _ = stopped.await;
                },
            )
            .await;
    });
    Running {
        address,
        stop: Some(stop),
        task,
    }
}

/// The fake OpenAI chat-completions routes.
fn model_app(completion: &'static str, delay: Duration, log: Arc<ModelLog>) -> axum::Router {
    use axum::extract::State;
    use axum::http::HeaderMap;
    axum::Router::new()
        .route(
            "/v1/chat/completions",
            axum::routing::post(
                move |State(log): State<Arc<ModelLog>>, headers: HeaderMap, axum::Json(body): axum::Json<serde_json::Value>| async move {
                    log.requests.lock().unwrap().push(body);
                    log.authorization.lock().unwrap().push(
                        headers
                            .get("authorization")
                            .and_then(|value| value.to_str().ok())
                            .map(str::to_owned),
                    );
                    tokio::time::sleep(delay).await;
                    axum::Json(serde_json::json!({
                        "id": "chatcmpl-test",
                        "object": "chat.completion",
                        "choices": [{"index": 0, "message": {"role": "assistant", "content": completion}, "finish_reason": "stop"}],
                    }))
                },
            ),
        )
        .with_state(log)
}

pub fn gateway_for(model: &Running) -> ModelGateway {
    ModelGateway::new(ModelConfig {
        url: format!("http://{}/v1", model.address),
        model: "test-model".into(),
        api_key: Some("sk-test-key".into()),
    })
    .unwrap()
}

/// The test bots listen on loopback, which a public referee refuses to dial
/// unless told (`--allow-private-endpoints`), as these tests do.
pub fn serve_config(max_concurrent_matches: usize, gateway: ModelGateway) -> ServeConfig {
    let mut host = duel_referee::HostConfig::new(gateway);
    host.endpoints.addresses = duel_referee::address_policy::AddressPolicy::Any;
    ServeConfig {
        max_concurrent_matches,
        host,
        operator_token: None,
        public_url: None,
        replay_dir: None,
        shutdown_grace: limits::DEFAULT_SHUTDOWN_GRACE,
        publishing: None,
        grpc_limits: duel_referee::grpc::GrpcLimits::default(),
        http_limits: duel_referee::publish::HttpLimits::default(),
    }
}

/// Starts `referee serve` (the library's server) on an ephemeral loopback port.
pub async fn serve_referee(config: ServeConfig) -> Running {
    let listener = loopback().await;
    let address = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        duel_referee::grpc::serve(listener, config, async {
            let _ = stopped.await;
        })
        .await
        .unwrap();
    });
    Running {
        address,
        stop: Some(stop),
        task,
    }
}

/// Starts `referee serve` with its replay service over HTTP (the config must
/// publish); returns the server and the HTTP address.
pub async fn serve_referee_with_http(config: ServeConfig) -> (Running, SocketAddr) {
    let listener = loopback().await;
    let address = listener.local_addr().unwrap();
    let http = loopback().await;
    let http_address = http.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        duel_referee::grpc::serve_listeners(
            duel_referee::grpc::Listeners {
                grpc: listener,
                metrics: None,
                http: Some(http),
            },
            config,
            async {
                let _ = stopped.await;
            },
        )
        .await
        .unwrap();
    });
    (
        Running {
            address,
            stop: Some(stop),
            task,
        },
        http_address,
    )
}

pub async fn referee_client(
    referee: &Running,
) -> duel_proto::v1::referee_client::RefereeClient<tonic::transport::Channel> {
    duel_proto::v1::referee_client::RefereeClient::connect(referee.http_url())
        .await
        .unwrap()
}

/// Runs one match over gRPC and parses its replay.
pub async fn run_match(referee: &Running, request: pb::RunMatchRequest) -> duel_replays::Replay {
    let response = referee_client(referee)
        .await
        .run_match(request)
        .await
        .unwrap()
        .into_inner();
    duel_replays::Replay::from_slice(response.replay_json.as_bytes()).unwrap()
}

pub fn request(bot_a: &str, bot_b: &str, wall_clock_ms: u32) -> pb::RunMatchRequest {
    pb::RunMatchRequest {
        bot_a: bot_a.to_owned(),
        bot_b: bot_b.to_owned(),
        class: pb::WeightClass::Light as i32,
        seed: Some(7),
        wall_clock_ms,
        detach: false,
    }
}

/// Every (side record) of fighter `side` in order.
pub fn sides(replay: &duel_replays::Replay, side: usize) -> Vec<duel_replays::SideRecord> {
    replay
        .exchanges()
        .map(|(_, exchange)| exchange.sides()[side].clone())
        .collect()
}

/// The metered gateway alone (`duel.v1.Inference` and the OpenAI face),
/// served on loopback as `referee local` serves it; dropped, it stops.
pub struct Gateway {
    /// The OpenAI face's base URL (`http://127.0.0.1:PORT/v1`).
    pub base: String,
    pub credentials: duel_referee::credentials::Credentials,
    _stop: oneshot::Sender<()>,
}

pub async fn serve_gateway() -> Gateway {
    serve_gateway_with(duel_referee::credentials::Credentials::new()).await
}

/// [`serve_gateway`] with these credentials.
pub async fn serve_gateway_with(credentials: duel_referee::credentials::Credentials) -> Gateway {
    let listener = loopback().await;
    let address = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(duel_referee::grpc::serve_inference(
        listener,
        credentials.clone(),
        async move {
            let _ = stopped.await;
        },
    ));
    Gateway {
        base: format!("http://{address}/v1"),
        credentials,
        _stop: stop,
    }
}

/// Waits until `check` holds, polling every few milliseconds, or fails the
/// test after 10 s naming `what`: a test waits for a state, never for a
/// guess of how long the state takes.
pub async fn until(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !check() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "waited 10 s for {what}"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Waits until the referee's health service says `duel.v1.Referee` is not
/// serving (shutdown has begun and new matches are refused).
pub async fn until_not_serving(referee: &Running) {
    let channel = tonic::transport::Channel::from_shared(referee.http_url())
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut health = tonic_health::pb::health_client::HealthClient::new(channel);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let status = health
            .check(tonic_health::pb::HealthCheckRequest {
                service: "duel.v1.Referee".into(),
            })
            .await
            .map(|answer| answer.into_inner().status)
            .ok();
        if status != Some(tonic_health::pb::health_check_response::ServingStatus::Serving as i32) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "waited 10 s for shutdown to begin"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}
