//! `ladder serve`: the gRPC API, in-process workers and the matchmaking wave
//! timer over one database, stopped together by one shutdown signal.
//! Architecture invariant: the server owns no state of its own; everything lives in
//! the store, so any number of `ladder worker` processes may share the database.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use duel_rules::WeightClass;
use tokio::sync::watch;

use crate::error::{LadderError, Result};
use crate::grpc::LadderService;
use crate::ladder::Ladder;
use crate::limits::MAX_GRPC_MESSAGE_BYTES;
use crate::store::Store;
use crate::worker::{self, BotFactory, BuiltinFactory, WorkerConfig};

/// What `ladder serve` runs.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    pub db_url: String,
    pub listen: std::net::SocketAddr,
    pub replays_dir: PathBuf,
    /// In-process workers; 0 leaves all matches to `ladder worker` processes.
    pub workers: usize,
    pub wave_interval: Duration,
    /// Accept endpoint bots on loopback and private addresses.
    pub allow_private_endpoints: bool,
}

/// Runs until `shutdown` turns true: then stops accepting calls, lets the workers
/// finish or abandon their current match (its lease makes it re-run) and returns.
/// `bound` receives the address actually listened on (port 0 picks one).
pub async fn serve(
    config: ServeConfig,
    shutdown: watch::Receiver<bool>,
    bound: Option<tokio::sync::oneshot::Sender<std::net::SocketAddr>>,
) -> Result<()> {
    let store = Store::connect(&config.db_url).await?;
    std::fs::create_dir_all(&config.replays_dir).map_err(|error| {
        LadderError::Io(format!(
            "cannot create the replays directory {}: {error}",
            config.replays_dir.display()
        ))
    })?;
    let ladder = Arc::new(Ladder::new(store.clone(), config.allow_private_endpoints));
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|error| LadderError::Io(format!("cannot listen on {}: {error}", config.listen)))?;
    let local = listener
        .local_addr()
        .map_err(|error| LadderError::Io(format!("listening socket: {error}")))?;
    tracing::info!(address = %local, backend = store.backend(), "ladder serving");
    if let Some(bound) = bound {
        let _ = bound.send(local);
    }

    let mut tasks = Vec::new();
    let factory: Arc<dyn BotFactory> = Arc::new(BuiltinFactory);
    for _ in 0..config.workers {
        tasks.push(tokio::spawn(worker::run(
            store.clone(),
            Arc::clone(&factory),
            WorkerConfig::new(config.replays_dir.clone()),
            shutdown.clone(),
        )));
    }
    tasks.push(tokio::spawn(wave_timer(
        store.clone(),
        config.wave_interval,
        shutdown.clone(),
    )));

    let (health, health_service) = tonic_health::server::health_reporter();
    health
        .set_serving::<duel_proto::v1::ladder_server::LadderServer<LadderService>>()
        .await;
    let mut stop = shutdown.clone();
    let served = tonic::transport::Server::builder()
        .add_service(health_service)
        .add_service(
            LadderService::new(ladder)
                .into_server()
                .max_decoding_message_size(MAX_GRPC_MESSAGE_BYTES)
                .max_encoding_message_size(MAX_GRPC_MESSAGE_BYTES),
        )
        .serve_with_incoming_shutdown(
            tokio_stream::wrappers::TcpListenerStream::new(listener),
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

/// Runs one pairing wave per class every `interval`.
async fn wave_timer(store: Store, interval: Duration, mut shutdown: watch::Receiver<bool>) {
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
            match store.run_wave(class).await {
                Ok(report) => tracing::debug!(?report, class = class.name(), "wave"),
                Err(error) => tracing::error!(%error, class = class.name(), "pairing wave failed"),
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = shutdown.changed() => {}
        }
    }
}

/// Turns true on Ctrl-C or SIGTERM.
pub fn shutdown_on_signals() -> watch::Receiver<bool> {
    let (sender, receiver) = watch::channel(false);
    tokio::spawn(async move {
        wait_for_signal().await;
        tracing::info!("shutting down");
        let _ = sender.send(true);
    });
    receiver
}

#[cfg(unix)]
async fn wait_for_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut terminate) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = terminate.recv() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

#[cfg(not(unix))]
async fn wait_for_signal() {
    let _ = tokio::signal::ctrl_c().await;
}
