//! `referee serve`: logging set-up, the listeners, the replay store and
//! signing key when publishing, signals, then the library's server.

use std::time::Duration;

use anyhow::{Context, Result};
use duel_referee::grpc::{Listeners, OPERATOR_TOKEN_ENV, Publishing, ServeConfig};
use duel_referee::publish::LiveFeeds;
use duel_replays::store::ReplayStore;
use tracing_subscriber::EnvFilter;

use crate::cli::ServeArgs;
use crate::commands::{Outcome, gateway};

fn init_logging(json: bool) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    // A second initialisation (tests) is harmless; ignore it.
    let _ = if json {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
}

/// Resolves on ctrl-c or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => tracing::info!("ctrl-c received"),
        () = terminate => tracing::info!("SIGTERM received"),
    }
}

pub fn serve(args: ServeArgs) -> Result<Outcome> {
    init_logging(args.log_json);
    let operator_token = std::env::var(OPERATOR_TOKEN_ENV)
        .ok()
        .filter(|token| !token.trim().is_empty());
    if let Some(dir) = &args.replay_dir
        && !dir.is_dir()
    {
        anyhow::bail!("--replay-dir {}: not a folder", dir.display());
    }
    // With --http but no --store, replays go to a temporary folder kept until
    // the server stops.
    let mut _temporary_store = None;
    let publishing = if args.http.is_some() || args.store.is_some() {
        let store = match &args.store {
            Some(url) => ReplayStore::open(url)?,
            None => {
                let folder = tempfile::Builder::new()
                    .prefix("duel-replays-")
                    .tempdir()
                    .context("cannot make a temporary replay store")?;
                let store = ReplayStore::open(&folder.path().display().to_string())?;
                tracing::warn!(
                    store = store.description(),
                    "no --store: replays are kept in a temporary folder until the server stops"
                );
                _temporary_store = Some(folder);
                store
            }
        };
        Some(Publishing {
            live: LiveFeeds::new(),
            store,
            signing_key: crate::replay_commands::signing_key(&args.key)?,
        })
    } else {
        None
    };
    let config = ServeConfig {
        max_concurrent_matches: usize::try_from(args.max_matches)
            .context("--max-matches too large")?,
        gateway: gateway(&args.model)?,
        operator_token,
        public_url: args.public_url,
        replay_dir: args.replay_dir,
        shutdown_grace: Duration::from_secs(args.shutdown_grace),
        publishing,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .with_context(|| format!("cannot listen on {}", args.listen))?;
        let metrics_listener = match args.metrics_listen {
            Some(address) => Some(
                tokio::net::TcpListener::bind(address)
                    .await
                    .with_context(|| format!("cannot listen on {address} for metrics"))?,
            ),
            None => None,
        };
        let http_listener = match args.http {
            Some(address) => Some(
                tokio::net::TcpListener::bind(address)
                    .await
                    .with_context(|| format!("cannot listen on {address} for --http"))?,
            ),
            None => None,
        };
        duel_referee::grpc::serve_listeners(
            Listeners {
                grpc: listener,
                metrics: metrics_listener,
                http: http_listener,
            },
            config,
            shutdown_signal(),
        )
        .await?;
        anyhow::Ok(())
    })?;
    Ok(Outcome::Done)
}
