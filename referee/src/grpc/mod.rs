//! The referee's gRPC face: `duel.v1.Referee` and `duel.v1.Inference` served
//! together with health checking and reflection, operator authentication, and a
//! graceful shutdown that drains matches in flight. Beside it, optionally,
//! Prometheus metrics and the replay service over HTTP (live feeds of the
//! matches played here, then their signed replays).

pub use duel_match::convert;
pub mod matches;
pub mod metrics;
pub mod referee;
pub mod status;

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use duel_plumbing::grpc_listen;
pub use duel_plumbing::grpc_listen::GrpcLimits;
use duel_proto::v1::inference_server::InferenceServer;
use duel_proto::v1::referee_server::RefereeServer;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use subtle::ConstantTimeEq;
use tokio::net::TcpListener;

use crate::bots::InferenceLink;
use crate::credentials::Credentials;
use crate::error::RefereeError;
use crate::host::{HostConfig, MatchHost};
use crate::limits::{
    MAX_GRPC_MESSAGE_BYTES, MAX_OPERATOR_RATE_LIMITED_CLIENTS, OPERATOR_CALL_BURST_PER_CLIENT,
    OPERATOR_CALLS_PER_SECOND_PER_CLIENT,
};

pub use duel_gateway::inference::{self, InferenceService, gateway_routes};
pub use matches::{Matches, MatchesConfig, Publishing};
pub use referee::RefereeService;

/// The environment variable holding the operator token of `referee serve`.
pub const OPERATOR_TOKEN_ENV: &str = "DUEL_REFEREE_TOKEN";

/// How `referee serve` is set up. Its `Debug` never shows the operator token.
#[derive(Clone)]
pub struct ServeConfig {
    pub max_concurrent_matches: usize,
    /// How matches are built and played: the model gateway, WASM caches, TLS
    /// trust and endpoint policy. Its Inference link is set here, to this
    /// server's own service, and its WASM instance pool is sized for
    /// `max_concurrent_matches`.
    pub host: HostConfig,
    /// Required as `authorization: Bearer …` on Referee calls when set; must be
    /// set to listen beyond loopback.
    pub operator_token: Option<String>,
    /// The URL endpoint bots are told for Inference; by default
    /// `http://<listen address>`.
    pub public_url: Option<String>,
    pub replay_dir: Option<std::path::PathBuf>,
    pub shutdown_grace: Duration,
    /// Publish every match live and its signed replay into a store (served over
    /// HTTP when [`Listeners::http`] is given).
    pub publishing: Option<Publishing>,
    /// Connections and timeouts of the gRPC listener.
    pub grpc_limits: GrpcLimits,
    /// Connections, timeouts and per-client caps of the replay service.
    pub http_limits: crate::publish::HttpLimits,
}

impl std::fmt::Debug for ServeConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServeConfig")
            .field("max_concurrent_matches", &self.max_concurrent_matches)
            .field("host", &self.host)
            .field(
                "operator_token",
                &self.operator_token.as_ref().map(|_| "<redacted>"),
            )
            .field("public_url", &self.public_url)
            .field("replay_dir", &self.replay_dir)
            .field("shutdown_grace", &self.shutdown_grace)
            .field("publishing", &self.publishing)
            .field("grpc_limits", &self.grpc_limits)
            .field("http_limits", &self.http_limits)
            .finish()
    }
}

/// Where [`serve_listeners`] serves: gRPC, and optionally Prometheus metrics
/// and the replay service over HTTP.
#[derive(Debug)]
pub struct Listeners {
    pub grpc: TcpListener,
    pub metrics: Option<TcpListener>,
    /// Needs [`ServeConfig::publishing`]: its live feeds and store are served.
    pub http: Option<TcpListener>,
}

/// Checks the operator token on Referee calls (health, reflection and
/// Inference have their own rules), within a rate per client address counted
/// before the token ([`OPERATOR_CALLS_PER_SECOND_PER_CLIENT`], burst
/// [`OPERATOR_CALL_BURST_PER_CLIENT`]), so the door cannot be tried at will.
#[derive(Clone)]
struct OperatorAuth {
    token: Option<std::sync::Arc<str>>,
    tries: std::sync::Arc<OperatorTries>,
}

/// The operator door's calls per client key.
struct OperatorTries {
    limiter: DefaultKeyedRateLimiter<IpAddr>,
    calls: AtomicU64,
}

impl OperatorAuth {
    fn new(token: Option<&str>) -> OperatorAuth {
        let per_second =
            NonZeroU32::new(OPERATOR_CALLS_PER_SECOND_PER_CLIENT).unwrap_or(NonZeroU32::MIN);
        let burst = NonZeroU32::new(OPERATOR_CALL_BURST_PER_CLIENT).unwrap_or(NonZeroU32::MIN);
        OperatorAuth {
            token: token.map(std::sync::Arc::from),
            tries: std::sync::Arc::new(OperatorTries {
                limiter: RateLimiter::keyed(Quota::per_second(per_second).allow_burst(burst)),
                calls: AtomicU64::new(0),
            }),
        }
    }

    /// Takes one call of `peer`'s allowance, or says how long to wait.
    fn take(&self, peer: IpAddr) -> Result<(), tonic::Status> {
        let tries = &self.tries;
        if tries
            .calls
            .fetch_add(1, Ordering::Relaxed)
            .is_multiple_of(4_096)
            && tries.limiter.len() > MAX_OPERATOR_RATE_LIMITED_CLIENTS
        {
            tries.limiter.retain_recent();
        }
        let key = duel_plumbing::clients::client_key(peer);
        tries.limiter.check_key(&key).map_err(|not_until| {
            let wait = not_until.wait_time_from(DefaultClock::default().now());
            tonic::Status::resource_exhausted(format!(
                "rate limit: more than {OPERATOR_CALLS_PER_SECOND_PER_CLIENT} calls a second \
                 (burst {OPERATOR_CALL_BURST_PER_CLIENT}) from {key}; retry in {} ms",
                wait.as_millis().max(1)
            ))
        })
    }
}

impl tonic::service::Interceptor for OperatorAuth {
    fn call(&mut self, request: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        let Some(expected) = &self.token else {
            return Ok(request);
        };
        if let Some(peer) = request.remote_addr() {
            self.take(peer.ip())?;
        }
        match inference::bearer(&request) {
            Some(given) if bool::from(given.as_bytes().ct_eq(expected.as_bytes())) => Ok(request),
            Some(_) => Err(tonic::Status::unauthenticated("wrong operator token")),
            None => Err(tonic::Status::unauthenticated(
                "missing `authorization: Bearer <token>` (the operator token)",
            )),
        }
    }
}

/// Serves `duel.v1.Referee`, `duel.v1.Inference`, `grpc.health.v1.Health` and
/// reflection on `listener` until `shutdown` resolves; then refuses new matches,
/// drains the ones in flight (aborting them after the grace period) and stops.
pub async fn serve(
    listener: TcpListener,
    config: ServeConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), RefereeError> {
    serve_with_metrics(listener, None, config, shutdown).await
}

/// [`serve`], also serving Prometheus `GET /metrics` on `metrics_listener`.
pub async fn serve_with_metrics(
    listener: TcpListener,
    metrics_listener: Option<TcpListener>,
    config: ServeConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), RefereeError> {
    serve_listeners(
        Listeners {
            grpc: listener,
            metrics: metrics_listener,
            http: None,
        },
        config,
        shutdown,
    )
    .await
}

/// [`serve`] on every listener given. The HTTP replay service stops after the
/// gRPC server, so spectators see the matches drained at shutdown end (or
/// abort).
pub async fn serve_listeners(
    listeners: Listeners,
    config: ServeConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), RefereeError> {
    let Listeners {
        grpc: listener,
        metrics: metrics_listener,
        http: http_listener,
    } = listeners;
    let address: SocketAddr = listener.local_addr().map_err(RefereeError::LocalAddr)?;
    if !address.ip().is_loopback() && config.operator_token.is_none() {
        return Err(RefereeError::Config(format!(
            "listening on {address} (beyond loopback) needs an operator token in {OPERATOR_TOKEN_ENV}"
        )));
    }
    let credentials = Credentials::new();
    let public_url = config
        .public_url
        .clone()
        .unwrap_or_else(|| format!("http://{address}"));
    // WASM instances from a pool sized for the matches allowed at once (capped;
    // beyond it, on demand).
    let mut host_config = config
        .host
        .clone()
        .playing_at_once(config.max_concurrent_matches);
    host_config.inference = Some(InferenceLink {
        url: public_url,
        credentials: credentials.clone(),
    });
    // The host loads the tokenizer (a few hundred ms) before any match starts.
    let host = tokio::task::spawn_blocking(move || MatchHost::new(host_config))
        .await
        .map_err(RefereeError::HostStart)?;
    let matches = Matches::new(MatchesConfig {
        max_concurrent_matches: config.max_concurrent_matches,
        host,
        replay_dir: config.replay_dir.clone(),
        publishing: config.publishing.clone(),
    });
    let http_stop = tokio_util::sync::CancellationToken::new();
    if let Some(http_listener) = http_listener {
        let Some(publishing) = &config.publishing else {
            return Err(RefereeError::Config(
                "an HTTP listener needs publishing (a replay store and a signing key)".to_owned(),
            ));
        };
        let state = crate::publish::PublishState::new(
            publishing.store.clone(),
            publishing.signing_key.verifying_key(),
            publishing.live.clone(),
            crate::publish::RateConfig::default(),
        );
        if let Ok(http_address) = http_listener.local_addr() {
            tracing::info!(%http_address, store = publishing.store.description(), "replay service listening");
        }
        let stop = http_stop.clone();
        let limits = config.http_limits.clone();
        tokio::spawn(async move {
            if let Err(error) =
                crate::publish::serve(http_listener, state, limits, stop.cancelled_owned()).await
            {
                tracing::error!(%error, "the replay service stopped");
            }
        });
    }
    let _stop_http = http_stop.drop_guard();
    let metrics_stop = tokio_util::sync::CancellationToken::new();
    if let Some(metrics_listener) = metrics_listener {
        let matches = matches.clone();
        let stop = metrics_stop.clone();
        let limits = config.http_limits.clone();
        tokio::spawn(async move {
            duel_plumbing::metrics::serve_metrics(
                metrics_listener,
                move || matches.render_metrics(),
                limits,
                stop.cancelled_owned(),
            )
            .await;
        });
    }
    let _stop_metrics = metrics_stop.drop_guard();
    let (health_reporter, health_service) = tonic_health::server::health_reporter();
    health_reporter
        .set_serving::<RefereeServer<RefereeService>>()
        .await;
    health_reporter
        .set_serving::<InferenceServer<InferenceService>>()
        .await;
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(duel_proto::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1()
        .map_err(RefereeError::Reflection)?;
    let auth = OperatorAuth::new(config.operator_token.as_deref());
    let referee = RefereeServer::new(RefereeService::new(matches.clone()))
        .max_decoding_message_size(MAX_GRPC_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_GRPC_MESSAGE_BYTES);
    let referee = tonic::service::interceptor::InterceptedService::new(referee, auth);
    // Capped, with handshake and idle deadlines; no delay on each stream
    // (`serve_with_incoming` ignores `Server::tcp_nodelay`).
    let incoming = grpc_listen::incoming(listener, config.grpc_limits);
    let grace = config.shutdown_grace;
    let drained = {
        let matches = matches.clone();
        let health_reporter = health_reporter.clone();
        async move {
            shutdown.await;
            tracing::info!("shutting down: refusing new matches");
            health_reporter
                .set_not_serving::<RefereeServer<RefereeService>>()
                .await;
            matches.drain(grace).await;
            tracing::info!("every match has ended; stopping");
        }
    };
    tracing::info!(%address, max_concurrent_matches = config.max_concurrent_matches, "referee listening");
    // HTTP/1.1 as well as HTTP/2: the OpenAI face's clients (httpx, the
    // official SDKs) speak HTTP/1.1 by default.
    config
        .grpc_limits
        .server()
        .add_routes(gateway_routes(credentials))
        .add_service(health_service)
        .add_service(reflection)
        .add_service(referee)
        .serve_with_incoming_shutdown(incoming, drained)
        .await
        .map_err(RefereeError::Stopped)
}

/// Serves only the metered gateway on `listener` (`referee local` with
/// endpoint bots).
pub async fn serve_inference(
    listener: TcpListener,
    credentials: Credentials,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), RefereeError> {
    Ok(duel_gateway::serve_inference(listener, credentials, shutdown).await?)
}

/// [`serve_inference`] under `limits` (ladder workers take them from flags).
pub async fn serve_inference_within(
    listener: TcpListener,
    credentials: Credentials,
    limits: GrpcLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), RefereeError> {
    Ok(duel_gateway::serve_inference_within(listener, credentials, limits, shutdown).await?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::service::Interceptor;
    use tonic::transport::server::TcpConnectInfo;

    fn call(auth: &mut OperatorAuth, peer: &str, token: &str) -> tonic::Code {
        let mut request = tonic::Request::new(());
        request.extensions_mut().insert(TcpConnectInfo {
            local_addr: None,
            remote_addr: Some(peer.parse().expect("address")),
        });
        let bearer = format!("Bearer {token}").parse().expect("metadata");
        request.metadata_mut().insert("authorization", bearer);
        match auth.call(request) {
            Ok(_) => tonic::Code::Ok,
            Err(status) => status.code(),
        }
    }

    /// `referee serve`'s operator door answered every wrong token at once
    /// once: now one address gets the burst, then RESOURCE_EXHAUSTED
    /// before its token is compared; another address, or another /64, still
    /// reaches the comparison.
    #[test]
    fn the_operator_door_is_rate_limited_per_client() {
        let mut auth = OperatorAuth::new(Some("the-operator-token"));
        let burst = usize::try_from(OPERATOR_CALL_BURST_PER_CLIENT).expect("small");
        let started = std::time::Instant::now();
        let mut wrong = 0;
        let refused = loop {
            match call(&mut auth, "192.0.2.7:5000", "guess") {
                tonic::Code::Unauthenticated => wrong += 1,
                other => break other,
            }
            assert!(wrong <= 10 * burst, "never limited");
        };
        assert_eq!(refused, tonic::Code::ResourceExhausted);
        let refilled =
            started.elapsed().as_secs_f64() * f64::from(OPERATOR_CALLS_PER_SECOND_PER_CLIENT);
        assert!(
            wrong >= burst && wrong as f64 <= burst as f64 + refilled + 1.0,
            "{wrong}"
        );
        // Limited before the comparison: the right token waits too.
        assert_eq!(
            call(&mut auth, "192.0.2.7:5001", "the-operator-token"),
            tonic::Code::ResourceExhausted
        );
        assert_eq!(
            call(&mut auth, "192.0.2.8:5000", "guess"),
            tonic::Code::Unauthenticated
        );
        assert_eq!(
            call(&mut auth, "[2001:db8:1::1]:5000", "the-operator-token"),
            tonic::Code::Ok
        );
        // Without a token set (loopback only) there is no door and no count.
        let mut open = OperatorAuth::new(None);
        for _ in 0..(2 * burst) {
            assert_eq!(
                call(&mut open, "127.0.0.1:5000", "anything"),
                tonic::Code::Ok
            );
        }
    }
}
