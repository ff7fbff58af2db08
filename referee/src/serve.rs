//! `referee serve`: logging set-up, the listener, signals, then the library's
//! server.

use std::time::Duration;

use anyhow::{Context, Result};
use duel_referee::grpc::{OPERATOR_TOKEN_ENV, ServeConfig};
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
    let config = ServeConfig {
        max_concurrent_matches: usize::try_from(args.max_matches)
            .context("--max-matches too large")?,
        gateway: gateway(&args.model)?,
        operator_token,
        public_url: args.public_url,
        replay_dir: args.replay_dir,
        shutdown_grace: Duration::from_secs(args.shutdown_grace),
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
        duel_referee::grpc::serve_with_metrics(
            listener,
            metrics_listener,
            config,
            shutdown_signal(),
        )
        .await?;
        anyhow::Ok(())
    })?;
    Ok(Outcome::Done)
}
