//! `ladder serve` ([`serve`]): the gRPC API (with `duel.v1.Inference` for
//! endpoint bots), in-process workers, the matchmaking wave timer and, on its
//! own address, the public replay service over HTTP with whatever the caller
//! mounts beside it (the CLI mounts the public site and Duel TV) — all over
//! one database, stopped together by one shutdown signal. `ladder worker`
//! ([`work`]): the same workers without the API.
//!
//! Architecture invariant: the server owns no state of its own; everything lives in
//! the store (and the replay store), so any number of `ladder worker` processes
//! may share the database.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use duel_plumbing::grpc_listen::{self, GrpcLimits};
use duel_plumbing::metrics::metrics_router;
use duel_referee::credentials::Credentials;
use duel_referee::publish::{self, HttpLimits, LiveFeeds, PublishState, RateConfig};
use duel_referee::{HostConfig, InferenceLink, MatchHost};
use duel_replays::SigningKey;
use duel_replays::store::ReplayStore;
use duel_rules::WeightClass;
use tokio::sync::watch;

use crate::error::{Result, ServiceError};
use crate::gate::{ApiLimits, Gate};
use crate::ladder::Ladder;
use crate::limits::{
    LOG_PRUNE_INTERVAL, SEASON_FIT_MIN_INTERVAL, SEASON_FIT_SPACING_FACTOR, STORE_GAUGES_REFRESH,
};
use crate::metrics::LadderMetrics;
use crate::model::{LogLimits, OwnerQuotas, TranscriptLimits};
use crate::reveal::RevealPolicy;
use crate::store::Store;
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
    /// The forced opening ranked matches are accepted with from now on, in
    /// exchanges (`--ranked-openings`; `None` keeps the stored setting).
    pub ranked_openings: Option<u8>,
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
    /// Connections and timeouts of the gRPC API (`listen`).
    pub grpc_limits: GrpcLimits,
    /// What `http` serves beside the replay service and `/metrics`.
    pub public_site: Option<MountSite>,
    /// How long bots' logs are kept and how much one owner keeps.
    pub log_limits: LogLimits,
    /// How long transcripts are kept and how much one owner keeps.
    pub transcript_limits: TranscriptLimits,
    /// How long the in-process workers hold a match between heartbeats
    /// (`--lease-ms`; [`crate::limits::DEFAULT_LEASE_MS`]).
    pub lease_ms: i64,
    /// When transcripts become public (`--reveal-transcripts`): the API and
    /// the site read it alike (core::reveal).
    pub reveal: RevealPolicy,
}

/// What the HTTP listener gives the pages mounted beside the replay service:
/// read access to the ladder, the replays, the live feeds of matches being
/// played, and the shutdown signal for any task they run.
#[derive(Debug)]
pub struct SiteParts {
    pub reads: crate::store::Reads,
    pub replays: ReplayStore,
    pub live: LiveFeeds,
    pub shutdown: watch::Receiver<bool>,
}

/// Routes and the tasks behind them (Duel TV's broadcast), awaited at shutdown.
#[derive(Debug)]
pub struct MountedSite {
    pub router: axum::Router,
    pub tasks: Vec<tokio::task::JoinHandle<()>>,
}

/// Builds the pages `ladder serve --http` serves beside the replay service.
/// The CLI passes the public site and Duel TV (`duel-ladder-site`), so that a
/// page's change rebuilds the site and the CLI, not this crate.
#[derive(Clone)]
pub struct MountSite(pub Arc<dyn Fn(SiteParts) -> MountedSite + Send + Sync>);

impl std::fmt::Debug for MountSite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MountSite")
    }
}

/// The addresses `ladder serve` listens on (port 0 picks one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bound {
    pub grpc: SocketAddr,
    pub http: Option<SocketAddr>,
}

async fn bind(
    address: SocketAddr,
    what: &'static str,
) -> Result<(tokio::net::TcpListener, SocketAddr)> {
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|source| ServiceError::Listen {
            address,
            what,
            source,
        })?;
    let local = listener
        .local_addr()
        .map_err(|source| ServiceError::Socket { what, source })?;
    Ok((listener, local))
}

/// A future that resolves once `shutdown` turns true.
async fn stopped(mut shutdown: watch::Receiver<bool>) {
    let _ = shutdown.wait_for(|stopped| *stopped).await;
}

/// Keeps `duel_ladder_store_matches` current for a process that serves
/// `/metrics`: the database's counts every [`STORE_GAUGES_REFRESH`], until
/// shutdown. A failed read is logged and counted; the gauges keep their last
/// values.
fn refresh_store_gauges(
    store: Store,
    metrics: Arc<LadderMetrics>,
    shutdown: watch::Receiver<bool>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(STORE_GAUGES_REFRESH);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let stop = stopped(shutdown);
        tokio::pin!(stop);
        loop {
            tokio::select! {
                _ = ticks.tick() => {}
                () = &mut stop => return,
            }
            match store.status().await {
                Ok(status) => metrics.store_counts(&status.classes),
                Err(error) => {
                    let error = ServiceError::from(error);
                    metrics.error(&error);
                    tracing::warn!(error = %error.line(), "reading match counts for /metrics");
                }
            }
        }
    })
}

/// Drops bots' logs and transcript parts past their retention now and every
/// [`LOG_PRUNE_INTERVAL`] until `shutdown` (every process that plays or
/// serves does; a second pruner finds nothing to drop).
fn prune_kept(
    store: Store,
    replays: ReplayStore,
    shutdown: watch::Receiver<bool>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(LOG_PRUNE_INTERVAL);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let stop = stopped(shutdown);
        tokio::pin!(stop);
        loop {
            tokio::select! {
                _ = ticks.tick() => {}
                () = &mut stop => return,
            }
            match store.prune_logs().await {
                Ok(0) => {}
                Ok(rows) => tracing::info!(rows, "dropped bots' logs past their retention"),
                Err(error) => tracing::warn!(%error, "cannot drop bots' logs past their retention"),
            }
            match store.prune_transcripts(&replays).await {
                Ok(0) => {}
                Ok(parts) => tracing::info!(parts, "dropped transcript parts past their retention"),
                Err(error) => {
                    tracing::warn!(%error, "cannot drop transcript parts past their retention");
                }
            }
        }
    })
}

/// The match host for `workers` workers at once (a WASM instance pool for
/// that many; beyond it, on demand), with the ladder's endpoint policy and
/// `inference` as the gateway endpoint bots are told. The tokenizer (when a
/// model is configured) loads here, before any match.
async fn start_host(
    host: HostConfig,
    allow_private_endpoints: bool,
    workers: usize,
    inference: Option<InferenceLink>,
) -> Result<MatchHost> {
    let mut host_config =
        worker::ladder_host_config(host, allow_private_endpoints).playing_at_once(workers);
    host_config.inference = inference;
    tokio::task::spawn_blocking(move || MatchHost::new(host_config))
        .await
        .map_err(ServiceError::HostStart)
}

/// The replay store, one object per replay: the listing is the settled
/// matches, read from the database.
fn open_replays(url: &str) -> Result<ReplayStore> {
    Ok(ReplayStore::open(url)?.without_index())
}

/// Runs until `shutdown` turns true: then stops accepting calls, lets the workers
/// finish or abandon their current match (its lease makes it re-run) and returns.
/// `bound` receives the addresses actually listened on.
pub async fn serve(
    config: ServeConfig,
    shutdown: watch::Receiver<bool>,
    bound: Option<tokio::sync::oneshot::Sender<Bound>>,
) -> Result<()> {
    let store = Store::connect(&config.db_url)
        .await?
        .with_log_limits(config.log_limits)
        .with_transcript_limits(config.transcript_limits);
    if let Some(exchanges) = config.ranked_openings {
        if usize::from(exchanges) > duel_replays::MAX_OPENING_EXCHANGES {
            return Err(crate::store::LadderError::Invalid(format!(
                "a ranked opening of {exchanges} exchanges is longer than {}",
                duel_replays::MAX_OPENING_EXCHANGES
            ))
            .into());
        }
        store
            .set_setting(
                crate::limits::OPENING_EXCHANGES_SETTING,
                i64::from(exchanges),
            )
            .await?;
    }
    let replays = open_replays(&config.replays)?;
    let credentials = Credentials::new();
    let (listener, grpc_address) = bind(config.listen, "gRPC").await?;
    let inference = InferenceLink {
        url: config
            .public_url
            .clone()
            .unwrap_or_else(|| format!("http://{grpc_address}")),
        credentials: credentials.clone(),
    };
    let host = start_host(
        config.host.clone(),
        config.allow_private_endpoints,
        config.workers,
        Some(inference),
    )
    .await?;
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
    let running = Running {
        store,
        replays,
        host,
        live: LiveFeeds::new(),
        metrics: LadderMetrics::new(),
        shutdown,
    };
    let mut tasks = running.workers(&config);
    tasks.push(prune_kept(
        running.store.clone(),
        running.replays.clone(),
        running.shutdown.clone(),
    ));
    tasks.push(tokio::spawn(wave_timer(
        running.store.clone(),
        config.wave_interval,
        config.match_interval,
        Arc::clone(&running.metrics),
        running.shutdown.clone(),
    )));
    if let Some((listener, _)) = http {
        tasks.extend(running.serve_http(listener, &config));
    }
    let served = running.serve_grpc(listener, credentials, &config).await;
    for task in tasks {
        let _ = task.await;
    }
    running.store.close().await;
    served
}

/// What one `ladder serve` process runs on, shared by its parts.
struct Running {
    store: Store,
    replays: ReplayStore,
    host: MatchHost,
    live: LiveFeeds,
    metrics: Arc<LadderMetrics>,
    shutdown: watch::Receiver<bool>,
}

impl Running {
    /// The in-process workers (none for 0), publishing into the live feeds.
    fn workers(&self, serve: &ServeConfig) -> Vec<tokio::task::JoinHandle<()>> {
        if serve.workers == 0 {
            return Vec::new();
        }
        let factory: Arc<dyn BotFactory> = Arc::new(LadderFactory::new(
            self.store.clone(),
            self.host.clone(),
            serve.allow_private_endpoints,
        ));
        let mut config = WorkerConfig::new(
            self.host.clone(),
            self.replays.clone(),
            Arc::clone(&serve.signing_key),
        )
        .with_lease(serve.lease_ms);
        config.live = Some(self.live.clone());
        config.metrics = Some(Arc::clone(&self.metrics));
        worker::spawn_pool(
            &self.store,
            &factory,
            &config,
            serve.workers,
            &self.shutdown,
        )
    }

    /// The replay service on `listener`, this process's `/metrics` beside it,
    /// then the pages the caller mounts (the public site and Duel TV).
    fn serve_http(
        &self,
        listener: tokio::net::TcpListener,
        config: &ServeConfig,
    ) -> Vec<tokio::task::JoinHandle<()>> {
        let state = PublishState::with_index(
            self.replays.clone(),
            config.signing_key.verifying_key(),
            self.live.clone(),
            RateConfig::default(),
            Arc::new(crate::store::LadderReplayIndex(self.store.reads())),
        );
        let (metrics, host) = (Arc::clone(&self.metrics), self.host.clone());
        let mut router = publish::router(state)
            .merge(metrics_router(move || metrics.render(&host.wasm_stats())));
        let mut tasks = vec![refresh_store_gauges(
            self.store.clone(),
            Arc::clone(&self.metrics),
            self.shutdown.clone(),
        )];
        if let Some(MountSite(mount)) = &config.public_site {
            let mounted = mount(SiteParts {
                reads: self.store.reads(),
                replays: self.replays.clone(),
                live: self.live.clone(),
                shutdown: self.shutdown.clone(),
            });
            router = router.merge(mounted.router);
            tasks.extend(mounted.tasks);
        }
        let (limits, stop) = (config.http_limits.clone(), stopped(self.shutdown.clone()));
        tasks.push(tokio::spawn(async move {
            if let Err(error) = publish::serve_router(listener, router, limits, stop).await {
                tracing::error!(%error, "the replay HTTP service stopped");
            }
        }));
        tasks
    }

    /// The ladder's gRPC API behind its gate, with the metered gateway
    /// (Inference and its OpenAI-compatible face, whose clients speak
    /// HTTP/1.1) and health beside it, until shutdown.
    async fn serve_grpc(
        &self,
        listener: tokio::net::TcpListener,
        credentials: Credentials,
        config: &ServeConfig,
    ) -> Result<()> {
        let ladder = Arc::new(
            Ladder::new(
                self.store.clone(),
                self.host.clone(),
                config.allow_private_endpoints,
            )
            .with_quotas(config.quotas)
            .with_max_concurrent_compiles(config.max_concurrent_compiles.get())
            .with_replays(self.replays.clone())
            .with_reveal(config.reveal),
        );
        let (health, health_service) = tonic_health::server::health_reporter();
        health.set_serving::<Gate>().await;
        // Rate limits and the token are checked before a body is read; only
        // uploads are decoded at the upload size (gate.rs).
        let ladder_service = Gate::new(ladder, config.api);
        config
            .grpc_limits
            .server()
            .add_routes(duel_referee::grpc::gateway_routes(credentials))
            .add_service(health_service)
            .add_service(ladder_service)
            .serve_with_incoming_shutdown(
                // Capped, with handshake and idle deadlines, no delay per stream.
                grpc_listen::incoming(listener, config.grpc_limits),
                stopped(self.shutdown.clone()),
            )
            .await
            .map_err(ServiceError::Grpc)
    }
}

/// What `ladder worker` runs: workers over a ladder's database, without its API.
#[derive(Clone, Debug)]
pub struct WorkConfig {
    pub db_url: String,
    /// The replay store: a folder, `file:///path` or `s3://bucket/prefix`.
    pub replays: String,
    /// Signs every replay; the same key as every other worker of the ladder.
    pub signing_key: Arc<SigningKey>,
    /// Workers in this process (at least one).
    pub workers: usize,
    /// Accept endpoint bots on loopback and private addresses.
    pub allow_private_endpoints: bool,
    /// How matches are built and played (the metered model gateway, the WASM
    /// cache, TLS trust).
    pub host: HostConfig,
    /// Serve the metered gateway for endpoint bots here; without it, endpoint
    /// bots get no model credential.
    pub inference_listen: Option<SocketAddr>,
    /// The Inference URL endpoint bots are told; by default
    /// `http://<inference_listen>`.
    pub public_url: Option<String>,
    /// Serve this process's `/metrics` here.
    pub metrics_listen: Option<SocketAddr>,
    /// Connections and timeouts of `inference_listen`.
    pub grpc_limits: GrpcLimits,
    /// How long bots' logs are kept and how much one owner keeps.
    pub log_limits: LogLimits,
    /// How long transcripts are kept and how much one owner keeps.
    pub transcript_limits: TranscriptLimits,
    /// How long each worker holds a match between heartbeats (`--lease-ms`).
    pub lease_ms: i64,
}

/// Runs `ladder worker` until `shutdown` turns true, then lets each worker
/// finish or abandon its match (its lease makes it re-run) and returns.
pub async fn work(config: WorkConfig, shutdown: watch::Receiver<bool>) -> Result<()> {
    let replays = open_replays(&config.replays)?;
    let store = Store::connect(&config.db_url)
        .await?
        .with_log_limits(config.log_limits)
        .with_transcript_limits(config.transcript_limits);
    let inference = match config.inference_listen {
        Some(address) => Some(
            serve_inference(
                address,
                config.public_url.clone(),
                config.grpc_limits,
                shutdown.clone(),
            )
            .await?,
        ),
        None => None,
    };
    let inference_url = inference.as_ref().map(|link| link.url.clone());
    let workers = config.workers.max(1);
    let host = start_host(
        config.host,
        config.allow_private_endpoints,
        workers,
        inference,
    )
    .await?;
    let metrics = LadderMetrics::new();
    let mut tasks = vec![prune_kept(store.clone(), replays.clone(), shutdown.clone())];
    let mut metrics_address = None;
    if let Some(address) = config.metrics_listen {
        let (listener, bound) = bind(address, "metrics").await?;
        metrics_address = Some(bound);
        tasks.push(refresh_store_gauges(
            store.clone(),
            Arc::clone(&metrics),
            shutdown.clone(),
        ));
        let (metrics, host) = (Arc::clone(&metrics), host.clone());
        tasks.push(tokio::spawn(duel_plumbing::metrics::serve_metrics(
            listener,
            move || metrics.render(&host.wasm_stats()),
            HttpLimits::default(),
            stopped(shutdown.clone()),
        )));
    }
    let factory: Arc<dyn BotFactory> = Arc::new(LadderFactory::new(
        store.clone(),
        host.clone(),
        config.allow_private_endpoints,
    ));
    let models = host.gateway().names();
    tracing::info!(
        workers,
        backend = store.backend(),
        replays = replays.description(),
        models = %if models.is_empty() { "none".to_owned() } else { models.join(", ") },
        inference = inference_url.as_deref().unwrap_or("off"),
        metrics = %metrics_address.map_or_else(|| "off".to_owned(), |address| address.to_string()),
        public_key = %duel_replays::public_key_text(&config.signing_key.verifying_key()),
        "ladder worker started"
    );
    let mut worker_config =
        WorkerConfig::new(host, replays, config.signing_key).with_lease(config.lease_ms);
    worker_config.metrics = Some(metrics);
    tasks.extend(worker::spawn_pool(
        &store,
        &factory,
        &worker_config,
        workers,
        &shutdown,
    ));
    for task in tasks {
        let _ = task.await;
    }
    store.close().await;
    Ok(())
}

/// Serves the metered gateway (`duel.v1.Inference` and its OpenAI-compatible
/// face) for a `ladder worker` process's endpoint bots until `shutdown`.
async fn serve_inference(
    address: SocketAddr,
    public_url: Option<String>,
    limits: GrpcLimits,
    shutdown: watch::Receiver<bool>,
) -> Result<InferenceLink> {
    let (listener, local) = bind(address, "Inference").await?;
    let credentials = Credentials::new();
    tokio::spawn(duel_referee::grpc::serve_inference_within(
        listener,
        credentials.clone(),
        limits,
        stopped(shutdown),
    ));
    Ok(InferenceLink {
        url: public_url.unwrap_or_else(|| format!("http://{local}")),
        credentials,
    })
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
    let mut fits: HashMap<WeightClass, FitSchedule> = HashMap::new();
    while !*shutdown.borrow() {
        // Between seasons there is nothing to pair; the queue waits.
        let season_running = match store.reads().active_season().await {
            Ok(season) => season.is_some(),
            Err(error) => {
                tracing::error!(%error, "reading the running season");
                false
            }
        };
        // Whether anything settled since each class's last fit.
        let settled_ms = if season_running {
            store.latest_settlement_ms().await.unwrap_or_else(|error| {
                tracing::error!(%error, "reading the latest settlement");
                None
            })
        } else {
            None
        };
        for class in WeightClass::ALL.into_iter().filter(|_| season_running) {
            match crate::wave::run_wave_paced(&store, class, match_interval_ms).await {
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
                    tracing::error!(
                        error = %error.line(),
                        class = class.name(),
                        "pairing wave failed"
                    );
                }
            }
            let schedule = fits.entry(class).or_default();
            if schedule.due(settled_ms) {
                let took = fit_season(&store, class, &metrics).await;
                schedule.done(settled_ms, took);
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = shutdown.changed() => {}
        }
    }
}

/// When a class's standings are fitted again (docs/RULES.md, "Standings:
/// one fit of the season"): once something settled since the last fit (or
/// the process started), at most every [`SEASON_FIT_MIN_INTERVAL`] and no
/// sooner than [`SEASON_FIT_SPACING_FACTOR`] times the last fit's duration.
#[derive(Debug, Default)]
struct FitSchedule {
    /// The latest settlement when the class was last fitted.
    fitted_through_ms: Option<Option<i64>>,
    not_before: Option<std::time::Instant>,
}

impl FitSchedule {
    fn due(&self, settled_ms: Option<i64>) -> bool {
        self.fitted_through_ms != Some(settled_ms)
            && self
                .not_before
                .is_none_or(|at| std::time::Instant::now() >= at)
    }

    fn done(&mut self, settled_ms: Option<i64>, took: Duration) {
        self.fitted_through_ms = Some(settled_ms);
        self.not_before = Some(
            std::time::Instant::now()
                + SEASON_FIT_MIN_INTERVAL.max(took.saturating_mul(SEASON_FIT_SPACING_FACTOR)),
        );
    }
}

/// Re-fits the class's standings from every rated game of the season;
/// returns how long it took.
async fn fit_season(store: &Store, class: WeightClass, metrics: &LadderMetrics) -> Duration {
    let started = std::time::Instant::now();
    match crate::fit::fit_season(store, class).await {
        Ok(report) => tracing::debug!(
            class = class.name(),
            bots = report.bots,
            games = report.games,
            written = report.written,
            stale = report.stale,
            locked = report.locked,
            fit_ms = started.elapsed().as_millis() as u64,
            "season fit"
        ),
        Err(error) => {
            metrics.error(&error);
            tracing::error!(error = %error.line(), class = class.name(), "season fit failed");
        }
    }
    started.elapsed()
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
