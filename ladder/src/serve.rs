//! `ladder serve`: the gRPC API (with `duel.v1.Inference` for endpoint bots),
//! in-process workers, the matchmaking wave timer and, on its own address, the
//! public replay service over HTTP with Duel TV — all over one database,
//! stopped together by one shutdown signal.
//! Architecture invariant: the server owns no state of its own; everything lives in
//! the store (and the replay store), so any number of `ladder worker` processes
//! may share the database.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use duel_referee::credentials::Credentials;
use duel_referee::grpc::metrics::metrics_router;
use duel_referee::publish::{self, HttpLimits, LiveFeeds, PublishState, RateConfig};
use duel_referee::{HostConfig, InferenceLink, MatchHost};
use duel_replays::SigningKey;
use duel_replays::store::ReplayStore;
use duel_rules::WeightClass;
use tokio::sync::watch;

use crate::error::{LadderError, Result};
use crate::gate::{ApiLimits, Gate};
use crate::ladder::Ladder;
use crate::metrics::LadderMetrics;
use crate::model::OwnerQuotas;
use crate::store::Store;
use crate::tv::{self, DuelTv, TvConfig};
use crate::worker::{self, BotFactory, LadderFactory, WorkerConfig};

/// What `ladder serve` runs.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    pub db_url: String,
    /// The gRPC API (and `duel.v1.Inference`).
    pub listen: SocketAddr,
    /// The public replay service (HTTP); `None` runs none.
    pub http: Option<SocketAddr>,
    /// The replay store: a folder, `file:///path` or `s3://bucket/prefix`.
    pub replays: String,
    /// Signs every replay; its public key is served at `GET /public-key`.
    pub signing_key: Arc<SigningKey>,
    /// In-process workers; 0 leaves all matches to `ladder worker` processes.
    pub workers: usize,
    pub wave_interval: Duration,
    /// An active bot is back in the waves no sooner than this after its last
    /// match settled (`--match-interval-ms`).
    pub match_interval: Duration,
    /// Accept endpoint bots on loopback and private addresses.
    pub allow_private_endpoints: bool,
    /// How matches are built and played (the metered model gateway, the WASM
    /// cache, TLS trust); its Inference link is set here, to this server.
    pub host: HostConfig,
    /// The Inference URL endpoint bots are told; by default `http://<listen>`.
    pub public_url: Option<String>,
    /// Rates and upload turns of the API.
    pub api: ApiLimits,
    /// What each owner may keep and spend.
    pub quotas: OwnerQuotas,
    /// Uploads validated (compiled) at once; more wait for a turn.
    pub max_concurrent_compiles: std::num::NonZeroUsize,
    /// Connections and timeouts of the replay service (`http`).
    pub http_limits: HttpLimits,
    /// The pace of Duel TV, broadcast on `http` (`/tv`).
    pub tv: TvConfig,
}

/// The addresses `ladder serve` listens on (port 0 picks one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bound {
    pub grpc: SocketAddr,
    pub http: Option<SocketAddr>,
}

async fn bind(address: SocketAddr, what: &str) -> Result<(tokio::net::TcpListener, SocketAddr)> {
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|error| {
            LadderError::Io(format!("cannot listen on {address} ({what}): {error}"))
        })?;
    let local = listener
        .local_addr()
        .map_err(|error| LadderError::Io(format!("{what} socket: {error}")))?;
    Ok((listener, local))
}

/// Runs until `shutdown` turns true: then stops accepting calls, lets the workers
/// finish or abandon their current match (its lease makes it re-run) and returns.
/// `bound` receives the addresses actually listened on.
pub async fn serve(
    config: ServeConfig,
    shutdown: watch::Receiver<bool>,
    bound: Option<tokio::sync::oneshot::Sender<Bound>>,
) -> Result<()> {
    let store = Store::connect(&config.db_url).await?;
    // One object per replay: the listing is the settled matches (issue 15).
    let replays = ReplayStore::open(&config.replays)?.without_index();
    let credentials = Credentials::new();
    let (listener, grpc_address) = bind(config.listen, "gRPC").await?;
    // Each in-process worker plays one match at a time: a WASM instance pool
    // for that many (beyond it, on demand).
    let mut host_config =
        worker::ladder_host_config(config.host.clone(), config.allow_private_endpoints)
            .playing_at_once(config.workers);
    host_config.inference = Some(InferenceLink {
        url: config
            .public_url
            .clone()
            .unwrap_or_else(|| format!("http://{grpc_address}")),
        credentials: credentials.clone(),
    });
    // Loads the tokenizer (when a model is configured) before any match.
    let host = tokio::task::spawn_blocking(move || MatchHost::new(host_config))
        .await
        .map_err(|error| LadderError::Io(format!("cannot start the match host: {error}")))?;
    let ladder = Arc::new(
        Ladder::new(store.clone(), host.clone(), config.allow_private_endpoints)
            .with_quotas(config.quotas)
            .with_max_concurrent_compiles(config.max_concurrent_compiles.get()),
    );
    let http = match config.http {
        Some(address) => Some(bind(address, "HTTP").await?),
        None => None,
    };
    let http_address = http.as_ref().map(|(_, address)| *address);
    tracing::info!(
        address = %grpc_address,
        replays_http = %http_address.map_or_else(|| "off".to_owned(), |address| address.to_string()),
        backend = store.backend(),
        replays = replays.description(),
        public_key = %duel_replays::public_key_text(&config.signing_key.verifying_key()),
        "ladder serving"
    );
    if let Some(bound) = bound {
        let _ = bound.send(Bound {
            grpc: grpc_address,
            http: http_address,
        });
    }

    let live = LiveFeeds::new();
    let metrics = LadderMetrics::new();
    let mut tasks = Vec::new();
    let factory: Arc<dyn BotFactory> = Arc::new(LadderFactory::new(
        store.clone(),
        host.clone(),
        config.allow_private_endpoints,
    ));
    for _ in 0..config.workers {
        let mut worker_config = WorkerConfig::new(
            host.clone(),
            replays.clone(),
            Arc::clone(&config.signing_key),
        );
        worker_config.live = Some(live.clone());
        worker_config.metrics = Some(Arc::clone(&metrics));
        tasks.push(tokio::spawn(worker::run(
            store.clone(),
            Arc::clone(&factory),
            worker_config,
            shutdown.clone(),
        )));
    }
    tasks.push(tokio::spawn(wave_timer(
        store.clone(),
        config.wave_interval,
        config.match_interval,
        Arc::clone(&metrics),
        shutdown.clone(),
    )));
    if let Some((listener, _)) = http {
        // Duel TV replays settled matches at a watchable pace (`/tv`), each
        // also a live feed while it airs.
        let duel_tv = DuelTv::new(
            store.clone(),
            replays.clone(),
            Some(live.clone()),
            config.tv,
        );
        tasks.push(tokio::spawn(duel_tv.clone().run(shutdown.clone())));
        let state = PublishState::with_index(
            replays.clone(),
            config.signing_key.verifying_key(),
            live,
            RateConfig::default(),
            Arc::new(crate::store::LadderReplayIndex(store.clone())),
        );
        let mut stop = shutdown.clone();
        let http_limits = config.http_limits;
        let site_store = store.clone();
        let metrics_host = host.clone();
        tasks.push(tokio::spawn(async move {
            let stopped = async move {
                let _ = stop.wait_for(|stopped| *stopped).await;
            };
            // The replay service, this process's `/metrics` beside it, Duel TV,
            // and the public site (pages and their JSON twins) over the store.
            let router = publish::router(state)
                .merge(metrics_router(move || {
                    metrics.render(&metrics_host.wasm_stats())
                }))
                .merge(tv::router(duel_tv))
                .merge(crate::site::router(site_store));
            if let Err(error) = publish::serve_router(listener, router, http_limits, stopped).await
            {
                tracing::error!(%error, "the replay HTTP service stopped");
            }
        }));
    }

    let (health, health_service) = tonic_health::server::health_reporter();
    health.set_serving::<Gate>().await;
    // Rate limits and the token are checked before a body is read; only
    // uploads are decoded at the upload size (gate.rs).
    let ladder_service = Gate::new(ladder, config.api);
    let mut stop = shutdown.clone();
    // The metered gateway (Inference and its OpenAI-compatible face, whose
    // clients speak HTTP/1.1) beside the ladder's own API.
    let served = tonic::transport::Server::builder()
        .accept_http1(true)
        .add_routes(duel_referee::grpc::gateway_routes(credentials))
        .add_service(health_service)
        .add_service(ladder_service)
        .serve_with_incoming_shutdown(
            // `serve_with_incoming` ignores `Server::tcp_nodelay`: endpoint
            // bots' Inference calls are small messages that Nagle would delay.
            tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true)),
            async move {
                let _ = stop.wait_for(|stopped| *stopped).await;
            },
        )
        .await;
    for task in tasks {
        let _ = task.await;
    }
    store.close().await;
    served.map_err(|error| LadderError::Io(format!("gRPC server: {error}")))
}

/// Runs one pairing wave per class every `interval`; active bots rest
/// `match_interval` after each match.
async fn wave_timer(
    store: Store,
    interval: Duration,
    match_interval: Duration,
    metrics: Arc<LadderMetrics>,
    mut shutdown: watch::Receiver<bool>,
) {
    let match_interval_ms = u64::try_from(match_interval.as_millis()).unwrap_or(u64::MAX);
    while !*shutdown.borrow() {
        // Between seasons there is nothing to pair; the queue waits.
        let season_running = match store.active_season().await {
            Ok(season) => season.is_some(),
            Err(error) => {
                tracing::error!(%error, "reading the running season");
                false
            }
        };
        for class in WeightClass::ALL.into_iter().filter(|_| season_running) {
            match store.run_wave_paced(class, match_interval_ms).await {
                Ok(report) => {
                    // The pool less the bots paired or dropped: who is left.
                    let left = report
                        .waiting
                        .saturating_sub(2 * report.matches.len() + report.dropped.len());
                    metrics.wave(class, report.matches.len(), left);
                    log_wave(class, &report);
                }
                Err(error) => {
                    metrics.error(&error);
                    tracing::error!(%error, class = class.name(), "pairing wave failed");
                }
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = shutdown.changed() => {}
        }
    }
}

/// One line per wave that had anyone to pair (info), else debug.
fn log_wave(class: WeightClass, report: &crate::store::WaveReport) {
    let (class, season, pool, pairs, at_ms, wave_ms) = (
        class.name(),
        report.season.as_str(),
        report.waiting,
        report.matches.len(),
        report.at_ms,
        report.duration_ms,
    );
    let (dropped, paused) = (report.dropped.len(), report.paused.len());
    if pool > 0 {
        tracing::info!(
            class, season, pool, pairs, dropped, paused, at_ms, wave_ms, "wave"
        );
    } else {
        tracing::debug!(class, season, pool, pairs, at_ms, wave_ms, "wave");
    }
}
