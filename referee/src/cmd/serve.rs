//! `referee serve`: logging set-up, the listeners, the replay store and
//! signing key when publishing, signals, then the library's server.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use duel_referee::grpc::{Listeners, OPERATOR_TOKEN_ENV, Publishing, ServeConfig};
use duel_referee::publish::LiveFeeds;
use duel_replays::store::ReplayStore;

use super::{Outcome, host_config, init_logging};
use crate::cli::ServeArgs;
use duel_plumbing::Shutdown;

pub fn run(args: ServeArgs) -> Result<Outcome> {
    init_logging(args.log_json, "info");
    let shutdown = Shutdown::install()?;
    let operator_token = duel_referee::env::secret(OPERATOR_TOKEN_ENV);
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
            signing_key: Arc::new(super::replay::signing_key(&args.key)?),
        })
    } else {
        None
    };
    let config = ServeConfig {
        max_concurrent_matches: usize::try_from(args.max_matches)
            .context("--max-matches too large")?,
        host: {
            let mut host = host_config(&args.model)?;
            host.endpoints.addresses =
                duel_referee::address_policy::AddressPolicy::allowing_private(
                    args.allow_private_endpoints,
                );
            host
        },
        operator_token,
        public_url: args.public_url,
        replay_dir: args.replay_dir,
        shutdown_grace: Duration::from_secs(args.shutdown_grace),
        publishing,
        grpc_limits: args.grpc_limits.limits(),
        http_limits: args.http_limits.limits(),
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
            async move {
                shutdown.wait().await;
                tracing::info!("ctrl-c or SIGTERM received");
            },
        )
        .await?;
        anyhow::Ok(())
    })?;
    Ok(Outcome::Done)
}
